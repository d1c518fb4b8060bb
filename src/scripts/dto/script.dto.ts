import { ApiProperty } from '@nestjs/swagger';
import { StringField, TagsField } from '../../common/validation/fields';

export const MAX_SCRIPT_BYTES = 256 * 1024;

export class CreateScriptDto {
  @StringField({ required: true, max: 255, doc: { example: 'reboot' } })
  name: string;

  @StringField({
    required: true,
    trim: false,
    maxBytes: MAX_SCRIPT_BYTES,
    doc: { example: 'Nerves.Runtime.reboot()', description: 'Script source, up to 256 KiB' },
  })
  text: string;

  @TagsField()
  tags?: string | string[] | null;
}

/** Every field optional; the ones sent are validated as on create. */
export class UpdateScriptDto {
  @StringField({ nonBlank: true, max: 255, doc: { example: 'reboot' } })
  name?: string;

  @StringField({
    nonBlank: true,
    trim: false,
    maxBytes: MAX_SCRIPT_BYTES,
    doc: { example: 'Nerves.Runtime.reboot()' },
  })
  text?: string;

  @TagsField()
  tags?: string | string[] | null;
}

export class ScriptAuthorView {
  @ApiProperty({ example: '1' }) id: string;
  @ApiProperty({ example: 'Ada Lovelace' }) name: string;
  @ApiProperty({ example: 'ada@example.com' }) email: string;
}

export class ScriptView {
  @ApiProperty({ example: '42' }) id: string;
  @ApiProperty({ example: 'reboot' }) name: string;
  @ApiProperty({ example: 'maintenance,lab', description: 'Comma-separated, no spaces around commas' })
  tags: string;
  @ApiProperty({ example: 'Nerves.Runtime.reboot()' }) text: string;
  @ApiProperty({ type: ScriptAuthorView, nullable: true }) created_by: ScriptAuthorView | null;
  @ApiProperty({ example: '2026-11-22T03:04:05.123Z' }) inserted_at: string;
  @ApiProperty({ example: '2026-11-22T03:04:05.123Z' }) updated_at: string;
}
