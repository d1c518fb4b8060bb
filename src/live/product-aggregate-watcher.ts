import { Logger, type OnApplicationShutdown } from '@nestjs/common';
import type { LiveEvent } from './live-event';
import type { LiveEvents, LiveListener } from './live-events';

/** How often one product's aggregate may be computed. */
export interface AggregateTiming {
  /** At most this often (and never more often than five times what the last computation took). */
  minMs: number;
  /** Again this often without a sign of change (unless the last computation was slow: twenty times its duration). */
  refreshMs: number;
}

/** One product whose aggregate this instance follows for its streams. */
interface Followed<Snapshot> {
  listener: LiveListener;
  streams: Set<LiveListener>;
  dirty: boolean;
  timer: NodeJS.Timeout | null;
  running: boolean;
  lastRunAt: number;
  lastDurationMs: number;
  /** What was last delivered (kept for streams that open later). */
  snapshot: Snapshot;
}

/**
 * An aggregate of a product (rollout counts, the fleet overview) computed by each instance for the products its
 * streams follow: once for all of a product's streams, only when it may have changed (a live event of the product
 * the subclass cares about, a lost event, `changed()` called by the subclass, and every `refreshMs`), never more
 * often than `minMs` nor five times what the last computation took (a million-device product is not counted back
 * to back), with events only for what differs from what was delivered. A stream gets the latest snapshot when it
 * starts.
 */
export abstract class ProductAggregateWatcher<Snapshot, Computed> implements OnApplicationShutdown {
  private readonly logger = new Logger('LiveEvents');
  private readonly followed = new Map<string, Followed<Snapshot>>();
  private refreshTimer: NodeJS.Timeout | null = null;
  private stopped = false;

  protected constructor(
    private readonly live: LiveEvents,
    private readonly timing: AggregateTiming,
    /** What is computed, for the log line when it fails. */
    private readonly what: string,
  ) {}

  /** A product's snapshot before anything was delivered. */
  protected abstract emptySnapshot(): Snapshot;
  /** Whether a live event of the product may change the aggregate. */
  protected abstract affectedBy(event: LiveEvent): boolean;
  /** The aggregate, read from the database. */
  protected abstract compute(productId: string): Promise<Computed>;
  /** The events for what `computed` changes against `snapshot` (which it updates in place or replaces). */
  protected abstract delivered(
    productId: string,
    followed: { snapshot: Snapshot },
    computed: Computed,
  ): LiveEvent[];
  /** The events that bring a new stream up to `snapshot`. */
  protected abstract replay(productId: string, snapshot: Snapshot): LiveEvent[];
  /** Called when no stream follows the product any more. */
  protected forgotten(_productId: string): void {}

  onApplicationShutdown(): void {
    this.stopped = true;
    if (this.refreshTimer) clearInterval(this.refreshTimer);
    for (const followed of this.followed.values()) if (followed.timer) clearTimeout(followed.timer);
  }

  /** Follows the product's aggregate for `stream` (which gets the latest known at once); answers the way to stop. */
  async watch(productId: string, stream: LiveListener): Promise<() => void> {
    let followed = this.followed.get(productId);
    if (!followed) {
      const state: Followed<Snapshot> = {
        listener: {
          productId,
          deviceId: null,
          deliver: (event: LiveEvent) => {
            if (this.affectedBy(event)) this.changed(productId);
          },
          skipped: () => undefined,
          lost: () => this.changed(productId),
        },
        streams: new Set(),
        dirty: false,
        timer: null,
        running: false,
        lastRunAt: 0,
        lastDurationMs: 0,
        snapshot: this.emptySnapshot(),
      };
      followed = state;
      this.followed.set(productId, state);
      await this.live.listen(state.listener);
      this.changed(productId);
      this.refreshTimer ??= setInterval(() => this.refresh(), this.timing.refreshMs);
      this.refreshTimer.unref();
    }
    followed.streams.add(stream);
    for (const event of this.replay(productId, followed.snapshot)) stream.deliver(event);
    return () => this.unwatch(productId, stream);
  }

  /** The products followed now. */
  protected followedProducts(): IterableIterator<string> {
    return this.followed.keys();
  }

  /** The product's aggregate may have changed: computed again when its interval allows. */
  protected changed(productId: string): void {
    const followed = this.followed.get(productId);
    if (!followed || this.stopped) return;
    followed.dirty = true;
    if (followed.timer || followed.running) return;
    const interval = Math.max(this.timing.minMs, 5 * followed.lastDurationMs);
    const wait = Math.max(0, followed.lastRunAt + interval - Date.now());
    followed.timer = setTimeout(() => {
      followed.timer = null;
      void this.run(productId, followed);
    }, wait);
    followed.timer.unref();
  }

  private unwatch(productId: string, stream: LiveListener): void {
    const followed = this.followed.get(productId);
    if (!followed?.streams.delete(stream) || followed.streams.size > 0) return;
    this.followed.delete(productId);
    if (followed.timer) clearTimeout(followed.timer);
    this.live.unlisten(followed.listener);
    this.forgotten(productId);
    if (this.followed.size === 0 && this.refreshTimer) {
      clearInterval(this.refreshTimer);
      this.refreshTimer = null;
    }
  }

  /** Every product followed, unless it was computed recently for a slow statement. */
  private refresh(): void {
    const now = Date.now();
    for (const [productId, followed] of this.followed) {
      if (now - followed.lastRunAt >= Math.max(this.timing.refreshMs, 20 * followed.lastDurationMs))
        this.changed(productId);
    }
  }

  private async run(productId: string, followed: Followed<Snapshot>): Promise<void> {
    followed.dirty = false;
    followed.running = true;
    const started = Date.now();
    try {
      const computed = await this.compute(productId);
      if (this.followed.get(productId) !== followed) return;
      for (const event of this.delivered(productId, followed, computed)) {
        for (const stream of followed.streams) stream.deliver(event);
      }
    } catch (err) {
      this.logger.warn({ err, productId }, `${this.what} not computed`);
    } finally {
      followed.lastRunAt = Date.now();
      followed.lastDurationMs = followed.lastRunAt - started;
      followed.running = false;
      if (followed.dirty) this.changed(productId);
    }
  }
}
