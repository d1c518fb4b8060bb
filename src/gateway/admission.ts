/**
 * Which waiting work a free slot goes to:
 * - `connected`: work of a socket that is already upgraded (the `device` join). First, so that a storm of new
 *   handshakes never delays a device that got in (NervesHubLink drops a socket whose heartbeat, which waits behind
 *   the join, goes unanswered for 30 s), and so that work already paid for is finished before more is started.
 * - `handshake`: authentication before an upgrade, each with a deadline (see `handshake`).
 * - `background`: work no device waits for (identity reports). Never more than one at a time while other work
 *   waits, so that a storm passes first, but never starved either.
 */
export type AdmissionLane = 'connected' | 'handshake' | 'background';

/** A handshake that could not start before its deadline: answered "busy, retry later" instead of served late. */
export class AdmissionRefused extends Error {
  constructor(
    /** `shed`: refused on arrival, the handshakes ahead being predicted to take past its deadline; `late`: its deadline passed while it waited. */
    readonly reason: 'shed' | 'late',
    /** Seconds until the handshakes queued now are expected to have started (at least 1, at most 60). */
    readonly retryAfterS: number,
  ) {
    super(`handshake ${reason}: the server is busy`);
  }
}

export interface AdmissionOptions {
  /** How long a handshake may wait for its turn. */
  maxHandshakeWaitMs: number;
  /** The clock deadlines are measured on (milliseconds). */
  now?: () => number;
}

/**
 * The start rate is an average over about this much time (older intervals weigh exponentially less): long next
 * to one pause (a collection, the process waiting for a core, a burst of joins), short next to a storm.
 */
const RATE_WINDOW_MS = 10_000;
/** Observation (starts and time, with handshakes queued) before the rate is used to refuse handshakes on arrival. */
const MIN_OBSERVED_STARTS = 8;
const MIN_OBSERVED_MS = 1_000;

interface Waiter {
  readonly lane: AdmissionLane;
  readonly queuedAt: number;
  /** Handshakes only. */
  readonly deadline: number;
  start(): void;
  refuse(err: AdmissionRefused): void;
}

/** A first-in first-out queue that does not shift its array on every take. */
class Fifo<T> {
  private items: (T | undefined)[] = [];
  private head = 0;

  get length(): number {
    return this.items.length - this.head;
  }

  peek(): T | undefined {
    return this.items[this.head];
  }

  push(item: T): void {
    this.items.push(item);
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head];
    this.items[this.head++] = undefined;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }
}

/**
 * At most `limit` tasks at a time; the others wait in memory (not in the database pool, whose wait times out), by
 * lane (see AdmissionLane), in arrival order within a lane.
 *
 * Handshakes have a deadline (`maxHandshakeWaitMs` after arrival). One whose deadline passes while it waits is
 * refused (`late`) instead of being served after its time; one that arrives behind more handshakes than can start
 * before its deadline, at the rate they have been starting, is refused at once (`shed`), so that its device backs
 * off and comes back instead of waiting for nothing. The rate is measured only while handshakes queue (intervals
 * between starts of queued handshakes, over the last ten seconds or so), so it reflects what the server manages
 * under the current load, joins and the machine's other work included.
 */
export class Admission {
  private running = 0;
  private backgroundRunning = 0;
  private readonly lanes: Record<AdmissionLane, Fifo<Waiter>> = {
    connected: new Fifo(),
    handshake: new Fifo(),
    background: new Fifo(),
  };
  /** Starts of queued handshakes and the time they took, both decayed with age: their ratio is the rate. */
  private observedStarts = 0;
  private observedMs = 0;
  private lastHandshakeStart: number | null = null;
  private expiryTimer: NodeJS.Timeout | null = null;
  private readonly now: () => number;
  readonly maxHandshakeWaitMs: number;

  constructor(
    readonly limit: number,
    options: AdmissionOptions,
  ) {
    if (!Number.isInteger(limit) || limit < 1) throw new Error('admission limit must be a positive integer');
    this.maxHandshakeWaitMs = options.maxHandshakeWaitMs;
    this.now = options.now ?? Date.now;
  }

  /** Tasks running now. */
  get active(): number {
    return this.running;
  }

  /** Tasks waiting for their turn, in every lane or in one. */
  queued(lane?: AdmissionLane): number {
    if (lane) return this.lanes[lane].length;
    return this.lanes.connected.length + this.lanes.handshake.length + this.lanes.background.length;
  }

