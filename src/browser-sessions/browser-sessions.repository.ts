import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { Queryable } from '../database/transactions';

/** How a browser session signed in. */
export type SignInMethod = 'password' | 'oidc';

/** How long sessions live, in seconds: every read ignores a session past either limit. */
export interface SessionLimits {
  idleSec: number;
  maxSec: number;
}

/** A live session and its user, as the cookie authenticates it. */
export interface LiveSessionRow {
  id: string;
  sign_in_method: SignInMethod;
  last_seen_at: Date;
  /** When it ends unless used again: the earlier of its idle and its absolute expiry. */
  expires_at: Date;
  user_id: string;
  email: string;
  username: string;
  name: string;
}

/** A session as its user lists it. */
export interface ListedSessionRow {
  id: string;
  inserted_at: Date;
  last_seen_at: Date;
  absolute_expires_at: Date;
  idle_expires_at: Date;
  user_agent: string | null;
  source_address: string | null;
}

/** Which sessions an ending selects: one of a user's by id, or one by the SHA-256 of its secret. */
export type SessionSelector = { id: string; userId: string } | { hash: Buffer };

const LIVE = `s.last_seen_at > now() - make_interval(secs => $2) AND s.inserted_at > now() - make_interval(secs => $3)`;
const IDLE_EXPIRY = `LEAST(s.last_seen_at + make_interval(secs => $2), s.inserted_at + make_interval(secs => $3))`;
const LISTED = `s.id, s.inserted_at, s.last_seen_at, s.user_agent, s.source_address,
  s.inserted_at + make_interval(secs => $3) AS absolute_expires_at, ${IDLE_EXPIRY} AS idle_expires_at`;

/** The `browser_sessions` table (sessions are stored by the SHA-256 of their secret only). */
@Injectable()
export class BrowserSessionsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async insert(
    userId: string,
    hash: Buffer,
    userAgent: string | null,
    sourceAddress: string,
    limits: SessionLimits,
    method: SignInMethod = 'password',
  ): Promise<ListedSessionRow> {
    const rows: ListedSessionRow[] = await this.db.query(
      `INSERT INTO browser_sessions AS s (user_id, token_hash, user_agent, source_address, sign_in_method)
       VALUES ($1, $4, $5, $6, $7) RETURNING ${LISTED}`,
      [userId, limits.idleSec, limits.maxSec, hash, userAgent, sourceAddress, method],
    );
    return rows[0];
  }

  /** Drops every session past either limit (a scan of a table of live sessions, at each sign-in). */
  async deleteExpired(limits: SessionLimits): Promise<void> {
    await this.db.query(
      `DELETE FROM browser_sessions
        WHERE last_seen_at <= now() - make_interval(secs => $1) OR inserted_at <= now() - make_interval(secs => $2)`,
      [limits.idleSec, limits.maxSec],
    );
  }

  async findLiveByHash(hash: Buffer, limits: SessionLimits): Promise<LiveSessionRow | undefined> {
    const rows: LiveSessionRow[] = await this.db.query(
      `SELECT s.id, s.sign_in_method, s.last_seen_at, ${IDLE_EXPIRY} AS expires_at,
              u.id AS user_id, u.email, u.username, u.name
         FROM browser_sessions s JOIN users u ON u.id = s.user_id
        WHERE s.token_hash = $1 AND ${LIVE}`,
      [hash, limits.idleSec, limits.maxSec],
    );
    return rows[0];
  }

  async findLiveById(id: string, limits: SessionLimits): Promise<ListedSessionRow | undefined> {
    const rows: ListedSessionRow[] = await this.db.query(
      `SELECT ${LISTED} FROM browser_sessions s WHERE s.id = $1 AND ${LIVE}`,
      [id, limits.idleSec, limits.maxSec],
    );
    return rows[0];
  }

  /** Those of `ids` that are live sessions (neither idle nor older than the limits). */
  async findLiveIds(ids: readonly string[], limits: SessionLimits): Promise<string[]> {
    const rows: { id: string }[] = await this.db.query(
      `SELECT s.id FROM browser_sessions s WHERE s.id = ANY($1::bigint[]) AND ${LIVE}`,
      [ids, limits.idleSec, limits.maxSec],
    );
    return rows.map((row) => row.id);
  }

  /** The user's live sessions, most recently used first. */
  listLiveOfUser(userId: string, limits: SessionLimits): Promise<ListedSessionRow[]> {
    return this.db.query(
      `SELECT ${LISTED} FROM browser_sessions s WHERE s.user_id = $1 AND ${LIVE}
        ORDER BY s.last_seen_at DESC, s.id DESC`,
      [userId, limits.idleSec, limits.maxSec],
    );
  }

  /** Deletes the selected session (live or not); its id, or undefined when none matches. */
  async delete(selector: SessionSelector, tx: Queryable): Promise<string | undefined> {
    const [condition, params] =
      'hash' in selector
        ? [`token_hash = $1`, [selector.hash]]
        : [`id = $1 AND user_id = $2`, [selector.id, selector.userId]];
    const [rows]: [{ id: string }[], number] = await tx.query(
      `DELETE FROM browser_sessions WHERE ${condition} RETURNING id`,
      params,
    );
    return rows[0]?.id;
  }

  /** Deletes every session of the user; their ids. */
  async deleteAllOfUser(userId: string, tx: Queryable): Promise<string[]> {
    const [rows]: [{ id: string }[], number] = await tx.query(
      `DELETE FROM browser_sessions WHERE user_id = $1 RETURNING id`,
      [userId],
    );
    return rows.map((row) => row.id);
  }

  /** Sets last_seen_at unless it was set within the last minute. */
  async touchLastSeen(id: string): Promise<void> {
    await this.db.query(
      `UPDATE browser_sessions SET last_seen_at = now()
        WHERE id = $1 AND last_seen_at < now() - interval '1 minute'`,
      [id],
    );
  }
}
