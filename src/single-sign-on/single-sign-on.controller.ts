import { Controller, Get, Inject, Req, Res } from '@nestjs/common';
import { ApiExcludeController, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { Public } from '../common/auth/decorators';
import { sessionCookie } from '../browser-sessions/session-cookie';
import { sessionRequest } from '../browser-sessions/session-request';
import { alertBox, escapeHtml, htmlPage } from '../common/http/html-page';
import { ApiOperationDoc } from '../common/openapi/api-docs';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { SingleSignOnStatusView } from './dto/single-sign-on.dto';
import { SingleSignOnError, type SingleSignOnFailure, SingleSignOnService } from './single-sign-on.service';

/** The browser keeps the sign-in's `state` here, sent back on the provider's redirect (SameSite=Lax for that). */
const STATE_COOKIE = 'fleethub_oidc_state';

const FAILURES: Readonly<Record<SingleSignOnFailure, [status: number, message: string]>> = {
  off: [404, 'Single sign-on is not configured on this server.'],
  state: [400, 'This sign-in has expired, was already used, or was started in another browser. Start again.'],
  provider_refused: [403, 'The identity provider did not sign you in.'],
  unverified_answer: [400, "The identity provider's answer could not be verified, so nobody was signed in."],
  unverified_email: [
    403,
    'The identity provider has not verified your email address, so it cannot sign you in here.',
  ],
  no_account: [403, 'No fleethub account uses your email address. Ask an administrator to invite you.'],
  unreachable: [503, 'The identity provider cannot be reached now. Try again in a moment.'],
};

function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const [key, ...value] = part.trim().split('=');
    if (key === name) return value.join('=');
  }
  return undefined;
}

/** Whether single sign-on is on (the API); the sign-in itself is two pages (SingleSignOnPageController). */
@ApiTags('Browser Sessions')
@Controller()
export class SingleSignOnController {
  constructor(private readonly sso: SingleSignOnService) {}

  @Get('api/auth/single_sign_on')
  @Public()
  @ApiOperationDoc({
    summary: 'Whether single sign-on (OpenID Connect) is on, and where a browser starts it',
    description:
      'Extension of 2.0.0. A browser opens `start_url` (a page, not an API call): the identity provider signs it ' +
      'in and sends it back to `/auth/oidc/callback`, which opens a browser session (the session cookie, as ' +
      '`POST /api/session` sets it) and goes to the console; a failure is a page that says why.',
    data: SingleSignOnStatusView,
    isPublic: true,
  })
  status() {
    return this.sso.status();
  }
}

/** The sign-in's two pages: start (to the provider) and the provider's callback (pages, not API: not in OpenAPI). */
@ApiExcludeController()
@Controller()
export class SingleSignOnPageController {
  private readonly secure: boolean;

  constructor(
    private readonly sso: SingleSignOnService,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.secure = config.publicUrl.startsWith('https:');
  }

  @Get('auth/oidc/start')
  @Public()
  async start(@Req() req: Request, @Res() res: Response): Promise<void> {
    try {
      const { url, state } = await this.sso.start();
      res.append(
        'Set-Cookie',
        `${STATE_COOKIE}=${state}; Path=/auth/oidc; HttpOnly; SameSite=Lax; Max-Age=600${this.secureFlag(req)}`,
      );
      res.set('Cache-Control', 'no-store').redirect(302, url);
    } catch (err) {
      this.failure(res, err);
    }
  }

  @Get('auth/oidc/callback')
  @Public()
  async callback(@Req() req: Request, @Res() res: Response): Promise<void> {
    const from = sessionRequest(req);
    res.append('Set-Cookie', `${STATE_COOKIE}=; Path=/auth/oidc; HttpOnly; SameSite=Lax; Max-Age=0`);
    try {
      const { secret } = await this.sso.callback({
        query: req.query,
        cookieState: cookieValue(req.headers.cookie, STATE_COOKIE),
        userAgent: from.userAgent,
        sourceAddress: from.sourceAddress,
      });
      res.append('Set-Cookie', sessionCookie(secret, this.secure || req.secure));
      res.set('Cache-Control', 'no-store').redirect(302, '/');
    } catch (err) {
      this.failure(res, err);
    }
  }

  private secureFlag(req: Request): string {
    return this.secure || req.secure ? '; Secure' : '';
  }

  private failure(res: Response, err: unknown): void {
    if (!(err instanceof SingleSignOnError)) throw err;
    const [status, message] = FAILURES[err.reason];
    const page = htmlPage(
      status,
      'Single sign-on failed',
      alertBox(message) +
        `<p><a href="/">Back to sign-in</a></p>` +
        (err.reason === 'no_account' ? `<p class="hint">${escapeHtml(err.message)}</p>` : ''),
    );
    res.status(page.status).set('Cache-Control', 'no-store').type('html').send(page.html);
  }
}
