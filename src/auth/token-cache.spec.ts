import { performance } from 'node:perf_hooks';
import type { EntityManager } from 'typeorm';
import type { Actor } from '../common/auth/actor';
import type { InstanceBus } from '../database/instance-bus/instance-bus';
import { EVICTION_WAIT_MS, TOKENS_CHANNEL, TokenCache, TRUST_WINDOW_MS } from './token-cache';

/** The parts of InstanceBus the cache uses, driven by hand. */
class FakeBus {
  listening = true;
  caughtUpAt = performance.now();
  listenerPid: number | null = 4242;
  readonly answers: unknown[] = [];
  readonly published: { channel: string; payload: string; tx: unknown }[] = [];
  private handler: ((payload: string) => void) | null = null;
  private readonly stateHandlers: ((listening: boolean) => void)[] = [];

  subscribe(channel: string, handler: (payload: string) => void): void {
    expect(channel).toBe(TOKENS_CHANNEL);
    this.handler = handler;
  }
  onStateChange(handler: (listening: boolean) => void): void {
    this.stateHandlers.push(handler);
  }
  publishFromListener(channel: string, payload: string): void {
    expect(channel).toBe(TOKENS_CHANNEL);
    this.answers.push(JSON.parse(payload));
  }
  async publish(channel: string, payload: string, tx: unknown): Promise<void> {
    this.published.push({ channel, payload, tx });
  }
  /** The listeners the transaction sees (the fake transactions below answer them). */
  async listenerPids(tx: EntityManager): Promise<number[]> {
    const rows: { pid: number }[] = await tx.query('listeners');
    return rows.map((row) => row.pid);
  }
  deliver(message: unknown): void {
    this.handler!(JSON.stringify(message));
  }
  setListening(listening: boolean): void {
    this.listening = listening;
    for (const handler of this.stateHandlers) handler(listening);
  }
}

const actor = (tokenId: string): Actor => ({
  userId: '1',
  email: 'ada@example.com',
  username: 'ada',
  name: 'Ada',
  tokenId,
  scope: 'all',
});

function setup() {
  const bus = new FakeBus();
  const cache = new TokenCache(bus as unknown as InstanceBus);
  const put = (key: string, tokenId: string, expiresAt: Date | null = null) =>
    cache.put(key, cache.startLookup(), actor(tokenId), expiresAt);
  return { bus, cache, put };
}

describe('token cache', () => {
  it('answers a cached token while the bus is listening and has caught up recently', () => {
    const { bus, cache, put } = setup();
    put('k1', '1');
    expect(cache.get('k1')).toEqual(actor('1'));
    bus.caughtUpAt = performance.now() - TRUST_WINDOW_MS - 1;
    expect(cache.get('k1')).toBeUndefined();
    bus.caughtUpAt = performance.now();
    expect(cache.get('k1')).toEqual(actor('1'));
  });

  it('never answers an expired token', () => {
    const { cache, put } = setup();
    put('k1', '1', new Date(Date.now() - 1));
    expect(cache.get('k1')).toBeUndefined();
  });

  it('drops everything when the bus stops listening, and caches nothing until it listens again', () => {
    const { bus, cache, put } = setup();
    put('k1', '1');
    bus.setListening(false);
    expect(cache.get('k1')).toBeUndefined();
    put('k2', '2');
    expect(cache.get('k2')).toBeUndefined();
    bus.setListening(true);
    expect(cache.get('k1')).toBeUndefined();
    put('k3', '3');
    expect(cache.get('k3')).toEqual(actor('3'));
  });

  it('does not cache a lookup during which the bus went deaf, even if it is back', () => {
    const { bus, cache } = setup();
    const lookup = cache.startLookup();
    bus.setListening(false);
    bus.setListening(true);
    cache.put('k1', lookup, actor('1'), null);
    expect(cache.get('k1')).toBeUndefined();
  });

  it('evicts the revoked tokens only, and answers the revocation with its listener pid', () => {
    const { bus, cache, put } = setup();
    put('k1', '1');
    put('k2', '2');
    bus.deliver({ kind: 'revoked', revocation: 'r1', tokens: ['1'] });
    expect(cache.get('k1')).toBeUndefined();
    expect(cache.get('k2')).toEqual(actor('2'));
    expect(bus.answers).toEqual([{ kind: 'evicted', revocation: 'r1', pid: 4242 }]);
  });

  it('does not cache a lookup during which a revocation arrived (it may have read the token before it)', () => {
    const { bus, cache } = setup();
    const lookup = cache.startLookup();
    bus.deliver({ kind: 'revoked', revocation: 'r1', tokens: ['1'] });
    cache.put('k1', lookup, actor('1'), null);
    expect(cache.get('k1')).toBeUndefined();
  });

  it('ignores messages that are not its own', () => {
    const { bus, cache, put } = setup();
    put('k1', '1');
    for (const message of ['nope', { kind: 'revoked', tokens: ['1'] }, { kind: 'other', revocation: 'r' }]) {
      bus.deliver(message);
    }
    expect(cache.get('k1')).toEqual(actor('1'));
    expect(bus.answers).toEqual([]);
  });
});

describe('pending revocation', () => {
  afterEach(() => jest.useRealTimers());

  function fakeTx(pids: number[]) {
    return { query: jest.fn(async () => pids.map((pid) => ({ pid }))) } as unknown as EntityManager;
  }

  it('publishes inside the transaction and resolves once every listener of that moment has answered', async () => {
    const { bus, cache } = setup();
    const revocation = cache.startRevocation();
    const tx = fakeTx([11, 12]);
    await revocation.publish(tx, ['7']);
    expect(bus.published).toEqual([
      {
        channel: TOKENS_CHANNEL,
        payload: JSON.stringify({ kind: 'revoked', revocation: revocation.id, tokens: ['7'] }),
        tx,
      },
    ]);
    bus.deliver({ kind: 'evicted', revocation: revocation.id, pid: 11 });
    const evicted = revocation.evicted();
    bus.deliver({ kind: 'evicted', revocation: 'another', pid: 12 });
    let settled = false;
    void evicted.then(() => (settled = true));
    await Promise.resolve();
    expect(settled).toBe(false);
    bus.deliver({ kind: 'evicted', revocation: revocation.id, pid: 12 });
    await expect(evicted).resolves.toEqual([]);
  });

  it('gives up after EVICTION_WAIT_MS, naming the listeners that did not answer', async () => {
    jest.useFakeTimers();
    const { bus, cache } = setup();
    const revocation = cache.startRevocation();
    await revocation.publish(fakeTx([11, 12]), ['7']);
    const evicted = revocation.evicted();
    bus.deliver({ kind: 'evicted', revocation: revocation.id, pid: 12 });
    jest.advanceTimersByTime(EVICTION_WAIT_MS);
    await expect(evicted).resolves.toEqual([11]);
  });

  it('is at least as long as the trust window', () => {
    expect(EVICTION_WAIT_MS).toBeGreaterThan(TRUST_WINDOW_MS);
  });
});
