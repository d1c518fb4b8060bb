import { Inject, Injectable } from '@nestjs/common';
import { InstanceBus } from '../database/instance-bus/instance-bus';
import { DEPLOYMENTS_CHANNEL } from '../deployments/deployment-events';
import { DeploymentRecordsService } from '../deployments/deployment-records.module';
import type { GroupCounts, LiveEvent } from './live-event';
import { LiveEvents } from './live-events';
import { LIVE_TIMING, type LiveTiming } from './live-timing';
import { ProductAggregateWatcher } from './product-aggregate-watcher';

type GroupsCounts = Awaited<ReturnType<DeploymentRecordsService['countsOfProduct']>>;

/**
 * The `deployment_group.counts` events. Counts are aggregates over a group's devices (a statement, not an event a
 * device sends): one statement per product for all its groups, computed again on an update event of the product
 * (a device's update started, progressed, completed or failed), a poke of one of its groups on the instance bus (a
 * membership or a setting changed), and every `countsRefreshMs` (penalty boxes expire without anyone saying so);
 * an event only for a group whose counts differ from what was delivered. The snapshot is the counts last
 * delivered, by group name.
 */
@Injectable()
export class DeploymentCountsWatcher extends ProductAggregateWatcher<Map<string, GroupCounts>, GroupsCounts> {
  /** Which product each group seen belongs to (pokes name a group). */
  private readonly groupProducts = new Map<string, string>();

  constructor(
    live: LiveEvents,
    private readonly deployments: DeploymentRecordsService,
    bus: InstanceBus,
    @Inject(LIVE_TIMING) timing: LiveTiming,
  ) {
    super(live, { minMs: timing.countsMinMs, refreshMs: timing.countsRefreshMs }, 'deployment group counts');
    bus.subscribe(DEPLOYMENTS_CHANNEL, (payload) => this.onPoke(payload));
  }

  protected emptySnapshot(): Map<string, GroupCounts> {
    return new Map();
  }

  protected affectedBy(event: LiveEvent): boolean {
    return event.name === 'device.update';
  }

  protected compute(productId: string): Promise<GroupsCounts> {
    return this.deployments.countsOfProduct(productId);
  }

  protected delivered(
    productId: string,
    { snapshot }: { snapshot: Map<string, GroupCounts> },
    groups: GroupsCounts,
  ): LiveEvent[] {
    const events: LiveEvent[] = [];
    for (const group of groups) {
      this.groupProducts.set(group.id, productId);
      const before = snapshot.get(group.name);
      if (before && JSON.stringify(before) === JSON.stringify(group.counts)) continue;
      snapshot.set(group.name, group.counts);
      events.push(this.countsEvent(productId, group.name, group.counts));
    }
    const names = new Set(groups.map((group) => group.name));
    for (const name of snapshot.keys()) if (!names.has(name)) snapshot.delete(name);
    return events;
  }

  protected replay(productId: string, snapshot: Map<string, GroupCounts>): LiveEvent[] {
    return [...snapshot].map(([name, counts]) => this.countsEvent(productId, name, counts));
  }

  protected override forgotten(productId: string): void {
    for (const [group, product] of this.groupProducts)
      if (product === productId) this.groupProducts.delete(group);
  }

  private countsEvent(productId: string, name: string, counts: GroupCounts): LiveEvent {
    return { name: 'deployment_group.counts', product: productId, data: { name, counts } };
  }

  private onPoke(payload: string): void {
    const followed = [...this.followedProducts()];
    if (followed.length === 0) return;
    let group: unknown;
    try {
      group = (JSON.parse(payload) as { group?: unknown }).group;
    } catch {
      return;
    }
    const product = this.groupProducts.get(String(group));
    // A group not seen yet (just created): any followed product may be its.
    if (product === undefined) for (const productId of followed) this.changed(productId);
    else this.changed(product);
  }
}
