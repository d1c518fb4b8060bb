import { EndpointRateLimit } from './endpoint-rate-limit';

describe('EndpointRateLimit', () => {
  it('lets a burst of one second through, then the rate; endpoints are counted apart', () => {
    let now = 0;
    const limit = new EndpointRateLimit(5, () => now);
    const taken = Array.from({ length: 8 }, () => limit.take('a'));
    expect(taken).toEqual([true, true, true, true, true, false, false, false]);
    expect(limit.take('b')).toBe(true);
    expect(limit.exhausted()).toEqual(['a']);
    expect(limit.nextTokenInMs()).toBe(200);
    now = 200;
    expect(limit.take('a')).toBe(true);
    expect(limit.take('a')).toBe(false);
    now = 10_000;
    expect(limit.exhausted()).toEqual([]);
    expect(limit.nextTokenInMs()).toBeNull();
    expect(Array.from({ length: 6 }, () => limit.take('a')).filter(Boolean)).toHaveLength(5);
  });

  it('0: no limit', () => {
    const limit = new EndpointRateLimit(0);
    expect(Array.from({ length: 1000 }, () => limit.take('a')).every(Boolean)).toBe(true);
    expect(limit.exhausted()).toEqual([]);
  });
});
