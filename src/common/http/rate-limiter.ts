import { DomainError } from '../errors/domain-error';
import { ErrorCode } from '../errors/error-codes';

/**
 * A fixed-window counter per key, in this process. Used for the login path; a limit is "at most
 * `limit` hits per `windowMs`", and a refusal says how long to wait.
 */
export class FixedWindowLimiter {
  private readonly windows = new Map<string, { start: number; count: number }>();

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly maxKeys = 50_000,
  ) {}

  /** Counts a hit for `key`; throws the contract's 429 when over the limit. */
  hit(key: string, now = Date.now()): void {
    let window = this.windows.get(key);
    if (!window || now - window.start >= this.windowMs) {
      if (this.windows.size >= this.maxKeys) this.evictExpired(now);
      window = { start: now, count: 0 };
      this.windows.set(key, window);
    }
    window.count += 1;
    if (window.count > this.limit) {
      const retryAfter = Math.max(1, Math.ceil((window.start + this.windowMs - now) / 1000));
      throw new DomainError(
        ErrorCode.RATE_LIMITED,
        'too many attempts, try again later',
        {},
        {
          'Retry-After': String(retryAfter),
        },
      );
    }
  }

  private evictExpired(now: number): void {
    for (const [key, window] of this.windows) {
      if (now - window.start >= this.windowMs) this.windows.delete(key);
    }
    if (this.windows.size >= this.maxKeys) this.windows.clear();
  }
}
