import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { readRows, writeRows } from '../database/read-rows';
import type { ProductConnectionCount } from './fleet-counts.entity';

/** How many firmware versions the overview names; the rest are summed as "other versions". */
export const TOP_VERSIONS = 12;

/** What the fleet's counter rows count exactly, one key at a time: a connection status, a version, alarms. */
export type FleetCount =
  | { connection: ProductConnectionCount['connectionStatus'] }
  | { firmwareVersion: string }
  | { alarms: 'with' | 'without' };
/** How many devices with health alarms the overview names (the most alarms first). */
export const ALARMED_LISTED = 10;
/** Samples older than this are deleted. */
export const SAMPLE_RETENTION_DAYS = 7;

export interface OverviewRow {
  /** Devices per connection status (`connected`, `disconnected`, `not_seen`), as decimal strings. */
  connection: Partial<Record<'connected' | 'disconnected' | 'not_seen', string>> | null;
  versions: { version: string; devices: string }[] | null;
  versioned: string | null;
  version_count: number | null;
  rollouts:
    | {
        name: string;
        is_active: boolean;
        paused_reason: string | null;
        paused_at: string | null;
        release_number: number | null;
        firmware_version: string | null;
        concurrent_updates: number;
        updating: number;
      }[]
    | null;
  manual_updates: number;
  alarmed: number;
  alarmed_devices: { identifier: string; alarm_count: number; status: string }[] | null;
}

/** The overview's counters without the named alarmed devices (what the live `product.overview` event carries). */
export type CountersRow = Omit<OverviewRow, 'alarmed_devices'>;

export interface SampleRow {
  at: Date;
  connected: number;
  total: number;
}

/**
 * The fleet overview's reads: a product's aggregates, each from a counter table or an index whose size is that
 * of the answer, not of the fleet (see docs/decisions.md, "Fleet overview"), in one statement:
 * - devices per connection status and per firmware version: the counter rows the `devices` triggers keep
 *   (`product_connection_counts`, `product_firmware_counts`; at most 16 shards per key);
 * - rollouts in progress: the product's deployment groups (unique index on product and name) with their
 *   updates in flight (`pending_updates_deployment_group_id_idx`), those with none left out unless paused;
 * - manual updates in flight: `pending_updates` by the product's firmware (`pending_updates_firmware_id_idx`);
 * - devices with health alarms: how many, from the counter rows the triggers keep (`product_alarm_counts`,
 *   migration HealthAlarmCounts); the first of them (the overview call only, not its counters) through the
 *   partial index of alarmed devices (`device_health_alarmed_idx`), each checked against its device's product by
 *   primary key: proportional to the alarmed devices of the server, and skipped when the product has none.
 * And the connection samples (`product_connection_samples`), written here too.
 */
