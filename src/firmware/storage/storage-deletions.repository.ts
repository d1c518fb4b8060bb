import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { Queryable } from '../../database/transactions';

/** The `storage_deletions` outbox: files to remove from storage, whose rows are already deleted. */
@Injectable()
export class StorageDeletionsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * Records files to remove, in the transaction that deletes their rows. The caller removes them at once after
   * the commit; the sweeper takes over after `graceSec` (a crash, a failed removal).
   */
  async record(keys: string[], graceSec: number, tx: Queryable = this.db): Promise<void> {
    if (keys.length === 0) return;
    await tx.query(
      `INSERT INTO storage_deletions (storage_key, next_attempt_at)
       SELECT key, now() + make_interval(secs => $2) FROM unnest($1::varchar[]) AS key`,
      [keys, graceSec],
    );
  }

  /** The file was removed: every record of it goes. */
  async forget(key: string): Promise<void> {
    await this.db.query(`DELETE FROM storage_deletions WHERE storage_key = $1`, [key]);
  }

  /** Up to `limit` records due for an attempt, oldest first. */
  async due(limit: number): Promise<{ id: string; storage_key: string; attempts: number }[]> {
    return this.db.query(
      `SELECT id, storage_key, attempts FROM storage_deletions
       WHERE next_attempt_at <= now() ORDER BY next_attempt_at LIMIT $1`,
      [limit],
    );
  }

  /** The removal failed again: the next attempt is in `delaySec`. */
  async postpone(id: string, delaySec: number): Promise<void> {
    await this.db.query(
      `UPDATE storage_deletions SET attempts = attempts + 1, next_attempt_at = now() + make_interval(secs => $2)
       WHERE id = $1`,
      [id, delaySec],
    );
  }

  count(): Promise<number> {
    return this.db
      .query<{ n: number }[]>(`SELECT count(*)::int AS n FROM storage_deletions`)
      .then(([row]) => row.n);
  }
}
