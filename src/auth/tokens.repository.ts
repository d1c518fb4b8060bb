import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { Queryable } from '../database/transactions';
import { TOKEN_BY_HASH, type TokenRow } from './access.queries';
import type { TokenRendering } from './token-rendering';
import type { TokenScope } from './token-scope';

/** A token as its owner lists it. */
export interface ListedTokenRow {
  id: string;
  note: string | null;
  scope: TokenScope;
  rendering: TokenRendering;
  expires_at: Date | null;
  inserted_at: Date;
  last_used_at: Date | null;
  last_used_address: string | null;
}

/** Which token a revocation selects: one of a user's by id, or any by its SHA-256. */
export type TokenSelector = { id: string; userId: string } | { hash: Buffer };

/** The `access_tokens` table (tokens are stored by SHA-256 only). */
@Injectable()
export class TokensRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async insert(
    userId: string,
    hash: Buffer,
    note: string | null,
    scope: TokenScope,
    expiresAt: Date | null,
    rendering: TokenRendering = 'fleethub',
    tx: Queryable = this.db,
  ): Promise<ListedTokenRow> {
    const rows: ListedTokenRow[] = await tx.query(
      `INSERT INTO access_tokens (user_id, token_hash, note, scope, expires_at, rendering)
       VALUES ($1, $2, $3, $4, $5, $6)
       RETURNING id, note, scope, rendering, expires_at, inserted_at, last_used_at, last_used_address`,
      [userId, hash, note, scope, expiresAt, rendering],
    );
    return rows[0];
  }

  /** The user's tokens that are not revoked (expired ones included), newest first. */
  listLiveOfUser(userId: string): Promise<ListedTokenRow[]> {
    return this.db.query(
      `SELECT id, note, scope, rendering, expires_at, inserted_at, last_used_at, last_used_address FROM access_tokens
        WHERE user_id = $1 AND revoked_at IS NULL ORDER BY inserted_at DESC, id DESC`,
      [userId],
    );
  }

  /** A live token and its user, by SHA-256. */
  async findLiveByHash(hash: Buffer): Promise<TokenRow | undefined> {
    const rows: TokenRow[] = await this.db.query(TOKEN_BY_HASH, [hash]);
    return rows[0];
  }

  /** The selected token's id and revocation time, its row locked; undefined when none matches. */
  async findForRevocation(
    selector: TokenSelector,
    tx: Queryable,
  ): Promise<{ id: string; revoked_at: Date | null } | undefined> {
    const [condition, params] =
      'hash' in selector
        ? [`token_hash = $1`, [selector.hash]]
        : [`id = $1 AND user_id = $2`, [selector.id, selector.userId]];
    const rows: { id: string; revoked_at: Date | null }[] = await tx.query(
      `SELECT id, revoked_at FROM access_tokens WHERE ${condition} FOR UPDATE`,
      params,
    );
    return rows[0];
  }

  async markRevoked(id: string, tx: Queryable): Promise<void> {
    await tx.query(`UPDATE access_tokens SET revoked_at = now() WHERE id = $1`, [id]);
  }

  /** Revokes every token of the user not revoked yet; their ids. */
  async revokeAllOfUser(userId: string, tx: Queryable): Promise<string[]> {
    const [rows]: [{ id: string }[], number] = await tx.query(
      `UPDATE access_tokens SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL RETURNING id`,
      [userId],
    );
    return rows.map((row) => row.id);
  }

  /** Those of `ids` that are tokens neither revoked nor expired. */
  async findLiveIds(ids: readonly string[]): Promise<string[]> {
    const rows: { id: string }[] = await this.db.query(
      `SELECT id FROM access_tokens
        WHERE id = ANY($1::bigint[]) AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > now())`,
      [ids],
    );
    return rows.map((row) => row.id);
  }

  /** Sets last_used_at unless it was set within the last minute. */
  async touchLastUsed(tokenId: string, address: string | null): Promise<void> {
    await this.db.query(
      `UPDATE access_tokens SET last_used_at = now(), last_used_address = COALESCE($2, last_used_address)
        WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`,
      [tokenId, address],
    );
  }
}
