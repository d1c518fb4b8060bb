/**
 * Deliveries per second per endpoint, on one instance: a token bucket per webhook holding at most one second's
 * worth (`rate` tokens, refilled continuously), so an endpoint gets bursts of at most `rate` and `rate` per second
 * after that. A rate of 0 means no limit.
 */
export class EndpointRateLimit {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly rate: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** Takes one delivery's token for the endpoint: false when it has none now (the delivery waits). */
  take(webhookId: string): boolean {
    if (this.rate === 0) return true;
    const bucket = this.refilled(webhookId);
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  }

  /** The endpoints without a token now: the claim skips their deliveries. */
  exhausted(): string[] {
    if (this.rate === 0) return [];
    const empty: string[] = [];
    for (const id of [...this.buckets.keys()]) {
      const bucket = this.refilled(id);
      if (bucket.tokens < 1) empty.push(id);
      // A full bucket is the state of an endpoint never seen: forgotten, so the map holds only recent ones.
      else if (bucket.tokens >= this.rate) this.buckets.delete(id);
    }
    return empty;
  }

  /** Milliseconds until an exhausted endpoint has a token again (null: none is exhausted). */
  nextTokenInMs(): number | null {
    let soonest: number | null = null;
    for (const id of this.buckets.keys()) {
      const bucket = this.refilled(id);
      if (bucket.tokens >= 1) continue;
      const wait = Math.ceil(((1 - bucket.tokens) * 1000) / this.rate);
      soonest = soonest === null ? wait : Math.min(soonest, wait);
    }
    return soonest;
  }

  private refilled(webhookId: string): { tokens: number; at: number } {
    const now = this.now();
    const bucket = this.buckets.get(webhookId);
    if (!bucket) {
      const fresh = { tokens: this.rate, at: now };
      this.buckets.set(webhookId, fresh);
      return fresh;
    }
    bucket.tokens = Math.min(this.rate, bucket.tokens + ((now - bucket.at) * this.rate) / 1000);
    bucket.at = now;
    return bucket;
  }
}
