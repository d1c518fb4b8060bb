import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import { sameSite } from '../common/http/form-csrf';

export const SESSION_COOKIE = 'fleethub_session';
export const CSRF_HEADER = 'x-csrf-token';
const SECRET = /^[A-Za-z0-9_-]{43}$/;
const USER_AGENT_MAX = 255;
const ADDRESS_MAX = 64;
const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** What the browser-session code reads of a request. */
export interface SessionRequest {
  /** The session cookie's secret, when the request carries a well-formed one. */
  secret: string | undefined;
  method: string;
  /** The `X-CSRF-Token` header. */
  csrfToken: string | undefined;
  /** False when the browser says the request comes from another site (`Sec-Fetch-Site`, `Origin`). */
  sameSite: boolean;
  sourceAddress: string;
  userAgent: string | null;
}

function cookieSecret(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  for (const part of header.split(';')) {
    const [name, value] = part.trim().split('=', 2);
    if (name === SESSION_COOKIE && value !== undefined && SECRET.test(value)) return value;
  }
  return undefined;
}

export function sessionRequest(req: Request): SessionRequest {
  const csrf = req.headers[CSRF_HEADER];
  const userAgent = req.headers['user-agent'];
  return {
    secret: cookieSecret(req.headers.cookie),
    method: req.method,
    csrfToken: typeof csrf === 'string' ? csrf : undefined,
    sameSite: sameSite(req),
    sourceAddress: (req.ip ?? req.socket.remoteAddress ?? 'unknown').slice(0, ADDRESS_MAX),
    userAgent: userAgent ? userAgent.slice(0, USER_AGENT_MAX) : null,
  };
}

/** The request as the browser-session code reads it (cookie, CSRF header, origin, address, user agent). */
export const CurrentSessionRequest = createParamDecorator(
  (_: unknown, ctx: ExecutionContext): SessionRequest => sessionRequest(ctx.switchToHttp().getRequest()),
);

/** 32 random bytes: the cookie's value. */
export const newSessionSecret = () => randomBytes(32).toString('base64url');

export const hashSessionSecret = (secret: string) => createHash('sha256').update(secret).digest();

/**
 * The session's CSRF token, derived from its secret (docs/decisions.md, "Browser sessions"): nothing to store, and
 * the stored hash of the secret does not give it away.
 */
export const csrfTokenOf = (secret: string) =>
  createHmac('sha256', secret).update('fleethub csrf token').digest('base64url');

/** A read, or a change from this site that repeats the session's CSRF token. */
export function csrfPassed(request: SessionRequest, secret: string): boolean {
  if (READ_METHODS.has(request.method)) return true;
  if (!request.sameSite || request.csrfToken === undefined) return false;
  const given = Buffer.from(request.csrfToken);
  const expected = Buffer.from(csrfTokenOf(secret));
  return given.length === expected.length && timingSafeEqual(given, expected);
}
