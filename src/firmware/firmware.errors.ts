import type { FirmwareTool } from './formats/detect-format';

/** Messages of the firmware feature. */

/** 409 on delete: the pending_updates foreign key holds the firmware. */
export const FIRMWARE_IN_USE = 'a pending device update still targets this firmware';

/** 422 on upload: the file's tool is not in the product's allowed_update_tools. */
export function toolNotAllowed(productName: string, tool: FirmwareTool): string {
  return (
    `The product "${productName}" does not accept ${tool} firmware. A member with the manage role can ` +
    `enable it in the product's settings (allowed_update_tools).`
  );
}
