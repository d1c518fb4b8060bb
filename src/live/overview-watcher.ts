import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { InstanceBus } from '../database/instance-bus/instance-bus';
import { DEPLOYMENTS_CHANNEL } from '../deployments/deployment-events';
import { FleetOverviewService } from '../overview/fleet-overview.service';
import type { LiveEvent, ProductOverviewData } from './live-event';
import { LiveEvents, type LiveListener } from './live-events';
import { LIVE_TIMING, type LiveTiming } from './live-timing';

/** One product whose overview counters this instance follows for its streams. */
interface Watched {
  listener: LiveListener;
  streams: Set<LiveListener>;
  dirty: boolean;
  timer: NodeJS.Timeout | null;
  running: boolean;
  lastRunAt: number;
  lastDurationMs: number;
  /** The counters last delivered, and their JSON (a snapshot for streams that open later). */
  delivered: ProductOverviewData | null;
  deliveredJson: string;
}

/**
 * The `product.overview` events (streams opened with `overview=true`: the console's overview page). The counters
 * are aggregates (counter rows and small indexes: FleetOverviewService.counters), so each instance computes them
 * for the products its streams follow, once for all of that product's streams, and only when they may have
 * changed: a connection or update event of the product, a poke of a deployment group, a lost event, and every
 * `overviewRefreshMs` (health reports, devices created, deleted or changed in bulk say nothing live). At most
 * every `overviewMinMs` and never more often than five times what the last computation took; an event only when
 * the counters differ from what was delivered. A stream gets the latest counters when it starts. Chosen over the
 * page reading the whole overview again on events: see docs/decisions.md, "The live overview".
 */
@Injectable()
export class OverviewWatcher implements OnApplicationShutdown {
  private readonly logger = new Logger('LiveEvents');
  private readonly watched = new Map<string, Watched>();
  private refreshTimer: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(
    private readonly live: LiveEvents,
    private readonly overview: FleetOverviewService,
    bus: InstanceBus,
    @Inject(LIVE_TIMING) private readonly timing: LiveTiming,
  ) {
    bus.subscribe(DEPLOYMENTS_CHANNEL, () => {
      for (const productId of this.watched.keys()) this.changed(productId);
    });
  }

  onApplicationShutdown(): void {
    this.stopped = true;
    if (this.refreshTimer) clearInterval(this.refreshTimer);
    for (const watched of this.watched.values()) if (watched.timer) clearTimeout(watched.timer);
  }

  /** Follows the product's counters for `stream` (which gets the latest known at once); answers the way to stop. */
  async watch(productId: string, stream: LiveListener): Promise<() => void> {
    let watched = this.watched.get(productId);
    if (!watched) {
      const state: Watched = {
        listener: {
          productId,
          deviceId: null,
          deliver: (event: LiveEvent) => {
            if (event.name === 'device.connection' || event.name === 'device.update') this.changed(productId);
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
        delivered: null,
        deliveredJson: '',
      };
      watched = state;
      this.watched.set(productId, state);
      await this.live.listen(state.listener);
      this.changed(productId);
      this.refreshTimer ??= setInterval(() => this.refresh(), this.timing.overviewRefreshMs);
      this.refreshTimer.unref();
    }
    const state = watched;
    state.streams.add(stream);
    if (state.delivered !== null) {
      stream.deliver({ name: 'product.overview', product: productId, data: state.delivered });
    }
    return () => this.unwatch(productId, stream);
  }

  private unwatch(productId: string, stream: LiveListener): void {
    const watched = this.watched.get(productId);
    if (!watched?.streams.delete(stream) || watched.streams.size > 0) return;
    this.watched.delete(productId);
    if (watched.timer) clearTimeout(watched.timer);
    this.live.unlisten(watched.listener);
    if (this.watched.size === 0 && this.refreshTimer) {
      clearInterval(this.refreshTimer);
      this.refreshTimer = null;
    }
  }

  /** Every product followed, unless it was computed recently for a slow statement. */
  private refresh(): void {
    const now = Date.now();
    for (const [productId, watched] of this.watched) {
      if (now - watched.lastRunAt >= Math.max(this.timing.overviewRefreshMs, 20 * watched.lastDurationMs))
        this.changed(productId);
    }
  }

  /** The product's counters may have changed: computed again when its interval allows. */
  private changed(productId: string): void {
    const watched = this.watched.get(productId);
    if (!watched || this.stopped) return;
    watched.dirty = true;
    if (watched.timer || watched.running) return;
    const interval = Math.max(this.timing.overviewMinMs, 5 * watched.lastDurationMs);
    const wait = Math.max(0, watched.lastRunAt + interval - Date.now());
    watched.timer = setTimeout(() => {
      watched.timer = null;
      void this.compute(productId, watched);
    }, wait);
    watched.timer.unref();
  }

  private async compute(productId: string, watched: Watched): Promise<void> {
    watched.dirty = false;
    watched.running = true;
    const started = Date.now();
    try {
      const counters = await this.overview.counters(productId);
      if (this.watched.get(productId) !== watched) return;
      const json = JSON.stringify(counters);
      if (json === watched.deliveredJson) return;
      watched.delivered = counters;
      watched.deliveredJson = json;
      for (const stream of watched.streams) {
        stream.deliver({ name: 'product.overview', product: productId, data: counters });
      }
    } catch (err) {
      this.logger.warn({ err, productId }, 'fleet overview counters not computed');
    } finally {
      watched.lastRunAt = Date.now();
      watched.lastDurationMs = watched.lastRunAt - started;
      watched.running = false;
      if (watched.dirty) this.changed(productId);
    }
  }
}
