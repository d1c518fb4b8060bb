import { Injectable, Logger } from '@nestjs/common';
import { AuthService } from '../auth/auth.service';
import type { Actor } from '../common/auth/actor';
import { DomainError } from '../common/errors/domain-error';
import { parseBigId } from '../common/values';
import { BrowserSessionAuthenticator } from './browser-session-authenticator';
import {
  BrowserSessionsRepository,
  type ListedSessionRow,
  type SignInMethod,
} from './browser-sessions.repository';
import type { UserRecord } from '../users/user-record';
import type { BrowserSessionView, SessionView, SignInDto } from './dto/browser-session.dto';
import { WithSessionCookie } from './session-cookie';
import { csrfTokenOf, hashSessionSecret, newSessionSecret, type SessionRequest } from './session-request';

type SessionUser = Pick<Actor, 'username' | 'email' | 'name'>;

function sessionView(user: SessionUser, secret: string, row: ListedSessionRow): SessionView {
  return {
    username: user.username,
    email: user.email,
    name: user.name,
    csrf_token: csrfTokenOf(secret),
    expires_at: row.absolute_expires_at.toISOString(),
    idle_expires_at: row.idle_expires_at.toISOString(),
  };
}

function listedView(row: ListedSessionRow, currentId: string | undefined): BrowserSessionView {
  return {
    id: row.id,
    inserted_at: row.inserted_at.toISOString(),
    last_seen_at: row.last_seen_at.toISOString(),
    expires_at: row.absolute_expires_at.toISOString(),
    idle_expires_at: row.idle_expires_at.toISOString(),
    user_agent: row.user_agent,
    source_address: row.source_address,
    current: row.id === currentId,
  };
}

/**
 * Sign-in in a browser: email and password (under the login rate limits) open a session held in an HttpOnly
 * cookie; the session authenticates like a token with scope `all` (BrowserSessionAuthenticator) until it is
 * signed out, ended from the account page, idle too long or too old.
 */
@Injectable()
export class BrowserSessionsService {
  private readonly logger = new Logger(BrowserSessionsService.name);

  constructor(
    private readonly sessions: BrowserSessionsRepository,
    private readonly authenticator: BrowserSessionAuthenticator,
    private readonly auth: AuthService,
  ) {}

  /** `POST /api/session`: refused from another site, so that no page can sign a browser in to its account. */
  async signIn(input: SignInDto, request: SessionRequest): Promise<WithSessionCookie<{ data: SessionView }>> {
    if (!request.sameSite) throw DomainError.csrfRefused();
    const user = await this.auth.verifyCredentials(
      input.email,
      input.password,
      request.sourceAddress,
      input.code,
    );
    const { secret, row } = await this.open(user, request, 'password');
    return new WithSessionCookie(secret, { data: sessionView(user, secret, row) });
  }

  /** A new session for a user who has signed in (by password here, or through single sign-on): its secret. */
  async open(
    user: Pick<UserRecord, 'id'>,
    request: Pick<SessionRequest, 'userAgent' | 'sourceAddress'>,
    method: SignInMethod,
  ): Promise<{ secret: string; row: ListedSessionRow }> {
    const limits = this.authenticator.limits;
    await this.sessions.deleteExpired(limits);
    const secret = newSessionSecret();
    const row = await this.sessions.insert(
      user.id,
      hashSessionSecret(secret),
      request.userAgent,
      request.sourceAddress,
      limits,
      method,
    );
    this.logger.log({ userId: user.id, sessionId: row.id, method }, 'browser sign-in');
    return { secret, row };
  }

  /** `GET /api/session`: the cookie's session, with its CSRF token (a reloaded page has only the cookie). */
  async show(request: SessionRequest): Promise<{ data: SessionView }> {
    const actor = await this.authenticator.authenticate(request);
    const row =
      actor.sessionId === undefined
        ? undefined
        : await this.sessions.findLiveById(actor.sessionId, this.authenticator.limits);
    if (!row || request.secret === undefined) throw DomainError.unauthenticated();
    return { data: sessionView(actor, request.secret, row) };
  }

  /** `DELETE /api/session`: ends the cookie's session on every instance, and clears the cookie. */
  async signOut(request: SessionRequest): Promise<WithSessionCookie<undefined>> {
    const actor = await this.authenticator.authenticate(request);
    if (actor.sessionId !== undefined) {
      await this.authenticator.end({ id: actor.sessionId, userId: actor.userId });
    }
    return new WithSessionCookie(null, undefined);
  }

  /** The caller's live browser sessions, most recently used first. */
  async listForUser(actor: Actor): Promise<{ data: BrowserSessionView[] }> {
    const rows = await this.sessions.listLiveOfUser(actor.userId, this.authenticator.limits);
    return { data: rows.map((row) => listedView(row, actor.sessionId)) };
  }

  /** Ends one of the caller's sessions by id; another user's, or one already ended, is a 404. */
  async endForUser(actor: Actor, rawId: string): Promise<void> {
    const id = parseBigId(rawId);
    if (id === null || !(await this.authenticator.end({ id, userId: actor.userId }))) {
      throw DomainError.notFound();
    }
  }
}
