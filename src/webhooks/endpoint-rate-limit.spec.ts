import { EndpointRateLimit } from './endpoint-rate-limit';

describe('EndpointRateLimit', () => {
  it("lets a burst of one second's worth through, then the rate; each endpoint has its own", () => {
    let now = 0;
    const limit = new EndpointRateLimit(() => now);
    const taken = Array.from({ length: 8 }, () => limit.take('a', 5));
    expect(taken).toEqual([true, true, true, true, true, false, false, false]);
    expect(limit.take('b', 2)).toBe(true);
    expect(limit.take('b', 2)).toBe(true);
    expect(limit.take('b', 2)).toBe(false);
    expect(limit.exhausted().sort()).toEqual(['a', 'b']);
    expect(limit.nextTokenInMs()).toBe(200);
    now = 200;
    expect(limit.take('a', 5)).toBe(true);
    expect(limit.take('a', 5)).toBe(false);
    expect(limit.exhausted()).toEqual(['a', 'b']);
    now = 10_000;
    expect(limit.exhausted()).toEqual([]);
    expect(limit.nextTokenInMs()).toBeNull();
    expect(Array.from({ length: 6 }, () => limit.take('a', 5)).filter(Boolean)).toHaveLength(5);
  });

  it('a rate of 0: no limit', () => {
    const limit = new EndpointRateLimit();
    expect(Array.from({ length: 1000 }, () => limit.take('a', 0)).every(Boolean)).toBe(true);
    expect(limit.exhausted()).toEqual([]);
  });
});
