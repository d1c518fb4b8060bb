import { createHash } from 'node:crypto';
import { Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { DomainError } from '../errors/domain-error';
import { ErrorCode } from '../errors/error-codes';

export interface RateLimitResult {
  allowed: boolean;
  hits: number;
  /** Seconds until the window ends (at least 1). */
  retryAfter: number;
  /** When the window ends (ms since the epoch). */
  resetAt: number;
}

const ALLOWED: RateLimitResult = { allowed: true, hits: 0, retryAfter: 1, resetAt: 0 };
const SWEEP_INTERVAL_MS = 60_000;
/** How often buffered hits (hitBuffered) are written to the shared table. */
const FLUSH_INTERVAL_MS = 1_000;
/** A limiter query slower than this is abandoned and the request let through (fail open). */
const QUERY_BUDGET_MS = 1_000;

/** Keys longer than the column (or carrying user input such as an email) are stored as a hash. */
export function bucketKey(kind: string, subject: string): string {
  const key = `${kind}:${subject}`;
  return key.length <= 96 && /^[\x21-\x7e]*$/.test(key)
    ? key
    : `${kind}:#${createHash('sha256').update(subject).digest('base64url')}`;
}

/** The contract's 429: `{"errors":{"detail":...}}` plus `Retry-After`. */
export function rateLimited(result: Pick<RateLimitResult, 'retryAfter'>, detail: string): DomainError {
  return new DomainError(ErrorCode.RATE_LIMITED, detail, {}, { 'Retry-After': String(result.retryAfter) });
}

/**
 * Fixed-window counters in the `rate_limit_buckets` table (UNLOGGED), shared by every instance: one atomic
 * upsert per hit. When the database does not answer, the limiter lets the request through (fail open): the
 * request then meets the same database and answers 503 itself, never a 500 caused by the limiter.
 */
@Injectable()
export class RateLimiter implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('RateLimiter');
  private sweeper: NodeJS.Timeout | undefined;
  private flusher: NodeJS.Timeout | undefined;
  private lastFailureLog = 0;
  /** Hits counted here since the last flush, per key. */
  private pending = new Map<string, { hits: number; windowMs: number }>();
  /** Hits being written by the flush in progress (counted until the shared counts come back). */
  private inFlight = new Map<string, { hits: number; windowMs: number }>();
  /** The shared count of each key as of the last flush (all instances), and when its window ends. */
  private readonly shared = new Map<string, { hits: number; resetAt: number }>();
  private flushing: Promise<void> | undefined;

  constructor(@InjectDataSource() private readonly db: DataSource) {}

  onModuleInit(): void {
    this.sweeper = setInterval(() => void this.sweep(), SWEEP_INTERVAL_MS);
    this.sweeper.unref();
    this.flusher = setInterval(() => void this.flush(), FLUSH_INTERVAL_MS);
    this.flusher.unref();
  }

  async onModuleDestroy(): Promise<void> {
    if (this.sweeper) clearInterval(this.sweeper);
    if (this.flusher) clearInterval(this.flusher);
    await this.flush();
  }

  /**
   * For hot paths (the general API limit): counts the hit in memory and decides at once from the shared count of
   * the last flush plus this instance's hits since. Hits reach the shared table in one batched upsert a second,
   * so across instances the limit holds to within about a second of traffic; on one instance it is exact.
   */
  hitBuffered(key: string, limit: number, windowMs = 60_000): RateLimitResult {
    if (limit <= 0) return ALLOWED;
    const now = Date.now();
    let shared = this.shared.get(key);
    if (shared && shared.resetAt <= now) {
      this.shared.delete(key);
      shared = undefined;
    }
    let pending = this.pending.get(key);
    if (!pending) this.pending.set(key, (pending = { hits: 0, windowMs }));
    pending.hits += 1;
    const hits = (shared?.hits ?? 0) + (this.inFlight.get(key)?.hits ?? 0) + pending.hits;
    const resetAt = shared?.resetAt ?? now + windowMs;
    return {
      allowed: hits <= limit,
      hits,
      retryAfter: Math.max(1, Math.ceil((resetAt - now) / 1000)),
      resetAt,
    };
  }

  /** Writes the buffered hits in one statement and learns the shared counts back. */
  flush(): Promise<void> {
    this.flushing ??= this.writePending().finally(() => (this.flushing = undefined));
    return this.flushing;
  }

  private async writePending(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    this.inFlight = batch;
    const keys = [...batch.keys()];
    try {
      const rows = await this.db.query<{ key: string; hits: number; expires_at: Date }[]>(
        `INSERT INTO rate_limit_buckets AS b (key, hits, expires_at)
         SELECT k, h, now() + w * interval '1 millisecond'
           FROM unnest($1::text[], $2::int[], $3::int[]) AS t(k, h, w)
         ON CONFLICT (key) DO UPDATE
           SET hits = CASE WHEN b.expires_at < now() THEN EXCLUDED.hits ELSE b.hits + EXCLUDED.hits END,
               expires_at = CASE WHEN b.expires_at < now() THEN EXCLUDED.expires_at ELSE b.expires_at END
         RETURNING key, hits, expires_at`,
        [
          keys.map((k) => k.slice(0, 255)),
          keys.map((k) => batch.get(k)!.hits),
          keys.map((k) => batch.get(k)!.windowMs),
        ],
      );
      if (this.shared.size > 50_000) this.shared.clear();
      for (const row of rows)
        this.shared.set(row.key, { hits: row.hits, resetAt: new Date(row.expires_at).getTime() });
    } catch (err) {
      this.logFailure(err);
    } finally {
      this.inFlight = new Map();
    }
  }

  /**
   * Counts a hit on `key` in a window of `windowMs`; `allowed` is false once the window holds more than
   * `limit` hits. A limit of 0 disables the check (nothing is written).
   */
  async hit(key: string, limit: number, windowMs = 60_000): Promise<RateLimitResult> {
    if (limit <= 0) return ALLOWED;
    let timer: NodeJS.Timeout | undefined;
    try {
      const rows = await Promise.race([
        this.db.query<{ hits: number; expires_at: Date }[]>(
          `INSERT INTO rate_limit_buckets AS b (key, hits, expires_at)
           VALUES ($1, 1, now() + $2 * interval '1 millisecond')
           ON CONFLICT (key) DO UPDATE
             SET hits = CASE WHEN b.expires_at < now() THEN 1 ELSE b.hits + 1 END,
                 expires_at = CASE WHEN b.expires_at < now() THEN EXCLUDED.expires_at ELSE b.expires_at END
           RETURNING hits, expires_at`,
          [key.slice(0, 255), windowMs],
        ),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('rate limiter query timed out')), QUERY_BUDGET_MS);
        }),
      ]);
      const row = rows[0];
      const resetAt = new Date(row.expires_at).getTime();
      return {
        allowed: row.hits <= limit,
        hits: row.hits,
        retryAfter: Math.max(1, Math.ceil((resetAt - Date.now()) / 1000)),
        resetAt,
      };
    } catch (err) {
      this.logFailure(err);
      return ALLOWED;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Counts a hit and throws the contract's 429 when over the limit. */
  async consume(key: string, limit: number, detail: string, windowMs = 60_000): Promise<void> {
    const result = await this.hit(key, limit, windowMs);
    if (!result.allowed) throw rateLimited(result, detail);
  }

  /** Deletes windows that have ended; runs on every instance, which is harmless. */
  async sweep(): Promise<number> {
    try {
      const [, count]: [unknown, number] = await this.db.query(
        `DELETE FROM rate_limit_buckets WHERE expires_at < now()`,
      );
      return count;
    } catch (err) {
      this.logFailure(err);
      return 0;
    }
  }

  private logFailure(err: unknown): void {
    const now = Date.now();
    if (now - this.lastFailureLog < 10_000) return;
    this.lastFailureLog = now;
    this.logger.warn({ err }, 'rate limiter unavailable; letting requests through');
  }
}
