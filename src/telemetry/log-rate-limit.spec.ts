import { LogRateLimit } from './log-rate-limit';

describe('LogRateLimit', () => {
  it('allows a burst of 10, then 5 a second, per device', () => {
    const limit = new LogRateLimit();
    const t0 = 1_000_000;
    const burst = Array.from({ length: 12 }, () => limit.hit('1', t0));
    expect(burst.filter(Boolean)).toHaveLength(10);
    expect(limit.hit('2', t0)).toBe(true);
    expect(limit.hit('1', t0 + 200)).toBe(true);
    expect(limit.hit('1', t0 + 200)).toBe(false);
    const second = Array.from({ length: 10 }, (_, i) => limit.hit('1', t0 + 1200 + i));
    expect(second.filter(Boolean)).toHaveLength(5);
  });

  it('forgets only the buckets that have refilled', () => {
    const limit = new LogRateLimit();
    limit.hit('1', 0);
    limit.hit('2', 1500);
    limit.prune(2100);
    expect(limit.size).toBe(1);
    expect(limit.hit('2', 2100)).toBe(true);
  });
});
