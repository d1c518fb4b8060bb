import { ApiProperty } from '@nestjs/swagger';
import { CustomField, StringCastBooleanField, StringField } from '../../common/validation/fields';
import { UPDATE_TOOLS, type UpdateTool } from '../product.entity';

export class CreateProductDto {
  /** `{"product": {"name": ...}}` is read as `{"name": ...}`: both forms are accepted. */
  static readonly unwrapKey = 'product';

  @StringField({
    required: true,
    max: 255,
    doc: { example: 'gateway', description: 'Unique within the organization' },
  })
  name: string;
}

/** Documents the wrapped form of the create body (the spec's), the top-level form is accepted too. */
export class CreateProductWrappedDto {
  @ApiProperty({ type: CreateProductDto }) product: CreateProductDto;
}

export function checkUpdateTools(value: unknown): string | null {
  if (value === undefined) return null;
  if (!Array.isArray(value) || value.some((tool) => typeof tool !== 'string')) {
    return `must be an array of strings from: ${UPDATE_TOOLS.join(', ')}`;
  }
  const unknown = (value as string[]).filter((tool) => !(UPDATE_TOOLS as readonly string[]).includes(tool));
  if (unknown.length > 0) return `unknown update tool(s): ${unknown.join(', ')}`;
  if (new Set(value).size !== value.length) return 'must not list a tool twice';
  return null;
}

export class UpdateProductDto {
  /** NervesHub's envelope `{"product": {...}}` is read as its content (what NervesHub's CLI sends). */
  static readonly unwrapKey = 'product';

  /** Any other field, `name` included (beside the envelope too), is refused with a message naming it. */
  static readonly unknownFieldMessage = (field: string) =>
    field === 'name' ? 'cannot be changed: a product cannot be renamed' : 'is not a product setting';

  @StringCastBooleanField({ example: false })
  allow_unsigned_atomvm_firmware?: boolean;

  @StringCastBooleanField({ example: false })
  allow_unsigned_esp_idf_firmware?: boolean;

  @CustomField('updateTools', checkUpdateTools)
  @ApiProperty({ enum: UPDATE_TOOLS, isArray: true, required: false, example: ['fwup'] })
  allowed_update_tools?: UpdateTool[];

  @StringCastBooleanField({ example: true })
  require_unique_firmware_version?: boolean;
}

/** Documents NervesHub's envelope of the update body; the top-level form is accepted too. */
export class UpdateProductWrappedDto {
  @ApiProperty({ type: UpdateProductDto }) product: UpdateProductDto;
}

export class ProductView {
  @ApiProperty({ example: 'gateway' }) name: string;
  @ApiProperty({ example: false }) allow_unsigned_atomvm_firmware: boolean;
  @ApiProperty({ example: false }) allow_unsigned_esp_idf_firmware: boolean;
  @ApiProperty({ enum: UPDATE_TOOLS, isArray: true, example: ['fwup'] }) allowed_update_tools: UpdateTool[];
  @ApiProperty({ example: true }) require_unique_firmware_version: boolean;
}
