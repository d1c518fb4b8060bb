import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { CustomField, EnumField, StringField, TagsField } from '../../common/validation/fields';
import { hasMoreCodePoints, isUnstorableText } from '../../common/values';
import { BULK_ACTIONS, type BulkAction } from '../device-bulk.query';
import { DEVICE_FILTERS } from '../device-list.query';

/** The most identifiers one bulk request may name (more devices: select them with `filters`). */
export const MAX_BULK_IDENTIFIERS = 1000;

function checkIdentifiers(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (!Array.isArray(value)) return 'must be an array of device identifiers';
  if (value.length === 0) return "can't be empty";
  if (value.length > MAX_BULK_IDENTIFIERS) return `should have at most ${MAX_BULK_IDENTIFIERS} identifiers`;
  for (const item of value as unknown[]) {
    if (typeof item !== 'string' || item === '') return 'must be an array of device identifiers';
    if (hasMoreCodePoints(item, 255)) return 'each identifier should be at most 255 character(s)';
    if (item.includes('\u0000') || isUnstorableText(item)) return 'must be valid Unicode text';
  }
  return null;
}

function checkFilters(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  return typeof value === 'object' && !Array.isArray(value)
    ? null
    : 'must be an object of the device list\'s filters, e.g. {"tags": "beta"}';
}

export class BulkDevicesDto {
  @EnumField(BULK_ACTIONS, {
    required: true,
    doc: {
      example: 'add_tags',
      description:
        '`add_tags` / `remove_tags` (`tags`), `move` (`new_org_name`, `new_product_name`), `upgrade` (`uuid`), ' +
        '`enable_updates`, `disable_updates`, `clear_penalty_box`',
    },
  })
  action: BulkAction;

  @CustomField('identifiers', checkIdentifiers)
  @ApiPropertyOptional({
    type: [String],
    maxItems: MAX_BULK_IDENTIFIERS,
    example: ['nerves-4f2a', 'nerves-9c1e'],
    description: `The devices, by identifier (1 to ${MAX_BULK_IDENTIFIERS}); identifiers of no device of the product are skipped. Give this or \`filters\`.`,
  })
  identifiers?: string[];

  @CustomField('filters', checkFilters)
  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: { oneOf: [{ type: 'string' }, { type: 'boolean' }, { type: 'number' }] },
    example: { tags: 'beta', connection: 'connected' },
    description:
      "Every device of the product matching these filters: the device list's `filters[...]` by name (" +
      DEVICE_FILTERS.map((name) => `\`${name}\``).join(', ') +
      '), with the same values and refusals (a 422 names `filters.<name>`). `{}`: every device of the product. ' +
      'Give this or `identifiers`.',
  })
  filters?: Record<string, unknown>;

  @TagsField({ description: '`add_tags`, `remove_tags`: comma-separated tags (an array of strings too)' })
  tags?: string | string[] | null;

  @StringField({
    max: 64,
    doc: { example: '2b9f7b4c-9a4e-5a4e-8f4e-1c2d3e4f5a6b', description: '`upgrade`: the firmware uuid' },
  })
  uuid?: string;

  @StringField({
    max: 255,
    doc: {
      example: 'acme',
      description: '`move`: the organization to move the devices to (the caller manages it)',
    },
  })
  new_org_name?: string;

  @StringField({
    max: 255,
    doc: { example: 'gateway', description: '`move`: a product of that organization, not this one' },
  })
  new_product_name?: string;
}

export class BulkDevicesResultView {
  @ApiProperty({ enum: BULK_ACTIONS, example: 'add_tags' }) action: BulkAction;
  @ApiProperty({ example: 1200, description: 'Devices of the product the request selected' })
  matched: number;
  @ApiProperty({
    example: 1150,
    description:
      'Devices the action changed (those it did not already describe: a tag they lacked, updates that were off, ' +
      '...); for `upgrade` and `move`, every selected device',
  })
  changed: number;
}
