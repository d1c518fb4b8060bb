import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { Actor } from '../common/auth/actor';
import { DomainError } from '../common/errors/domain-error';
import { TOKEN_BY_HASH, type TokenRow } from './access.queries';
import { AccessToken, type TokenScope } from './access-token.entity';
import { generateUserToken, hashToken, hasValidChecksum, tokenFromAuthorization } from './token-codec';

const CACHE_TTL_MS = 5_000;
const CACHE_MAX_ENTRIES = 10_000;
const LAST_USED_RESOLUTION_MS = 60_000;

interface CachedToken {
  actor: Actor;
  expiresAt: number | null;
  cachedUntil: number;
}

export interface NewToken {
  note?: string | null;
  scope?: TokenScope;
  expiresAt?: Date | null;
}

/**
 * Personal access tokens. Verified tokens are cached in memory for a few seconds, keyed by their hash,
 * so that a burst of requests costs one lookup; a revocation clears this instance's cache at once
 * (other instances within CACHE_TTL_MS).
 */
@Injectable()
export class TokensService {
  private readonly cache = new Map<string, CachedToken>();
  private readonly lastUsedWrites = new Map<string, number>();

  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async create(userId: string, options: NewToken = {}): Promise<string> {
    const token = generateUserToken();
    await this.db.getRepository(AccessToken).insert({
      userId,
      tokenHash: hashToken(token),
      note: options.note?.trim().replace(/\s+/g, ' ') || null,
      scope: options.scope ?? 'all',
      expiresAt: options.expiresAt ?? null,
    });
    return token;
  }

  /** The caller behind an Authorization header; throws the contract's 401 otherwise. */
  async authenticate(header: string | string[] | undefined): Promise<Actor> {
    const token = tokenFromAuthorization(header);
    if (!token) throw DomainError.unauthenticated();
    const hash = hashToken(token);
    const key = hash.toString('base64');
    const now = Date.now();

    // A cached token passed the checksum when it was cached: the checksum guards the database, not the cache.
    const cached = this.cache.get(key);
    if (cached && cached.cachedUntil > now && (cached.expiresAt === null || cached.expiresAt > now)) {
      return cached.actor;
    }
    if (!hasValidChecksum(token)) throw DomainError.unauthenticated();

    const rows: TokenRow[] = await this.db.query(TOKEN_BY_HASH, [hash]);
    const row = rows[0];
    if (!row) {
      this.cache.delete(key);
      throw DomainError.unauthenticated();
    }
    const actor: Actor = {
      userId: row.user_id,
      email: row.email,
      username: row.username,
      name: row.name,
      tokenId: row.token_id,
      scope: row.scope,
    };
    if (this.cache.size >= CACHE_MAX_ENTRIES) this.cache.clear();
    this.cache.set(key, {
      actor,
      expiresAt: row.expires_at ? row.expires_at.getTime() : null,
      cachedUntil: now + CACHE_TTL_MS,
    });
    this.touch(row.token_id, row.last_used_at, now);
    return actor;
  }

  /** Revokes a token given in full; false when no live token matches. */
  async revoke(token: string): Promise<boolean> {
    if (!hasValidChecksum(token)) return false;
    const hash = hashToken(token);
    const result: [unknown[], number] = await this.db.query(
      `UPDATE access_tokens SET revoked_at = now() WHERE token_hash = $1 AND revoked_at IS NULL RETURNING id`,
      [hash],
    );
    this.cache.delete(hash.toString('base64'));
    return result[1] > 0;
  }

  /** Keeps last_used_at current to the minute without a write per request. */
  private touch(tokenId: string, lastUsedAt: Date | null, now: number): void {
    const lastWrite = Math.max(lastUsedAt?.getTime() ?? 0, this.lastUsedWrites.get(tokenId) ?? 0);
    if (now - lastWrite < LAST_USED_RESOLUTION_MS) return;
    if (this.lastUsedWrites.size >= CACHE_MAX_ENTRIES) this.lastUsedWrites.clear();
    this.lastUsedWrites.set(tokenId, now);
    this.db
      .query(
        `UPDATE access_tokens SET last_used_at = now()
          WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`,
        [tokenId],
      )
      .catch(() => this.lastUsedWrites.delete(tokenId));
  }
}
