import { StringField } from '../../common/validation/fields';

/** NervesHub's `POST .../devices/{identifier}/move` body. */
export class MoveDeviceDto {
  @StringField({
    required: true,
    max: 255,
    doc: { description: 'The organization to move the device to (the caller manages it)', example: 'acme' },
  })
  new_org_name: string;

  @StringField({
    required: true,
    max: 255,
    doc: { description: "A product of that organization, not the device's current one", example: 'gateway' },
  })
  new_product_name: string;
}
