import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { Queryable } from '../database/transactions';
import type { CliSessionStatus } from './cli-session.entity';

export interface CliSessionRow {
  id: string;
  status: CliSessionStatus;
  confirmation_code: string;
  attempts: number;
}

/**
 * The `cli_sessions` table. Every read ignores sessions past `expires_at`. (TypeORM answers an UPDATE with
 * `[rows, affected]`.)
 */
@Injectable()
export class CliSessionsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async insert(hash: Buffer, code: string, note: string | null, lifetimeSec: number): Promise<void> {
    await this.db.query(
      `INSERT INTO cli_sessions (token_hash, confirmation_code, note, expires_at)
       VALUES ($1, $2, $3, now() + make_interval(secs => $4))`,
      [hash, code, note, lifetimeSec],
    );
  }

  /** Drops sessions that expired (an index range scan; nothing else reads them). */
  async deleteExpired(): Promise<void> {
    await this.db.query(`DELETE FROM cli_sessions WHERE expires_at < now()`);
  }

  async findLive(hash: Buffer): Promise<CliSessionRow | undefined> {
    const rows: CliSessionRow[] = await this.db.query(
      `SELECT id, status, confirmation_code, attempts FROM cli_sessions
        WHERE token_hash = $1 AND expires_at > now()`,
      [hash],
    );
    return rows[0];
  }

  /**
   * Uses one of the `maxAttempts` a waiting session has, atomically (concurrent submissions cannot share one);
   * the session as it is then, or undefined when it is not waiting, expired or out of attempts. Using the last
   * attempt without approving closes it (`closeIfExhausted`).
   */
  async useAttempt(hash: Buffer, maxAttempts: number): Promise<CliSessionRow | undefined> {
    const [rows]: [CliSessionRow[], number] = await this.db.query(
      `UPDATE cli_sessions SET attempts = attempts + 1
        WHERE token_hash = $1 AND status = 'waiting' AND expires_at > now() AND attempts < $2
        RETURNING id, status, confirmation_code, attempts`,
      [hash, maxAttempts],
    );
    return rows[0];
  }

  async closeIfExhausted(id: string, maxAttempts: number): Promise<void> {
    await this.db.query(
      `UPDATE cli_sessions SET status = 'closed' WHERE id = $1 AND status = 'waiting' AND attempts >= $2`,
      [id, maxAttempts],
    );
  }

  /** Marks a waiting session approved by the user; false when it is no longer waiting or has expired. */
  async approve(id: string, userId: string): Promise<boolean> {
    const [, updated]: [unknown, number] = await this.db.query(
      `UPDATE cli_sessions SET status = 'approved', user_id = $2
        WHERE id = $1 AND status = 'waiting' AND expires_at > now() RETURNING id`,
      [id, userId],
    );
    return updated === 1;
  }

  async close(id: string): Promise<void> {
    await this.db.query(`UPDATE cli_sessions SET status = 'closed' WHERE id = $1 AND status = 'waiting'`, [
      id,
    ]);
  }

  /** Claims an approved session once (across instances): its user and note, or undefined. */
  async claim(hash: Buffer, tx: Queryable): Promise<{ user_id: string; note: string | null } | undefined> {
    const [rows]: [{ user_id: string; note: string | null }[], number] = await tx.query(
      `UPDATE cli_sessions SET status = 'claimed'
        WHERE token_hash = $1 AND status = 'approved' AND expires_at > now() RETURNING user_id, note`,
      [hash],
    );
    return rows[0];
  }
}
