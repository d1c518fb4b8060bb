import { Inject, Injectable } from '@nestjs/common';
import { TokenCache } from '../auth/token-cache';
import type { Actor } from '../common/auth/actor';
import { DomainError } from '../common/errors/domain-error';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { Transactions } from '../database/transactions';
import {
  BrowserSessionsRepository,
  type LiveSessionRow,
  type SessionLimits,
  type SessionSelector,
} from './browser-sessions.repository';
import { csrfPassed, hashSessionSecret, type SessionRequest } from './session-request';

const LAST_SEEN_RESOLUTION_MS = 60_000;
const LAST_SEEN_MAX_ENTRIES = 10_000;

/** The actor's `tokenId` for a session: the key of its rate limit and of its revocation in the TokenCache. */
const sessionTokenId = (id: string) => `session:${id}`;

function actorOfSession(row: LiveSessionRow): Actor {
  return {
    userId: row.user_id,
    email: row.email,
    username: row.username,
    name: row.name,
    tokenId: sessionTokenId(row.id),
    scope: 'all',
    sessionId: row.id,
    ...(row.sign_in_method === 'oidc' && { singleSignOn: true }),
  };
}

/**
 * The AuthGuard's cookie path: the caller a browser session's cookie stands for, checked like a personal access
 * token (through the same TokenCache, so that ending a session reaches every instance before it returns), plus
 * the CSRF check every change made with a cookie needs.
 */
@Injectable()
export class BrowserSessionAuthenticator {
  private readonly lastSeenWrites = new Map<string, number>();
  readonly limits: SessionLimits;

  constructor(
    private readonly sessions: BrowserSessionsRepository,
    private readonly cache: TokenCache,
    private readonly transactions: Transactions,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.limits = {
      idleSec: config.browserSessions.idleMinutes * 60,
      maxSec: config.browserSessions.maxHours * 3600,
    };
  }

  /**
   * The session's user (scope `all`); the contract's 401 without a live session, 403 for a change without the
   * session's CSRF token or from another site.
   */
  async authenticate(request: SessionRequest): Promise<Actor> {
    const secret = request.secret;
    if (secret === undefined) throw DomainError.unauthenticated();
    const hash = hashSessionSecret(secret);
    const key = `session:${hash.toString('base64')}`;
    const actor = this.cache.get(key) ?? (await this.lookup(hash, key));
    if (!csrfPassed(request, secret)) throw DomainError.csrfRefused();
    return actor;
  }

  /**
   * Deletes the selected session, NOTIFYing every instance in the same transaction, and returns once every
   * instance has evicted it from its cache (as a token revocation does); false when none matched.
   */
  async end(selector: SessionSelector): Promise<boolean> {
    const ended = await this.cache.revoke(
      (publish) =>
        this.transactions.run(async (tx) => {
          const id = await this.sessions.delete(selector, tx);
          if (id !== undefined) await publish(tx, [sessionTokenId(id)]);
          return id;
        }),
      'browser session end',
    );
    return ended !== undefined;
  }

  /** Ends every browser session of the user; returns once every instance has evicted them from its cache. */
  async endAllOfUser(userId: string): Promise<number> {
    const ended = await this.cache.revoke(
      (publish) =>
        this.transactions.run(async (tx) => {
          const ids = await this.sessions.deleteAllOfUser(userId, tx);
          await publish(tx, ids.map(sessionTokenId));
          return ids;
        }),
      'browser sessions end',
    );
    return ended.length;
  }

  /**
   * Those of the session ids that are still live: long-lived requests (event streams) re-check them. Not use of
   * the session: its idle expiry is not pushed back.
   */
  liveSessionIds(ids: readonly string[]): Promise<string[]> {
    return ids.length === 0 ? Promise.resolve([]) : this.sessions.findLiveIds(ids, this.limits);
  }

  private async lookup(hash: Buffer, key: string): Promise<Actor> {
    const lookup = this.cache.startLookup();
    const row = await this.sessions.findLiveByHash(hash, this.limits);
    if (!row) {
      this.cache.delete(key);
      throw DomainError.unauthenticated();
    }
    const actor = actorOfSession(row);
    this.cache.put(key, lookup, actor, row.expires_at);
    this.touch(row.id, row.last_seen_at, Date.now());
    return actor;
  }

  /** Keeps last_seen_at current to the minute without a write per request. */
  private touch(sessionId: string, lastSeenAt: Date, now: number): void {
    const lastWrite = Math.max(lastSeenAt.getTime(), this.lastSeenWrites.get(sessionId) ?? 0);
    if (now - lastWrite < LAST_SEEN_RESOLUTION_MS) return;
    if (this.lastSeenWrites.size >= LAST_SEEN_MAX_ENTRIES) this.lastSeenWrites.clear();
    this.lastSeenWrites.set(sessionId, now);
    this.sessions.touchLastSeen(sessionId).catch(() => this.lastSeenWrites.delete(sessionId));
  }
}
