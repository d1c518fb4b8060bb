import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Queryable } from '../../database/transactions';

/** A bucket's count in its current window, and when the window ends. */
export interface BucketRow {
  hits: number;
  expires_at: Date;
}

/**
 * The `rate_limit_buckets` table (UNLOGGED): fixed-window counters shared by every instance. A window that has
 * ended starts again at the next hit; ended windows are swept.
 */
@Injectable()
export class RateLimitBucketsRepository {
  constructor(@InjectDataSource() private readonly db: Queryable) {}

  /** One atomic hit on `key`; its count in the window and the window's end. */
  async hit(key: string, windowMs: number): Promise<BucketRow> {
    const rows = await this.db.query<BucketRow[]>(
      `INSERT INTO rate_limit_buckets AS b (key, hits, expires_at)
       VALUES ($1, 1, now() + $2 * interval '1 millisecond')
       ON CONFLICT (key) DO UPDATE
         SET hits = CASE WHEN b.expires_at < now() THEN 1 ELSE b.hits + 1 END,
             expires_at = CASE WHEN b.expires_at < now() THEN EXCLUDED.expires_at ELSE b.expires_at END
       RETURNING hits, expires_at`,
      [key.slice(0, 255), windowMs],
    );
    return rows[0];
  }

  /** Adds hits to many keys in one statement; every key's shared count and window end. */
  addHits(
    batch: readonly { key: string; hits: number; windowMs: number }[],
  ): Promise<(BucketRow & { key: string })[]> {
    return this.db.query(
      `INSERT INTO rate_limit_buckets AS b (key, hits, expires_at)
       SELECT k, h, now() + w * interval '1 millisecond'
         FROM unnest($1::text[], $2::int[], $3::int[]) AS t(k, h, w)
       ON CONFLICT (key) DO UPDATE
         SET hits = CASE WHEN b.expires_at < now() THEN EXCLUDED.hits ELSE b.hits + EXCLUDED.hits END,
             expires_at = CASE WHEN b.expires_at < now() THEN EXCLUDED.expires_at ELSE b.expires_at END
       RETURNING key, hits, expires_at`,
      [batch.map((b) => b.key.slice(0, 255)), batch.map((b) => b.hits), batch.map((b) => b.windowMs)],
    );
  }

  /** Deletes the windows that have ended; how many. */
  async deleteExpired(): Promise<number> {
    const [, count]: [unknown, number] = await this.db.query(
      `DELETE FROM rate_limit_buckets WHERE expires_at < now()`,
    );
    return count;
  }
}
