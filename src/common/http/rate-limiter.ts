import { createHash } from 'node:crypto';
import { Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { DomainError } from '../errors/domain-error';
import { ErrorCode } from '../errors/error-codes';
import { RateLimitBucketsRepository } from './rate-limit-buckets.repository';

export interface RateLimitResult {
  allowed: boolean;
  hits: number;
  /** Seconds until the window ends (at least 1). */
  retryAfter: number;
  /** When the window ends (ms since the epoch). */
  resetAt: number;
}

const ALLOWED: RateLimitResult = { allowed: true, hits: 0, retryAfter: 1, resetAt: 0 };
/** At most this many shared counts (hitBuffered) and blocks are held in memory. */
const MAX_SHARED_COUNTS = 50_000;
const MAX_BLOCKS = 10_000;
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

/** Seconds from `now` until `resetAt`, at least 1 (what `Retry-After` says). */
function secondsUntil(resetAt: number, now: number): number {
  return Math.max(1, Math.ceil((resetAt - now) / 1000));
}

/** One fixed window of a key: its hits so far, and when it ends (ms since the epoch). */
export interface Window {
  hits: number;
  resetAt: number;
}

/**
 * Fixed windows per key, in this process: the one in-memory counting structure of every rate limit (the shared
 * counts the API limit learns at each flush, the addresses blocked after too many failed authentications, NH1's
 * failures per address). A window opens at a key's first hit and ends `windowMs` later; an ended window is
 * forgotten. At most `maxKeys` keys: a new key beyond that first drops the ended windows, then all of them.
 */
export class LocalWindows {
  private readonly windows = new Map<string, Window>();

  constructor(private readonly maxKeys: number) {}

  /** The key's open window, or undefined. */
  get(key: string, now: number): Window | undefined {
    const window = this.windows.get(key);
    if (window === undefined || window.resetAt > now) return window;
    this.windows.delete(key);
    return undefined;
  }

  /** Counts `hits` in the key's open window, opening one of `windowMs` when none is open. */
  hit(key: string, windowMs: number, now: number, hits = 1): Window {
    let window = this.get(key, now);
    if (window === undefined) this.set(key, (window = { hits: 0, resetAt: now + windowMs }), now);
    window.hits += hits;
    return window;
  }

  /** How many keys have a window (ended ones included until they are looked up or evicted). */
  get size(): number {
    return this.windows.size;
  }

  /** Replaces the key's window (a count learned elsewhere, or a block until `resetAt`). */
  set(key: string, window: Window, now: number): void {
    if (!this.windows.has(key) && this.windows.size >= this.maxKeys) this.evict(now);
    this.windows.set(key, window);
  }

  private evict(now: number): void {
    for (const [key, window] of this.windows) if (window.resetAt <= now) this.windows.delete(key);
    if (this.windows.size >= this.maxKeys) this.windows.clear();
  }
}

/** The contract's 429: `{"errors":{"detail":...}}` plus `Retry-After`. */
export function rateLimited(result: Pick<RateLimitResult, 'retryAfter'>, detail: string): DomainError {
  return new DomainError(ErrorCode.RATE_LIMITED, detail, {}, { 'Retry-After': String(result.retryAfter) });
}

/**
 * The rate limits: fixed-window counters in the `rate_limit_buckets` table (UNLOGGED), shared by every
 * instance: one atomic upsert per hit (`hit`), or counted in memory and written in batches (`hitBuffered`); a
 * key over its limit may be blocked in this process until its window ends (`hitOrBlock`, `blocked`), so that
 * it costs nothing more. When the database does not answer, the limiter lets the request through (fail open):
 * the request then meets the same database and answers 503 itself, never a 500 caused by the limiter.
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
  private readonly shared = new LocalWindows(MAX_SHARED_COUNTS);
  /** Keys over their limit (hitOrBlock), until their window ends. */
  private readonly blocks = new LocalWindows(MAX_BLOCKS);
  private flushing: Promise<void> | undefined;

  constructor(private readonly buckets: RateLimitBucketsRepository) {}

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
    const shared = this.shared.get(key, now);
    let pending = this.pending.get(key);
    if (!pending) this.pending.set(key, (pending = { hits: 0, windowMs }));
    pending.hits += 1;
    const hits = (shared?.hits ?? 0) + (this.inFlight.get(key)?.hits ?? 0) + pending.hits;
    const resetAt = shared?.resetAt ?? now + windowMs;
    return {
      allowed: hits <= limit,
      hits,
      retryAfter: secondsUntil(resetAt, now),
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
      const rows = await this.buckets.addHits(keys.map((key) => ({ key, ...batch.get(key)! })));
      const now = Date.now();
      for (const row of rows)
        this.shared.set(row.key, { hits: row.hits, resetAt: new Date(row.expires_at).getTime() }, now);
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
      const row = await Promise.race([
        this.buckets.hit(key, windowMs),
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error('rate limiter query timed out')), QUERY_BUDGET_MS);
        }),
      ]);
      const resetAt = new Date(row.expires_at).getTime();
      return {
        allowed: row.hits <= limit,
        hits: row.hits,
        retryAfter: secondsUntil(resetAt, Date.now()),
        resetAt,
      };
    } catch (err) {
      this.logFailure(err);
      return ALLOWED;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * `hit` on `bucketKey(kind, subject)`; over the limit, the key is also blocked in this process until its
   * window ends (see `blocked`).
   */
  async hitOrBlock(
    kind: string,
    subject: string,
    limit: number,
    windowMs = 60_000,
  ): Promise<RateLimitResult> {
    const key = bucketKey(kind, subject);
    const result = await this.hit(key, limit, windowMs);
    if (!result.allowed) this.blocks.set(key, { hits: result.hits, resetAt: result.resetAt }, Date.now());
    return result;
  }

  /** Whether any key is blocked (ended blocks included until looked up): `blocked` can only answer undefined if not. */
  get blocking(): boolean {
    return this.blocks.size > 0;
  }

  /**
   * The block `hitOrBlock` put on `bucketKey(kind, subject)` while its window lasts, else undefined: no database
   * round trip, and no work at all while nothing is blocked.
   */
  blocked(kind: string, subject: string): Pick<RateLimitResult, 'retryAfter'> | undefined {
    if (this.blocks.size === 0) return undefined;
    const now = Date.now();
    const block = this.blocks.get(bucketKey(kind, subject), now);
    return block && { retryAfter: secondsUntil(block.resetAt, now) };
  }

  /** Counts a hit and throws the contract's 429 when over the limit. */
  async consume(key: string, limit: number, detail: string, windowMs = 60_000): Promise<void> {
    const result = await this.hit(key, limit, windowMs);
    if (!result.allowed) throw rateLimited(result, detail);
  }

  /** Deletes windows that have ended; runs on every instance, which is harmless. */
  async sweep(): Promise<number> {
    try {
      return await this.buckets.deleteExpired();
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
