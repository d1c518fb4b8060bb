import { ApiProperty } from '@nestjs/swagger';
import { StringField } from '../../common/validation/fields';

export class CreateSigningKeyDto {
  @StringField({ required: true, max: 255, doc: { example: 'release-2026' } })
  name: string;

  @StringField({
    required: true,
    max: 64,
    doc: {
      example: 'V5mDJzOyTzPMDtj4g7Lx3mJyqcqn4vXI7fBTNqTvgS0=',
      description: 'Base64 of the raw 32-byte ed25519 public key, as `fwup -g` writes it (fwup-key.pub)',
    },
  })
  key: string;
}

export class SigningKeyView {
  @ApiProperty({ example: 'release-2026' }) name: string;
  @ApiProperty({ example: 'V5mDJzOyTzPMDtj4g7Lx3mJyqcqn4vXI7fBTNqTvgS0=' }) key: string;
  @ApiProperty({ example: '2026-11-22T03:04:05.123Z' }) inserted_at: string;
}
