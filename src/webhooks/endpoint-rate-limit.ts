interface Bucket {
  rate: number;
  tokens: number;
  at: number;
}

/**
 * Deliveries per second per endpoint, on one instance: a token bucket per webhook holding at most one second's
 * worth (`rate` tokens, refilled continuously), so an endpoint gets bursts of at most `rate` and `rate` per second
 * after that. Each webhook's rate comes with its deliveries (its own, or the server's default); 0 means no limit.
 */
export class EndpointRateLimit {
  private readonly buckets = new Map<string, Bucket>();

  constructor(private readonly now: () => number = Date.now) {}

  /** Takes one delivery's token for the endpoint: false when it has none now (the delivery waits). */
  take(webhookId: string, rate: number): boolean {
    if (rate <= 0) {
      this.buckets.delete(webhookId);
      return true;
    }
    const bucket = this.refilled(webhookId, rate);
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  }

  /** The endpoints without a token now: the claim skips their deliveries. */
  exhausted(): string[] {
    const empty: string[] = [];
    for (const [id, bucket] of [...this.buckets]) {
      this.refill(bucket);
      if (bucket.tokens < 1) empty.push(id);
      // A full bucket is the state of an endpoint never seen: forgotten, so the map holds only recent ones.
      else if (bucket.tokens >= bucket.rate) this.buckets.delete(id);
    }
    return empty;
  }

  /** Milliseconds until an exhausted endpoint has a token again (null: none is exhausted). */
  nextTokenInMs(): number | null {
    let soonest: number | null = null;
    for (const bucket of this.buckets.values()) {
      this.refill(bucket);
      if (bucket.tokens >= 1) continue;
      const wait = Math.ceil(((1 - bucket.tokens) * 1000) / bucket.rate);
      soonest = soonest === null ? wait : Math.min(soonest, wait);
    }
    return soonest;
  }

  private refilled(webhookId: string, rate: number): Bucket {
    const bucket = this.buckets.get(webhookId);
    if (!bucket) {
      const fresh = { rate, tokens: rate, at: this.now() };
      this.buckets.set(webhookId, fresh);
      return fresh;
    }
    // A changed rate applies from now; the tokens held stay within it.
    bucket.rate = rate;
    this.refill(bucket);
    return bucket;
  }

  private refill(bucket: Bucket): void {
    const now = this.now();
    bucket.tokens = Math.min(bucket.rate, bucket.tokens + ((now - bucket.at) * bucket.rate) / 1000);
    bucket.at = now;
  }
}
