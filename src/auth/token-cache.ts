import { Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type { EntityManager } from 'typeorm';
import type { Actor } from '../common/auth/actor';
import { InstanceBus } from '../database/instance-bus/instance-bus';

/** Token revocations, and every listener's answer that it has evicted the tokens. */
export const TOKENS_CHANNEL = 'fleethub_tokens';
const CACHE_TTL_MS = 5_000;
const CACHE_MAX_ENTRIES = 10_000;
/** A cached token is trusted only while the bus has caught up within this long. */
export const TRUST_WINDOW_MS = 2_000;
/**
 * How long a revocation waits for the listeners' answers. At least TRUST_WINDOW_MS: by the time a revocation
 * returns unanswered, a listener that did not answer has stopped trusting its cache (docs/decisions.md).
 */
export const EVICTION_WAIT_MS = 2_500;

const logger = new Logger('TokenCache');

/** Publishes, inside the revoking transaction, the ids of the tokens (or sessions) it revokes. */
export type PublishRevocation = (tx: EntityManager, tokenIds: string[]) => Promise<void>;

type TokenMessage =
  | { kind: 'revoked'; revocation: string; tokens: string[] }
  | { kind: 'evicted'; revocation: string; pid: number };

interface CachedToken {
  actor: Actor;
  expiresAt: number | null;
  cachedUntil: number;
}

/** A revocation in progress: publish it inside the revoking transaction, then wait for the listeners. */
export class PendingRevocation {
  readonly id = randomUUID();
  private readonly answered = new Set<number>();
  private listeners: number[] = [];
  private settle: (() => void) | null = null;

  constructor(
    private readonly bus: InstanceBus,
    private readonly end: () => void,
  ) {}

  /** NOTIFYs every instance inside `tx` (delivered when it commits) and notes which listeners must answer. */
  async publish(tx: EntityManager, tokenIds: string[]): Promise<void> {
    this.listeners = await this.bus.listenerPids(tx);
    const message: TokenMessage = { kind: 'revoked', revocation: this.id, tokens: tokenIds };
    await this.bus.publish(TOKENS_CHANNEL, JSON.stringify(message), tx);
  }

  /**
   * After the commit: resolves once every listener that existed at publication has evicted the tokens, or after
   * EVICTION_WAIT_MS, with the pids of the listeners that did not answer.
   */
  evicted(): Promise<number[]> {
    return new Promise((resolve) => {
      const finish = () => {
        clearTimeout(timer);
        this.settle = null;
        this.end();
        resolve(this.listeners.filter((pid) => !this.answered.has(pid)));
      };
      const timer = setTimeout(finish, EVICTION_WAIT_MS);
      this.settle = () => {
        if (this.listeners.every((pid) => this.answered.has(pid))) finish();
      };
      this.settle();
    });
  }

  /** Forgets the revocation (it was not committed, or it is over). */
  cancel(): void {
    this.end();
  }

  answer(pid: number): void {
    this.answered.add(pid);
    this.settle?.();
  }
}

/**
 * Verified tokens, cached in memory by the hash of the token for a few seconds so that a burst of requests costs
 * one lookup. A cached token is answered only while it cannot have been revoked behind the cache's back:
 * - every revocation is NOTIFYed in its transaction; each instance evicts the tokens and answers, and the
 *   revocation returns once every listener has answered (PendingRevocation);
 * - while the bus is not listening, nothing is cached or answered from the cache, and everything cached before
 *   is dropped; a lookup that spans a revocation or a change of the bus is not cached;
 * - an entry is answered only if the bus has caught up within TRUST_WINDOW_MS (a listener that stopped hearing
 *   without noticing stops trusting its cache before an unanswered revocation returns).
 */
@Injectable()
export class TokenCache {
  private readonly entries = new Map<string, CachedToken>();
  /** Moves whenever cached entries may have gone stale; a lookup that spans a move is not cached. */
  private generation = 0;
  private readonly pending = new Map<string, PendingRevocation>();
  private readonly revokedHandlers: ((tokenIds: ReadonlySet<string>) => void)[] = [];

  constructor(private readonly bus: InstanceBus) {
    bus.subscribe(TOKENS_CHANNEL, (payload) => this.onMessage(payload));
    bus.onStateChange(() => {
      this.generation++;
      this.entries.clear();
    });
  }

  /** The cached caller for a token hash, when the entry is live and can be trusted. */
  get(key: string): Actor | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    const now = Date.now();
    if (entry.cachedUntil <= now || (entry.expiresAt !== null && entry.expiresAt <= now)) return undefined;
    if (performance.now() - this.bus.caughtUpAt > TRUST_WINDOW_MS) return undefined;
    return entry.actor;
  }

  /** Call before reading a token from the database; pass the result to put(). */
  startLookup(): number {
    return this.bus.listening ? this.generation : -1;
  }

  put(key: string, lookup: number, actor: Actor, expiresAt: Date | null): void {
    if (lookup !== this.generation || !this.bus.listening) return;
    if (this.entries.size >= CACHE_MAX_ENTRIES) this.entries.clear();
    this.entries.set(key, {
      actor,
      expiresAt: expiresAt ? expiresAt.getTime() : null,
      cachedUntil: Date.now() + CACHE_TTL_MS,
    });
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  /**
   * Calls `handler` on every instance with the ids (actors' `tokenId`s) of every revocation, once this instance
   * has evicted them: what holds a request open for a caller (an event stream) ends it.
   */
  onRevoked(handler: (tokenIds: ReadonlySet<string>) => void): void {
    this.revokedHandlers.push(handler);
  }

  /**
   * A revocation from start to end: `commit(publish)` runs the revoking transaction and calls `publish` in it
   * with the ids it revokes; once it has committed, waits until every instance has evicted them (or could no
   * longer trust its cache: their instances stop within TRUST_WINDOW_MS of losing touch, docs/decisions.md).
   * Nothing is waited for when the transaction fails or publishes nothing. `what` names it in the log.
   */
  async revoke<T>(commit: (publish: PublishRevocation) => Promise<T>, what: string): Promise<T> {
    const revocation = this.startRevocation();
    let published = false;
    let result: T;
    try {
      result = await commit(async (tx, tokenIds) => {
        published = true;
        await revocation.publish(tx, tokenIds);
      });
    } catch (err) {
      revocation.cancel();
      throw err;
    }
    if (!published) {
      revocation.cancel();
      return result;
    }
    const unanswered = await revocation.evicted();
    if (unanswered.length > 0)
      logger.warn({ listenerPids: unanswered }, `${what} not confirmed by every instance`);
    return result;
  }

  /** Starts a revocation: its answers are collected from now on, so none can be missed. */
  startRevocation(): PendingRevocation {
    const revocation: PendingRevocation = new PendingRevocation(this.bus, () =>
      this.pending.delete(revocation.id),
    );
    this.pending.set(revocation.id, revocation);
    return revocation;
  }

  private onMessage(payload: string): void {
    const message = parseMessage(payload);
    if (!message) return;
    if (message.kind === 'evicted') {
      this.pending.get(message.revocation)?.answer(message.pid);
      return;
    }
    const revoked = new Set(message.tokens);
    this.generation++;
    for (const [key, entry] of this.entries) {
      if (revoked.has(entry.actor.tokenId)) this.entries.delete(key);
    }
    for (const handler of this.revokedHandlers) {
      try {
        handler(revoked);
      } catch {
        // A handler's failure must not keep the eviction from being answered.
      }
    }
    const pid = this.bus.listenerPid;
    if (pid === null) return;
    const answer: TokenMessage = { kind: 'evicted', revocation: message.revocation, pid };
    this.bus.publishFromListener(TOKENS_CHANNEL, JSON.stringify(answer));
  }
}

function parseMessage(payload: string): TokenMessage | null {
  try {
    const value = JSON.parse(payload) as Partial<Record<string, unknown>>;
    if (typeof value !== 'object' || value === null || typeof value.revocation !== 'string') return null;
    if (
      value.kind === 'revoked' &&
      Array.isArray(value.tokens) &&
      value.tokens.every((t) => typeof t === 'string')
    ) {
      return value as TokenMessage;
    }
    if (value.kind === 'evicted' && typeof value.pid === 'number') return value as TokenMessage;
    return null;
  } catch {
    return null;
  }
}
