import { Body, Controller, Get, HttpCode, Ip, Param, Post } from '@nestjs/common';
import { ApiBody, ApiParam, ApiTags } from '@nestjs/swagger';
import { Public } from '../common/auth/decorators';
import { ApiOperationDoc } from '../common/openapi/api-docs';
import { CliSessionsService } from './cli-sessions.service';
import { CliSessionStatusView, CliSessionView, StartCliSessionDto } from './dto/cli-session.dto';

@ApiTags('Auth')
@Controller('api/auth/cli_session')
export class CliSessionsController {
  constructor(private readonly sessions: CliSessionsService) {}

  @Post()
  @Public()
  @ApiOperationDoc({
    summary: 'Start a browser sign-in for a command-line tool',
    description:
      "NervesHub's CLI sign-in. The tool shows `confirmation_code` and sends the user to `url`, where they type " +
      'that code, sign in with email and password and approve; meanwhile it polls ' +
      '`GET /api/auth/cli_session/{token}`. A session expires after 10 minutes. Rate limited per address.',
    data: CliSessionView,
    isPublic: true,
    errors: [400, 413, 422, 429],
  })
  @ApiBody({ type: StartCliSessionDto, required: false })
  @HttpCode(200)
  start(@Body() body: StartCliSessionDto, @Ip() ip: string) {
    return this.sessions.start(body ?? {}, ip);
  }

  @Get(':token')
  @Public()
  @ApiParam({ name: 'token', description: 'The session token `POST /api/auth/cli_session` answered' })
  @ApiOperationDoc({
    summary: 'Poll a command-line sign-in',
    description:
      '`waiting` until the user approves, then `ready` with a new API token (`rendering: nerveshub`), answered ' +
      'once: afterwards, and for an unknown, expired or denied session, 404.',
    data: CliSessionStatusView,
    isPublic: true,
    errors: [404],
  })
  check(@Param('token') token: string) {
    return this.sessions.check(token);
  }
}
