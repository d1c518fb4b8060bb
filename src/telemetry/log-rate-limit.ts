/**
 * NervesHub's per-device limit on log lines (`NervesHub.RateLimit.LogLines`, a token bucket): 5 lines a second,
 * bursts of 10; a line over the limit is dropped.
 */
export const LOG_TOKENS_PER_SEC = 5;
export const LOG_BURST = 10;

interface Bucket {
  tokens: number;
  at: number;
}

/** Token buckets per device, in memory (one instance holds a device's socket). */
export class LogRateLimit {
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    private readonly perSecond = LOG_TOKENS_PER_SEC,
    private readonly burst = LOG_BURST,
  ) {}

  get size(): number {
    return this.buckets.size;
  }

  /** Takes a token for the device; false when it has none left. */
  hit(deviceId: string, now = Date.now()): boolean {
    const bucket = this.buckets.get(deviceId);
    if (!bucket) {
      this.buckets.set(deviceId, { tokens: this.burst - 1, at: now });
      return true;
    }
    bucket.tokens = Math.min(this.burst, bucket.tokens + ((now - bucket.at) / 1000) * this.perSecond);
    bucket.at = now;
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  }

  /** Forgets buckets that have refilled (a device idle that long starts afresh anyway). */
  prune(now = Date.now()): void {
    const refill = (this.burst / this.perSecond) * 1000;
    for (const [deviceId, bucket] of this.buckets) {
      if (now - bucket.at >= refill) this.buckets.delete(deviceId);
    }
  }
}
