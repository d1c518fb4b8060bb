import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { InstanceBus } from '../database/instance-bus/instance-bus';
import { DEPLOYMENTS_CHANNEL } from '../deployments/deployment-events';
import { DeploymentRecordsService } from '../deployments/deployment-records.module';
import type { GroupCounts, LiveEvent } from './live-event';
import { LiveEvents, type LiveListener } from './live-events';
import { LIVE_TIMING, type LiveTiming } from './live-timing';

/** One product whose groups' counts this instance follows for its streams. */
interface Watched {
  listener: LiveListener;
  streams: Set<LiveListener>;
  dirty: boolean;
  timer: NodeJS.Timeout | null;
  running: boolean;
  lastRunAt: number;
  lastDurationMs: number;
  /** The counts last delivered, by group name (a snapshot for streams that open later). */
  delivered: Map<string, GroupCounts>;
}

/**
 * The `deployment_group.counts` events. Counts are aggregates over a group's devices (a statement, not an event
 * a device sends), so each instance computes them for the products its streams follow, and only when they may
 * have changed: an update event of the product (a device's update started, progressed, completed or failed),
 * a poke of one of its groups on the instance bus (a membership or a setting changed), and every
 * `countsRefreshMs` (penalty boxes expire without anyone saying so). One statement per product for all its
 * groups, at most every `countsMinMs` (never more often than five times what the last one took, so that a
 * million-device group is not counted back to back), and an event only for a group whose counts differ from what
 * was delivered. A stream gets the latest counts of every group when it starts.
 */
@Injectable()
export class DeploymentCountsWatcher implements OnApplicationShutdown {
  private readonly logger = new Logger('LiveEvents');
  private readonly watched = new Map<string, Watched>();
  /** Which product each group seen belongs to (pokes name a group). */
  private readonly groupProducts = new Map<string, string>();
  private refreshTimer: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(
    private readonly live: LiveEvents,
    private readonly deployments: DeploymentRecordsService,
    bus: InstanceBus,
    @Inject(LIVE_TIMING) private readonly timing: LiveTiming,
  ) {
    bus.subscribe(DEPLOYMENTS_CHANNEL, (payload) => this.onPoke(payload));
  }

  onApplicationShutdown(): void {
    this.stopped = true;
    if (this.refreshTimer) clearInterval(this.refreshTimer);
    for (const watched of this.watched.values()) if (watched.timer) clearTimeout(watched.timer);
  }

  /** Follows the product's counts for `stream` (which gets the latest known at once); answers the way to stop. */
  async watch(productId: string, stream: LiveListener): Promise<() => void> {
    let watched = this.watched.get(productId);
    if (!watched) {
      const state: Watched = {
        listener: {
          productId,
          deviceId: null,
          deliver: (event: LiveEvent) => {
            if (event.name === 'device.update') this.changed(productId);
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
        delivered: new Map(),
      };
      watched = state;
      this.watched.set(productId, state);
      await this.live.listen(state.listener);
      this.changed(productId);
      this.refreshTimer ??= setInterval(() => this.refresh(), this.timing.countsRefreshMs);
      this.refreshTimer.unref();
    }
    const state = watched;
    state.streams.add(stream);
    for (const [name, counts] of state.delivered) {
      stream.deliver({ name: 'deployment_group.counts', product: productId, data: { name, counts } });
    }
    return () => this.unwatch(productId, stream);
  }

  private unwatch(productId: string, stream: LiveListener): void {
    const watched = this.watched.get(productId);
    if (!watched?.streams.delete(stream) || watched.streams.size > 0) return;
    this.watched.delete(productId);
    if (watched.timer) clearTimeout(watched.timer);
    this.live.unlisten(watched.listener);
    for (const [group, product] of this.groupProducts)
      if (product === productId) this.groupProducts.delete(group);
    if (this.watched.size === 0 && this.refreshTimer) {
      clearInterval(this.refreshTimer);
      this.refreshTimer = null;
    }
  }

  /** Every product followed, unless it was counted recently for a slow statement (see the class). */
  private refresh(): void {
    const now = Date.now();
    for (const [productId, watched] of this.watched) {
      if (now - watched.lastRunAt >= Math.max(this.timing.countsRefreshMs, 20 * watched.lastDurationMs))
        this.changed(productId);
    }
  }

  private onPoke(payload: string): void {
    if (this.watched.size === 0) return;
    let group: unknown;
    try {
      group = (JSON.parse(payload) as { group?: unknown }).group;
    } catch {
      return;
    }
    const product = this.groupProducts.get(String(group));
    // A group not seen yet (just created): any followed product may be its.
    if (product === undefined) for (const productId of this.watched.keys()) this.changed(productId);
    else this.changed(product);
  }

  /** The product's counts may have changed: counted again when its interval allows. */
  private changed(productId: string): void {
    const watched = this.watched.get(productId);
    if (!watched || this.stopped) return;
    watched.dirty = true;
    if (watched.timer || watched.running) return;
    const interval = Math.max(this.timing.countsMinMs, 5 * watched.lastDurationMs);
    const wait = Math.max(0, watched.lastRunAt + interval - Date.now());
    watched.timer = setTimeout(() => {
      watched.timer = null;
      void this.count(productId, watched);
    }, wait);
    watched.timer.unref();
  }

  private async count(productId: string, watched: Watched): Promise<void> {
    watched.dirty = false;
    watched.running = true;
    const started = Date.now();
    try {
      const groups = await this.deployments.countsOfProduct(productId);
      if (this.watched.get(productId) !== watched) return;
      for (const group of groups) {
        this.groupProducts.set(group.id, productId);
        const before = watched.delivered.get(group.name);
        if (before && JSON.stringify(before) === JSON.stringify(group.counts)) continue;
        watched.delivered.set(group.name, group.counts);
        for (const stream of watched.streams) {
          stream.deliver({
            name: 'deployment_group.counts',
            product: productId,
            data: { name: group.name, counts: group.counts },
          });
        }
      }
      const names = new Set(groups.map((group) => group.name));
      for (const name of watched.delivered.keys()) if (!names.has(name)) watched.delivered.delete(name);
    } catch (err) {
      this.logger.warn({ err, productId }, 'deployment group counts not computed');
    } finally {
      watched.lastRunAt = Date.now();
      watched.lastDurationMs = watched.lastRunAt - started;
      watched.running = false;
      if (watched.dirty) this.changed(productId);
    }
  }
}