@Injectable()
export class FleetOverviewRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async overview(productId: string): Promise<OverviewRow> {
    const [row] = await readRows<OverviewRow>(this.db, overviewSql(true), [
      productId,
      TOP_VERSIONS,
      ALARMED_LISTED,
    ]);
    return row;
  }

  /**
   * The overview's counters alone (no alarmed device named): what the live `product.overview` event carries,
   * computed for the product's watchers at most about once a second while its devices change.
   */
  async counters(productId: string): Promise<CountersRow> {
    const [row] = await readRows<CountersRow>(this.db, overviewSql(false), [productId, TOP_VERSIONS]);
    return row;
  }

  /** How many of the product's devices the counter rows count under `what` (exact, O(1): at most 16 shards). */
  async countDevices(productId: string, what: FleetCount): Promise<number> {
    const sum = (table: string, condition = '') =>
      `(SELECT COALESCE(sum(total), 0) FROM ${table} WHERE product_id = $1${condition})`;
    const [sql, params]: [string, unknown[]] =
      'connection' in what
        ? [sum('product_connection_counts', ' AND connection_status = $2'), [productId, what.connection]]
        : 'firmwareVersion' in what
          ? [sum('product_firmware_counts', ' AND firmware_version = $2'), [productId, what.firmwareVersion]]
          : what.alarms === 'with'
            ? [sum('product_alarm_counts'), [productId]]
            : // Every device has one connection status: their counts sum to the product's devices.
              [`${sum('product_connection_counts')} - ${sum('product_alarm_counts')}`, [productId]];
    const [row] = await readRows<{ n: number }>(this.db, `SELECT (${sql})::int AS n`, params);
    return row.n;
  }

  /** The product's samples since `from`, averaged over buckets of `bucketSeconds` (the oldest first). */
  async samples(productId: string, from: Date, bucketSeconds: number): Promise<SampleRow[]> {
    return readRows<SampleRow>(
      this.db,
      `SELECT date_bin(make_interval(secs => $3), sampled_at, TIMESTAMPTZ 'epoch') AS at,
              round(avg(connected))::int AS connected, max(total) AS total
         FROM product_connection_samples
        WHERE product_id = $1 AND sampled_at >= $2
        GROUP BY 1 ORDER BY 1`,
      [productId, from, bucketSeconds],
    );
  }

  /**
   * Records the minute's sample of every product from the counter rows, unless another instance is recording
   * it now (a transaction-scoped advisory lock) or has recorded it (the minute is part of the key), and deletes
   * the samples past retention. Answers how many samples were written.
   */
  async recordSamples(): Promise<number> {
    const { rows } = await writeRows<{ written: number }>(
      this.db,
      `WITH leader AS (
         SELECT pg_try_advisory_xact_lock(hashtext('fleethub-connection-samples')) AS held
       ), written AS (
         INSERT INTO product_connection_samples (product_id, sampled_at, connected, total)
         SELECT c.product_id, date_trunc('minute', now()),
                COALESCE(sum(c.total) FILTER (WHERE c.connection_status = 'connected'), 0),
                sum(c.total)
           FROM product_connection_counts c, leader
          WHERE leader.held
          GROUP BY c.product_id
         HAVING sum(c.total) > 0
         ON CONFLICT (product_id, sampled_at) DO NOTHING
         RETURNING 1
       ), expired AS (
         DELETE FROM product_connection_samples
          WHERE sampled_at < now() - make_interval(days => $1) AND (SELECT held FROM leader)
         RETURNING 1
       )
       SELECT (SELECT count(*) FROM written)::int AS written, (SELECT count(*) FROM expired)::int AS expired`,
      [SAMPLE_RETENTION_DAYS],
    );
    return rows[0]?.written ?? 0;
  }
}

/**
 * The overview statement: `$1` the product, `$2` how many versions are named, and with `named` `$3` how many
 * alarmed devices are named (`alarmed_devices`); without, the counters alone.
 */
function overviewSql(named: boolean): string {
  return `WITH versions AS (
         SELECT firmware_version AS version, sum(total) AS devices
           FROM product_firmware_counts WHERE product_id = $1
          GROUP BY 1 HAVING sum(total) <> 0
       ), alarm_total AS (
         SELECT COALESCE(sum(total), 0)::int AS n FROM product_alarm_counts WHERE product_id = $1
       ), alarmed AS (
         SELECT d.identifier, h.alarm_count, h.status::text AS status
           FROM device_health h JOIN devices d ON d.id = h.device_id
          WHERE h.alarm_count > 0 AND d.product_id = $1 AND (SELECT n FROM alarm_total) > 0
       ), rollouts AS (
         SELECT g.name, g.is_active, g.paused_reason, g.paused_at, r.number AS release_number,
                f.version AS firmware_version, g.concurrent_updates,
                (SELECT count(*)::int FROM pending_updates pu WHERE pu.deployment_group_id = g.id) AS updating
           FROM deployment_groups g
           LEFT JOIN deployment_releases r ON r.id = g.current_release_id
           LEFT JOIN firmwares f ON f.id = r.firmware_id
          WHERE g.product_id = $1
       )
       SELECT
         (SELECT json_object_agg(connection_status, n) FROM (
            SELECT connection_status, sum(total)::text AS n FROM product_connection_counts
             WHERE product_id = $1 GROUP BY 1) c) AS connection,
         (SELECT json_agg(json_build_object('version', version, 'devices', devices::text)
                          ORDER BY devices DESC, version)
            FROM (SELECT * FROM versions ORDER BY devices DESC, version LIMIT $2) top) AS versions,
         (SELECT sum(devices)::text FROM versions) AS versioned,
         (SELECT count(*)::int FROM versions) AS version_count,
         (SELECT json_agg(rollouts ORDER BY name) FROM rollouts
           WHERE updating > 0 OR paused_reason IS NOT NULL) AS rollouts,
         (SELECT count(*)::int FROM pending_updates pu JOIN firmwares f ON f.id = pu.firmware_id
           WHERE f.product_id = $1 AND pu.deployment_group_id IS NULL) AS manual_updates,
         (SELECT n FROM alarm_total) AS alarmed${
           named
             ? `,
         (SELECT json_agg(a ORDER BY alarm_count DESC, identifier) FROM (
            SELECT * FROM alarmed ORDER BY alarm_count DESC, identifier LIMIT $3) a) AS alarmed_devices`
             : ''
         }`;
}
