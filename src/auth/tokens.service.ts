import { Injectable } from '@nestjs/common';
import type { Actor } from '../common/auth/actor';
import { DomainError } from '../common/errors/domain-error';
import { Created } from '../common/http/created';
import { isoOrNull, parseBigId } from '../common/values';
import { Transactions } from '../database/transactions';
import { actorOfToken } from './access.queries';
import type { TokenRendering } from './token-rendering';
import type { TokenScope } from './token-scope';
import type { Queryable } from '../database/transactions';
import { type CreateTokenDto, parseTimestamp, type TokenCreatedView, type TokenView } from './dto/token.dto';
import { TokenCache } from './token-cache';
import { type ListedTokenRow, type TokenSelector, TokensRepository } from './tokens.repository';
import { generateUserToken, hashToken, hasValidChecksum, tokenFromAuthorization } from './token-codec';

const CACHE_MAX_ENTRIES = 10_000;
const LAST_USED_RESOLUTION_MS = 60_000;

export interface NewToken {
  note?: string | null;
  scope?: TokenScope;
  expiresAt?: Date | null;
  rendering?: TokenRendering;
}

type RevokeOutcome = 'revoked' | 'already revoked' | 'not found';

function toView(row: ListedTokenRow): TokenView {
  return {
    id: row.id,
    note: row.note,
    scope: row.scope,
    rendering: row.rendering,
    expires_at: isoOrNull(row.expires_at),
    inserted_at: row.inserted_at.toISOString(),
    last_used_at: isoOrNull(row.last_used_at),
    last_used_address: row.last_used_address,
  };
}

/**
 * Personal access tokens: created, verified (through the TokenCache), listed and revoked. A revocation returns
 * once no instance can answer from a cached copy of the token any more.
 */
@Injectable()
export class TokensService {
  private readonly lastUsedWrites = new Map<string, number>();

  constructor(
    private readonly tokens: TokensRepository,
    private readonly transactions: Transactions,
    private readonly cache: TokenCache,
  ) {}

  /** A new token of the user (inside `tx` when given: it exists only if that transaction commits). */
  async create(userId: string, options: NewToken = {}, tx?: Queryable): Promise<string> {
    return (await this.insert(userId, options, tx)).token;
  }

  /** `POST /api/users/me/tokens`: a new token of the caller, shown only in this answer. */
  async createForUser(actor: Actor, input: CreateTokenDto): Promise<Created<{ data: TokenCreatedView }>> {
    const expiresAt = input.expires_at ? parseTimestamp(input.expires_at.trim()) : null;
    const { token, row } = await this.insert(actor.userId, {
      note: input.note,
      scope: input.scope ?? 'all',
      expiresAt,
      rendering: input.rendering ?? 'fleethub',
    });
    return new Created(`/api/users/me/tokens/${row.id}`, { data: { ...toView(row), token } });
  }

  /** The caller's tokens that are not revoked (expired ones included), newest first. */
  async listForUser(actor: Actor): Promise<{ data: TokenView[] }> {
    const rows = await this.tokens.listLiveOfUser(actor.userId);
    return { data: rows.map(toView) };
  }

  /** Revokes one of the caller's tokens by id; revoking it again is fine, another user's token is a 404. */
  async revokeForUser(actor: Actor, rawId: string): Promise<void> {
    const id = parseBigId(rawId);
    if (id === null) throw DomainError.notFound();
    const outcome = await this.revokeWhere({ id, userId: actor.userId });
    if (outcome === 'not found') throw DomainError.notFound();
  }

  /** Revokes every live token of the user (an admin ending a member's credentials); how many. */
  async revokeAllOfUser(userId: string): Promise<number> {
    const revoked = await this.cache.revoke(
      (publish) =>
        this.transactions.run(async (tx) => {
          const ids = await this.tokens.revokeAllOfUser(userId, tx);
          await publish(tx, ids);
          return ids;
        }),
      'token revocation',
    );
    return revoked.length;
  }

