import { Body, Controller, Get, HttpCode, Post } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { Actor } from '../common/auth/actor';
import { CurrentActor, Route } from '../common/auth/decorators';
import { ApiOperationDoc } from '../common/openapi/api-docs';
import {
  BackupCodesView,
  TwoFactorCodeDto,
  TwoFactorConfirmedView,
  TwoFactorEnrolmentView,
  TwoFactorStatusView,
} from './dto/two-factor.dto';
import { TwoFactorService } from './two-factor.service';

const WRONG_CODE =
  'A wrong, reused or malformed code is 422 naming `code` (audited in each of the caller’s organizations); too ' +
  'many wrong codes in a minute are 429.';

@ApiTags('Auth')
@Controller('api/users/me/two_factor')
export class TwoFactorController {
  constructor(private readonly twoFactor: TwoFactorService) {}

  @Get()
  @Route('two_factor.show')
  @ApiOperationDoc({
    summary: "The caller's two-factor sign-in",
    description:
      'Extension of 2.0.0. Whether password sign-ins need a code, and how many backup codes are left.',
    data: TwoFactorStatusView,
  })
  show(@CurrentActor() actor: Actor) {
    return this.twoFactor.status(actor);
  }

  @Post()
  @Route('two_factor.enrol')
  @HttpCode(200)
  @ApiOperationDoc({
    summary: 'Start enrolling in two-factor sign-in (TOTP)',
    description:
      'Extension of 2.0.0. A new secret, its `otpauth://` URI and that URI as a QR code (SVG, made by the server). ' +
      'Nothing changes at sign-in until `POST .../two_factor/confirm` with a code from the app; starting again ' +
      'replaces a pending enrolment. 409 while two-factor sign-in is on.',
    data: TwoFactorEnrolmentView,
    errors: [409],
  })
  enrol(@CurrentActor() actor: Actor) {
    return this.twoFactor.enrol(actor);
  }

  @Post('confirm')
  @Route('two_factor.confirm')
  @HttpCode(200)
  @ApiOperationDoc({
    summary: 'Confirm the enrolment with a first code: two-factor sign-in is on',
    description: `Extension of 2.0.0. Answers the ten backup codes, shown only now. 409 without a pending enrolment. ${WRONG_CODE}`,
    data: TwoFactorConfirmedView,
    errors: [400, 409, 413, 422, 429],
  })
  confirm(@CurrentActor() actor: Actor, @Body() body: TwoFactorCodeDto) {
    return this.twoFactor.confirm(actor, body.code);
  }

  @Post('disable')
  @Route('two_factor.disable')
  @HttpCode(204)
  @ApiOperationDoc({
    summary: 'Turn two-factor sign-in off',
    description: `Extension of 2.0.0. Needs a current code or a backup code. 409 when it is not on. ${WRONG_CODE}`,
    status: 204,
    errors: [400, 409, 413, 422, 429],
  })
  disable(@CurrentActor() actor: Actor, @Body() body: TwoFactorCodeDto) {
    return this.twoFactor.disable(actor, body.code);
  }

  @Post('backup_codes')
  @Route('two_factor.backup_codes')
  @HttpCode(200)
  @ApiOperationDoc({
    summary: 'Replace the backup codes',
    description: `Extension of 2.0.0. Ten new codes for a current code (or a backup code); the old ones stop working. 409 when two-factor sign-in is not on. ${WRONG_CODE}`,
    data: BackupCodesView,
    errors: [400, 409, 413, 422, 429],
  })
  regenerateBackupCodes(@CurrentActor() actor: Actor, @Body() body: TwoFactorCodeDto) {
    return this.twoFactor.regenerateBackupCodes(actor, body.code);
  }
}
