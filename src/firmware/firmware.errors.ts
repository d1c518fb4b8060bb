import { DomainError } from '../common/errors/domain-error';
import { ErrorCode } from '../common/errors/error-codes';
import type { FirmwareTool } from './formats/detect-format';

/** Messages of the firmware feature. */

/** 409 on delete: the pending_updates foreign key holds the firmware. */
export const FIRMWARE_IN_USE = 'a pending device update still targets this firmware';

/** 422 on delete (field `deployment_releases`, NervesHub's message): a deployment release holds the firmware. */
export const FIRMWARE_IN_RELEASE = 'Firmware has associated deployment releases';

/** 422 on upload: the file's tool is not in the product's allowed_update_tools. */
export function toolNotAllowed(productName: string, tool: FirmwareTool): string {
  return (
    `The product "${productName}" does not accept ${tool} firmware. A member with the manage role can ` +
    `enable it in the product's settings (allowed_update_tools).`
  );
}

/** 422 on upload: a signed image, and the organization has no key to check it with. */
export const NO_SIGNING_KEYS = 'is signed, but the organization has no signing keys yet';

/** 400 on upload: busboy cannot parse the multipart body (or its headers). */
export const MALFORMED_MULTIPART = 'malformed multipart body';

/** meta.conf syntax error: a string without its closing quote. */
export const UNTERMINATED_STRING = 'unterminated string';

/** 503 on upload: the file passed every check but the store (the bucket) did not take it; `cause` is logged. */
export function storageUnavailable(cause: unknown): DomainError {
  const error = new DomainError(
    ErrorCode.SERVICE_UNAVAILABLE,
    'firmware storage unavailable, try again shortly',
    {},
    { 'Retry-After': '5' },
  );
  error.cause = cause;
  return error;
}
