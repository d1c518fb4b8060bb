import { ApiProperty } from '@nestjs/swagger';
import { StringField } from '../../common/validation/fields';

const CODE_DOC = {
  description:
    'A current 6-digit code from the authenticator app, or one of the backup codes (`xxxxx-xxxxx`, once each)',
  example: '492039',
};

/** The second factor of a password sign-in (API login, browser session, CLI page). */
export const SignInCodeField = () =>
  StringField({
    max: 64,
    nullable: true,
    doc: {
      description:
        'For an account with two-factor sign-in: a current 6-digit code from its authenticator app, or one of its ' +
        'backup codes. Missing or wrong (once the password is right): 422 naming `code`.',
      example: '492039',
    },
  });

export class TwoFactorCodeDto {
  @StringField({ required: true, max: 64, doc: CODE_DOC })
  code: string;
}

export class TwoFactorStatusView {
  @ApiProperty({ description: 'Whether password sign-ins need a second factor' }) enabled: boolean;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, example: '2026-11-29T08:00:00.000Z' })
  enabled_at: string | null;
  @ApiProperty({ description: 'Unused backup codes', example: 10 }) backup_codes_left: number;
}

export class TwoFactorEnrolmentView {
  @ApiProperty({ description: 'The shared secret (base32), for typing into an app instead of scanning' })
  secret: string;
  @ApiProperty({ example: 'otpauth://totp/fleethub:ada%40example.com?issuer=fleethub&secret=...' })
  otpauth_uri: string;
  @ApiProperty({ description: 'The `otpauth_uri` as a QR code: an SVG document made by the server' })
  qr_code_svg: string;
}

export class BackupCodesView {
  @ApiProperty({
    type: [String],
    description: 'Ten single-use backup codes, shown only now',
    example: ['k7mpq-xa2zr'],
  })
  backup_codes: string[];
}

export class TwoFactorConfirmedView extends BackupCodesView {
  @ApiProperty({ example: true }) enabled: boolean;
  @ApiProperty({ type: String, format: 'date-time' }) enabled_at: string;
}