  /** Revokes a token given in full; false when no live token matches. */
  async revoke(token: string): Promise<boolean> {
    if (!hasValidChecksum(token)) return false;
    return (await this.revokeWhere({ hash: hashToken(token) })) === 'revoked';
  }

  /** Those of the token ids that still authenticate (not revoked, not expired): long-lived requests re-check. */
  liveTokenIds(ids: readonly string[]): Promise<string[]> {
    return ids.length === 0 ? Promise.resolve([]) : this.tokens.findLiveIds(ids);
  }

  /** The caller behind an Authorization header; throws the contract's 401 otherwise. */
  /**
   * The actor of a token the cache holds, with no round trip (the guard's synchronous path); undefined when there
   * is no such token in the cache, or no token at all: authenticate() then decides.
   */
  cachedActor(header: string | string[] | undefined): Actor | undefined {
    const token = tokenFromAuthorization(header);
    return token ? this.cache.get(hashToken(token).toString('base64')) : undefined;
  }

  async authenticate(header: string | string[] | undefined, sourceAddress?: string): Promise<Actor> {
    const token = tokenFromAuthorization(header);
    if (!token) throw DomainError.unauthenticated();
    const hash = hashToken(token);
    const key = hash.toString('base64');

    // A cached token passed the checksum when it was cached: the checksum guards the database, not the cache.
    const cached = this.cache.get(key);
    if (cached) return cached;
    if (!hasValidChecksum(token)) throw DomainError.unauthenticated();

    const lookup = this.cache.startLookup();
    const row = await this.tokens.findLiveByHash(hash);
    if (!row) {
      this.cache.delete(key);
      throw DomainError.unauthenticated();
    }
    const actor = actorOfToken(row);
    this.cache.put(key, lookup, actor, row.expires_at);
    this.touch(row.token_id, row.last_used_at, Date.now(), sourceAddress);
    return actor;
  }

  private async insert(
    userId: string,
    options: NewToken,
    tx?: Queryable,
  ): Promise<{ token: string; row: ListedTokenRow }> {
    const token = generateUserToken();
    const row = await this.tokens.insert(
      userId,
      hashToken(token),
      options.note?.trim().replace(/\s+/g, ' ') || null,
      options.scope ?? 'all',
      options.expiresAt ?? null,
      options.rendering ?? 'fleethub',
      tx,
    );
    return { token, row };
  }

  /**
   * Revokes the token `selector` selects, NOTIFYing every instance in the same transaction, and returns once
   * every instance has evicted it from its cache (or could no longer trust that cache).
   */
  private revokeWhere(selector: TokenSelector): Promise<RevokeOutcome> {
    return this.cache.revoke(
      (publish) =>
        this.transactions.run(async (tx): Promise<RevokeOutcome> => {
          const row = await this.tokens.findForRevocation(selector, tx);
          if (!row) return 'not found';
          if (row.revoked_at) return 'already revoked';
          await this.tokens.markRevoked(row.id, tx);
          await publish(tx, [row.id]);
          return 'revoked';
        }),
      'token revocation',
    );
  }

  /** Keeps last_used_at current to the minute without a write per request. */
  private touch(tokenId: string, lastUsedAt: Date | null, now: number, address?: string): void {
    const lastWrite = Math.max(lastUsedAt?.getTime() ?? 0, this.lastUsedWrites.get(tokenId) ?? 0);
    if (now - lastWrite < LAST_USED_RESOLUTION_MS) return;
    if (this.lastUsedWrites.size >= CACHE_MAX_ENTRIES) this.lastUsedWrites.clear();
    this.lastUsedWrites.set(tokenId, now);
    this.tokens
      .touchLastUsed(tokenId, address?.slice(0, 64) ?? null)
      .catch(() => this.lastUsedWrites.delete(tokenId));
  }
}
