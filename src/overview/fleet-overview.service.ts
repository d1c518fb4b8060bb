import { Injectable } from '@nestjs/common';
import type { OrgAccess } from '../common/auth/actor';
import { ProductsService } from '../products/products.service';
import type { FleetOverviewQuery } from './dto/fleet-overview.query';
import type { FleetCountersView, FleetOverviewView } from './dto/fleet-overview.view';
import { type CountersRow, type FleetCount, FleetOverviewRepository } from './fleet-overview.repository';

export type { FleetCount } from './fleet-overview.repository';

/** "Connected over time" answers at most about this many points, whatever the range. */
const MAX_POINTS = 360;
/** Samples are taken once a minute: no point covers less. */
const SAMPLE_SECONDS = 60;

/** The seconds each point of a range of `hours` covers: whole minutes, at most MAX_POINTS points. */
export function bucketSeconds(hours: number): number {
  const minutes = Math.ceil((hours * 3600) / MAX_POINTS / SAMPLE_SECONDS);
  return Math.max(1, minutes) * SAMPLE_SECONDS;
}

const count = (value: string | number | null | undefined): number => Number(value ?? 0);

/**
 * A product's fleet at a glance (beyond NervesHub): devices connected now and over time, firmware versions,
 * rollouts in progress, devices with health alarms. Every number comes from the server's counters and indexes
 * (FleetOverviewRepository), never from paging through devices.
 */
@Injectable()
export class FleetOverviewService {
  constructor(
    private readonly overview: FleetOverviewRepository,
    private readonly products: ProductsService,
  ) {}

  /**
   * The overview's counters of a product (its internal id), for the live `product.overview` event: counter rows
   * and indexes only, no history, no alarmed device named.
   */
  async counters(productId: string): Promise<FleetCountersView> {
    return countersView(await this.overview.counters(productId));
  }

  /**
   * How many of a product's devices (its internal id) have this connection status, this firmware version, or
   * health alarms (or none), from the counter rows: what the device list's total is when that is its only filter.
   */
  devicesCounted(productId: string, what: FleetCount): Promise<number> {
    return this.overview.countDevices(productId, what);
  }

  async show(
    access: OrgAccess,
    productName: string,
    query: FleetOverviewQuery,
    now = new Date(),
  ): Promise<{ data: FleetOverviewView }> {
    const product = await this.products.findInOrg(access, productName);
    const from = new Date(now.getTime() - query.hours * 3_600_000);
    const interval = bucketSeconds(query.hours);
    const [row, samples] = await Promise.all([
      this.overview.overview(product.id),
      this.overview.samples(product.id, from, interval),
    ]);
    const counters = countersView(row);
    return {
      data: {
        devices: counters.devices,
        connected_history: {
          from: from.toISOString(),
          interval_seconds: interval,
          points: samples.map((s) => ({ at: s.at.toISOString(), connected: s.connected, total: s.total })),
        },
        firmware: counters.firmware,
        rollouts: counters.rollouts,
        manual_updates: counters.manual_updates,
        health_alarms: {
          devices: row.alarmed,
          first: (row.alarmed_devices ?? []).map((a) => ({
            identifier: a.identifier,
            alarm_count: a.alarm_count,
            status: a.status,
          })),
        },
      },
    };
  }
}

/** The counters of an overview row as the API shows them. */
function countersView(row: CountersRow): FleetCountersView {
  const connected = count(row.connection?.connected);
  const disconnected = count(row.connection?.disconnected);
  const notSeen = count(row.connection?.not_seen);
  const total = connected + disconnected + notSeen;
  const versions = (row.versions ?? []).map((v) => ({ version: v.version, devices: count(v.devices) }));
  const listed = versions.reduce((sum, v) => sum + v.devices, 0);
  const versioned = count(row.versioned);
  return {
    devices: { total, connected, disconnected, not_seen: notSeen },
    firmware: {
      versions,
      other_devices: versioned - listed,
      other_versions: count(row.version_count) - versions.length,
      unknown: total - versioned,
    },
    rollouts: (row.rollouts ?? []).map((r) => ({
      deployment_group: r.name,
      firmware_version: r.firmware_version,
      release_number: r.release_number,
      is_active: r.is_active,
      updating: r.updating,
      concurrent_updates: r.concurrent_updates,
      paused_reason: r.paused_reason,
      paused_at: r.paused_at === null ? null : new Date(r.paused_at).toISOString(),
    })),
    manual_updates: row.manual_updates,
    health_alarms: { devices: row.alarmed },
  };
}