  /**
   * The expected wait of a handshake arriving now, from the measured start rate (null until it is known). Zero
   * while slots are free.
   */
  expectedHandshakeWaitMs(): number | null {
    if (this.running < this.limit) return 0;
    const interval = this.startInterval();
    return interval === null ? null : (this.lanes.handshake.length + 1) * interval;
  }

  /** The average time between two starts of queued handshakes, once enough of it was observed. */
  private startInterval(): number | null {
    if (this.observedStarts < MIN_OBSERVED_STARTS || this.observedMs < MIN_OBSERVED_MS) return null;
    return this.observedMs / this.observedStarts;
  }

  /** Runs a task of an upgraded socket (`connected`, the default) or one nobody waits for (`background`). */
  run<T>(task: () => Promise<T>, lane: 'connected' | 'background' = 'connected'): Promise<T> {
    return this.enter(lane, Infinity, task);
  }

  /**
   * Runs a handshake's task if its turn comes within `maxHandshakeWaitMs`; otherwise rejects with AdmissionRefused
   * (without running it).
   */
  handshake<T>(task: () => Promise<T>): Promise<T> {
    const now = this.now();
    const deadline = now + this.maxHandshakeWaitMs;
    const expected = this.expectedHandshakeWaitMs();
    if (expected !== null && now + expected > deadline) {
      return Promise.reject(new AdmissionRefused('shed', this.retryAfterS()));
    }
    return this.enter('handshake', deadline, task);
  }

  private async enter<T>(lane: AdmissionLane, deadline: number, task: () => Promise<T>): Promise<T> {
    if (this.running < this.limit) {
      this.running++;
      if (lane === 'background') this.backgroundRunning++;
      if (lane === 'handshake') this.lastHandshakeStart = this.now();
    } else {
      await new Promise<void>((start, refuse) => {
        this.lanes[lane].push({ lane, queuedAt: this.now(), deadline, start, refuse });
        if (lane === 'handshake') this.armExpiry();
      });
    }
    try {
      return await task();
    } finally {
      if (lane === 'background') this.backgroundRunning--;
      this.release();
    }
  }

  /** Hands the slot to the next waiting task (the count stays), or frees it. */
  private release(): void {
    const next = this.next();
    if (!next) {
      this.running--;
      return;
    }
    if (next.lane === 'background') this.backgroundRunning++;
    next.start();
  }

  private next(): Waiter | undefined {
    const { connected, handshake, background } = this.lanes;
    if (background.length > 0 && this.backgroundRunning === 0) return background.shift();
    if (connected.length > 0) return connected.shift();
    this.refuseExpired();
    const waiter = handshake.shift();
    if (waiter) {
      this.observeStart(waiter);
      return waiter;
    }
    return background.shift();
  }

  /** The interval since the previous handshake start counts when this one waited all through it. */
  private observeStart(waiter: Waiter): void {
    const now = this.now();
    if (this.lastHandshakeStart !== null && waiter.queuedAt <= this.lastHandshakeStart) {
      const elapsed = now - this.lastHandshakeStart;
      const decay = Math.exp(-elapsed / RATE_WINDOW_MS);
      this.observedStarts = this.observedStarts * decay + 1;
      this.observedMs = this.observedMs * decay + elapsed;
    }
    this.lastHandshakeStart = now;
  }

  /** Handshakes queue in deadline order (one wait for all): the expired ones are at the head. */
  private refuseExpired(): void {
    const { handshake } = this.lanes;
    const now = this.now();
    while ((handshake.peek()?.deadline ?? Infinity) < now) {
      handshake.shift()!.refuse(new AdmissionRefused('late', this.retryAfterS()));
    }
  }

  /** A deadline passes even when no slot frees (a hung database): a timer refuses the handshakes then. */
  private armExpiry(): void {
    if (this.expiryTimer) return;
    const head = this.lanes.handshake.peek();
    if (!head) return;
    this.expiryTimer = setTimeout(
      () => {
        this.expiryTimer = null;
        this.refuseExpired();
        this.armExpiry();
      },
      Math.max(0, head.deadline - this.now()) + 1,
    );
    this.expiryTimer.unref();
  }

  private retryAfterS(): number {
    const ms = Math.round(this.lanes.handshake.length * (this.startInterval() ?? 0));
    return Math.min(60, Math.max(1, Math.ceil(ms / 1000)));
  }
}
