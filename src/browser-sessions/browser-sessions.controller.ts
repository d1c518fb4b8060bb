import { Body, Controller, Delete, Get, HttpCode, Param, Post } from '@nestjs/common';
import { ApiCookieAuth, ApiParam, ApiTags } from '@nestjs/swagger';
import type { Actor } from '../common/auth/actor';
import { CurrentActor, Public, Route } from '../common/auth/decorators';
import { ApiOperationDoc } from '../common/openapi/api-docs';
import { BrowserSessionsService } from './browser-sessions.service';
import { BrowserSessionView, SessionView, SignInDto } from './dto/browser-session.dto';
import { SetsSessionCookie } from './session-cookie';
import { CurrentSessionRequest, type SessionRequest } from './session-request';

const COOKIE_ONLY =
  'Only the session cookie counts here (an `Authorization` header is ignored): without a live session, 401.';

/** The browser's own session: its cookie is the credential, checked by the service (hence @Public()). */
@ApiTags('Browser Sessions')
@Controller('api/session')
export class BrowserSessionsController {
  constructor(private readonly sessions: BrowserSessionsService) {}

  @Post()
  @Public()
  @ApiOperationDoc({
    summary: 'Sign in in a browser with email and password',
    description:
      'Extension of 2.0.0. Sets the cookie `fleethub_session` (`HttpOnly; SameSite=Strict; Path=/`, and ' +
      '`Secure` when the server is reached over https) and answers the CSRF token every change made with the ' +
      'cookie must send as `X-CSRF-Token`. The same credentials and rate limits as `POST /api/users/auth`: ' +
      'wrong credentials answer 401 whether or not the email exists. Refused (403) from another site.',
    status: 201,
    data: SessionView,
    isPublic: true,
    errors: [400, 401, 403, 413, 422, 429],
    headers: {
      'Set-Cookie': { description: 'fleethub_session=<secret>; Path=/; HttpOnly; SameSite=Strict' },
    },
  })
  @SetsSessionCookie()
  signIn(@Body() body: SignInDto, @CurrentSessionRequest() request: SessionRequest) {
    return this.sessions.signIn(body, request);
  }

  @Get()
  @Public()
  @ApiCookieAuth('session_cookie')
  @ApiOperationDoc({
    summary: "The browser's session: its user and CSRF token",
    description: `Extension of 2.0.0. What a reloaded page asks for its CSRF token. ${COOKIE_ONLY}`,
    data: SessionView,
    isPublic: true,
    errors: [401],
  })
  show(@CurrentSessionRequest() request: SessionRequest) {
    return this.sessions.show(request);
  }

  @Delete()
  @Public()
  @ApiCookieAuth('session_cookie')
  @ApiOperationDoc({
    summary: 'Sign out: end the browser session',
    description:
      'Extension of 2.0.0. Ends the session on the server (from the answer on, every instance refuses the ' +
      `cookie) and clears the cookie (\`Max-Age=0\`). Needs \`X-CSRF-Token\` (403 without). ${COOKIE_ONLY}`,
    status: 204,
    isPublic: true,
    errors: [401, 403],
    headers: {
      'Set-Cookie': { description: 'fleethub_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0' },
    },
  })
  @SetsSessionCookie()
  @HttpCode(204)
  signOut(@CurrentSessionRequest() request: SessionRequest) {
    return this.sessions.signOut(request);
  }
}

@ApiTags('Browser Sessions')
@Controller('api/users/me/sessions')
export class UserSessionsController {
  constructor(private readonly sessions: BrowserSessionsService) {}

  @Get()
  @Route('sessions.list')
  @ApiOperationDoc({
    summary: "List the caller's browser sessions",
    description:
      'Extension of 2.0.0. Live sessions only, most recently used first; `current` marks the one whose cookie ' +
      'made this request. Never the cookies themselves.',
    data: [BrowserSessionView],
  })
  list(@CurrentActor() actor: Actor) {
    return this.sessions.listForUser(actor);
  }

  @Delete(':id')
  @Route('sessions.end')
  @ApiParam({ name: 'id', description: 'Session id (a numeric string, from the list)' })
  @ApiOperationDoc({
    summary: "End one of the caller's browser sessions",
    description:
      'Extension of 2.0.0. From the answer on, every instance refuses its cookie (401). An unknown id, an ' +
      "ended session or another user's is a 404. A `read` token cannot end sessions (403).",
    status: 204,
  })
  @HttpCode(204)
  end(@CurrentActor() actor: Actor, @Param('id') id: string) {
    return this.sessions.endForUser(actor, id);
  }
}
