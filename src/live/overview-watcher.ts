import { Inject, Injectable } from '@nestjs/common';
import { InstanceBus } from '../database/instance-bus/instance-bus';
import { DEPLOYMENTS_CHANNEL } from '../deployments/deployment-events';
import { FleetOverviewService } from '../overview/fleet-overview.service';
import type { LiveEvent, ProductOverviewData } from './live-event';
import { LiveEvents } from './live-events';
import { LIVE_TIMING, type LiveTiming } from './live-timing';
import { ProductAggregateWatcher } from './product-aggregate-watcher';

/** The counters last delivered, and their JSON. */
interface DeliveredOverview {
  counters: ProductOverviewData | null;
  json: string;
}

/**
 * The `product.overview` events (streams opened with `overview=true`: the console's overview page). The counters
 * are aggregates (counter rows and small indexes: FleetOverviewService.counters), computed again on a connection
 * or update event of the product, a poke of a deployment group, and every `overviewRefreshMs` (health reports,
 * devices created, deleted or changed in bulk say nothing live); an event only when they differ from what was
 * delivered. Chosen over the page reading the whole overview again on events: see docs/decisions.md, "The live
 * overview".
 */
@Injectable()
export class OverviewWatcher extends ProductAggregateWatcher<DeliveredOverview, ProductOverviewData> {
  constructor(
    live: LiveEvents,
    private readonly overview: FleetOverviewService,
    bus: InstanceBus,
    @Inject(LIVE_TIMING) timing: LiveTiming,
  ) {
    super(
      live,
      { minMs: timing.overviewMinMs, refreshMs: timing.overviewRefreshMs },
      'fleet overview counters',
    );
    bus.subscribe(DEPLOYMENTS_CHANNEL, () => {
      for (const productId of this.followedProducts()) this.changed(productId);
    });
  }

  protected emptySnapshot(): DeliveredOverview {
    return { counters: null, json: '' };
  }

  protected affectedBy(event: LiveEvent): boolean {
    return event.name === 'device.connection' || event.name === 'device.update';
  }

  protected compute(productId: string): Promise<ProductOverviewData> {
    return this.overview.counters(productId);
  }

  protected delivered(
    productId: string,
    followed: { snapshot: DeliveredOverview },
    counters: ProductOverviewData,
  ): LiveEvent[] {
    const json = JSON.stringify(counters);
    if (json === followed.snapshot.json) return [];
    followed.snapshot = { counters, json };
    return [{ name: 'product.overview', product: productId, data: counters }];
  }

  protected replay(productId: string, snapshot: DeliveredOverview): LiveEvent[] {
    return snapshot.counters === null
      ? []
      : [{ name: 'product.overview', product: productId, data: snapshot.counters }];
  }
}
