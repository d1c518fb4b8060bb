import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { Request, Response } from 'express';

const COOKIE = 'fleethub_csrf';
const TOKEN = /^[A-Za-z0-9_-]{43}$/;

/** The double-submit token of a server-rendered form: the cookie's value, which the form repeats. */
export interface FormCsrf {
  /** What the form's hidden `_csrf_token` field carries. */
  token: string;
  /** True when the submitted field repeats the cookie and the request did not come from another site. */
  passed: boolean;
}

function cookieToken(header: string | undefined): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const [name, value] = part.trim().split('=', 2);
    if (name === COOKIE && value !== undefined && TOKEN.test(value)) return value;
  }
  return undefined;
}

/** False when the browser says the request comes from another site (`Sec-Fetch-Site`, `Origin`). */
export function sameSite(req: Request): boolean {
  if (req.headers['sec-fetch-site'] === 'cross-site') return false;
  const origin = req.headers.origin;
  // The pages' referrer policy (no-referrer, helmet's) makes browsers send `Origin: null` on their own forms.
  if (origin === undefined || origin === 'null') return true;
  try {
    return new URL(origin).host === req.headers.host;
  } catch {
    return false;
  }
}

/**
 * CSRF protection without server-side sessions (double submit): a random token in a SameSite=Strict, HttpOnly
 * cookie, set when absent, which a POSTed form must repeat in `_csrf_token`; a cross-site Origin or
 * Sec-Fetch-Site fails too.
 */
export const CurrentFormCsrf = createParamDecorator((_: unknown, ctx: ExecutionContext): FormCsrf => {
  const req = ctx.switchToHttp().getRequest<Request>();
  const existing = cookieToken(req.headers.cookie);
  const token = existing ?? randomBytes(32).toString('base64url');
  if (!existing) {
    const secure = req.secure ? '; Secure' : '';
    ctx
      .switchToHttp()
      .getResponse<Response>()
      .append('Set-Cookie', `${COOKIE}=${token}; Path=/; HttpOnly; SameSite=Strict${secure}`);
  }
  let passed = false;
  if (existing && req.method === 'POST') {
    const body = req.body as Record<string, unknown> | undefined;
    const submitted = typeof body?._csrf_token === 'string' ? body._csrf_token : '';
    passed =
      submitted.length === existing.length &&
      timingSafeEqual(Buffer.from(submitted), Buffer.from(existing)) &&
      sameSite(req);
  }
  return { token, passed };
});
