import { Injectable, type OnModuleDestroy } from '@nestjs/common';
import type { Request, Response } from 'express';
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { DatabasePool, type PoolCounts } from '../database/database-pool';
import { DeviceRecordsService } from '../devices/device-records.service';
import { FirmwareRecordsService } from '../firmware/firmware-records.service';
import { RouteDurationHistogram } from './route-duration-histogram';

/**
 * Prometheus metrics of this process, in a registry of its own (not prom-client's global one, so that several
 * apps in one process, as in the tests, do not collide). Database-backed gauges are read at scrape time.
 */
@Injectable()
export class MetricsService implements OnModuleDestroy {
  readonly registry = new Registry();
  readonly httpDuration: RouteDurationHistogram;
  readonly deviceHandshakesRefused: Counter<'reason'>;
  private connectedOverride: number | null = null;
  private deviceConnectQueue: () => Record<string, number> = () => ({});

  constructor(
    private readonly pool: DatabasePool,
    private readonly devices: DeviceRecordsService,
    private readonly firmwares: FirmwareRecordsService,
  ) {
    collectDefaultMetrics({ register: this.registry });
    this.httpDuration = new RouteDurationHistogram(
      'fleethub_http_request_duration_seconds',
      'HTTP request duration, by route template, method and status',
      [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      this.registry,
    );
    // Each gauge reads its value when scraped (prom-client calls `collect` before rendering).
    const gauge = (name: string, help: string, read: () => number | Promise<number> | undefined) => {
      const metric: Gauge = new Gauge({
        name,
        help,
        registers: [this.registry],
        collect: async () => {
          const value = await read();
          if (value !== undefined) metric.set(value);
        },
      });
    };
    gauge(
      'fleethub_connected_devices',
      "Devices whose connection_status is 'connected' (or the value last given to setConnectedDevices)",
      () => this.connectedOverride ?? this.count(() => this.devices.countConnected()),
    );
    gauge('fleethub_pending_updates', 'Manual upgrades recorded and not yet completed by their device', () =>
      this.count(() => this.firmwares.countPendingUpdates()),
    );
    const poolGauge = (name: string, help: string, read: (pool: PoolCounts) => number) =>
      gauge(name, help, () => {
        const pool = this.pool.counts();
        return pool && read(pool);
      });
    poolGauge(
      'fleethub_db_pool_connections_total',
      'Connections open in the database pool',
      (p) => p.totalCount,
    );
    poolGauge(
      'fleethub_db_pool_connections_idle',
      'Idle connections in the database pool',
      (p) => p.idleCount,
    );
    this.deviceHandshakesRefused = new Counter({
      name: 'fleethub_device_handshakes_refused_total',
      help: "Device socket handshakes answered 503 because the server could not serve them in time ('shed' on arrival, 'late' after waiting)",
      labelNames: ['reason'],
      registers: [this.registry],
    });
    const queue: Gauge<'lane'> = new Gauge({
      name: 'fleethub_device_connect_queue',
      help: "Device connection work waiting for a turn, by lane ('connected' joins, 'handshake', 'background' identity reports)",
      labelNames: ['lane'],
      registers: [this.registry],
      collect: () => {
        for (const [lane, waiting] of Object.entries(this.deviceConnectQueue())) queue.set({ lane }, waiting);
      },
    });
    poolGauge(
      'fleethub_db_pool_requests_waiting',
      'Queries waiting for a connection from the database pool',
      (p) => p.waitingCount,
    );
  }

  /**
   * For the device gateway: report the connected devices itself instead of the count read from the database at
   * scrape time. `null` goes back to the database count.
   */
  setConnectedDevices(count: number | null): void {
    this.connectedOverride = count;
  }

  /** For the device gateway: how much connection work waits, by lane, read at scrape time. */
  setDeviceConnectQueue(read: () => Record<string, number>): void {
    this.deviceConnectQueue = read;
  }

  /** Times a finished response (trackRequests calls it for every request). */
  readonly observeResponse = (req: Request, res: Response, durationMs: number): void => {
    this.httpDuration.observe(req, res.statusCode, durationMs / 1000);
  };

  /** The text exposition format. */
  scrape(): Promise<string> {
    return this.registry.metrics();
  }

  onModuleDestroy(): void {
    this.registry.clear();
  }

  /** A count, or NaN when the database does not answer: the scrape still succeeds, without a stale value. */
  private async count(read: () => Promise<number>): Promise<number> {
    try {
      return await read();
    } catch {
      return Number.NaN;
    }
  }
}
