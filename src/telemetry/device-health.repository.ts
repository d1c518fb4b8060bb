import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { Queryable } from '../database/transactions';
import { FLEET_METRICS, type FleetMetric, type HealthStatus } from './device-health.entity';

/** A health report ready to store (the newest of its device in a batch). */
export interface NewHealthReport {
  deviceId: string;
  reportedAt: Date;
  status: HealthStatus;
  statusReasons: Record<string, unknown> | null;
  alarmCount: number;
  report: Record<string, unknown>;
  fleetMetrics: Record<FleetMetric, number | null>;
}

/** A device whose report's alarms differ from its previous report's (`upsertReports`). */
export interface AlarmChange {
  device_id: string;
  identifier: string;
  org_id: string;
  product: string | null;
  /** The previous report's `alarms` (null: it had none). */
  previous: unknown;
}

export interface NewLocation {
  deviceId: string;
  location: Record<string, unknown>;
  at: Date;
}

export interface NewMetric {
  deviceId: string;
  reportedAt: Date;
  key: string;
  value: number;
}

export interface DeviceHealthRow {
  status: HealthStatus;
  status_reasons: Record<string, unknown> | null;
  report: Record<string, unknown> | null;
  reported_at: Date | null;
  location: Record<string, unknown> | null;
  location_updated_at: Date | null;
}

export interface MetricRow {
  reported_at: Date;
  key: string;
  value: number;
}

const METRIC_COLUMNS = FLEET_METRICS.join(', ');

/** `device_health` (the latest report and location of each device) and `device_health_metrics` (history). */
@Injectable()
export class DeviceHealthRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * The latest reports of many devices in one statement (one report per device in `reports`), in `tx`. Answers
   * the devices whose active alarms may have changed: those with alarms before or now whose `alarms` differ, with
   * the previous report's `alarms` (null: none), read and locked in the same statement before it is replaced
   * (FOR UPDATE, in id order, before the upsert runs), so that two writes of one device cannot both see the same
   * previous alarms. A report
   * without alarms after one without alarms (most of them) is not read back: its previous report is not even
   * detoasted.
   */
  async upsertReports(reports: readonly NewHealthReport[], tx: Queryable): Promise<AlarmChange[]> {
    const metricArrays = FLEET_METRICS.map((metric) => reports.map((r) => r.fleetMetrics[metric]));
    const metricParams = FLEET_METRICS.map((_, i) => `$${i + 7}::float8[]`).join(', ');
    return tx.query<AlarmChange[]>(
      `WITH incoming AS MATERIALIZED (
         SELECT * FROM unnest($1::bigint[], $2::timestamptz[], $3::text[], $4::jsonb[], $5::int[], $6::jsonb[], ${metricParams})
                AS d(device_id, reported_at, status, status_reasons, alarm_count, report, ${METRIC_COLUMNS})
       ), previous AS MATERIALIZED (
         SELECT h.device_id, CASE WHEN h.alarm_count > 0 THEN h.report->'alarms' END AS alarms
           FROM device_health h WHERE h.device_id = ANY($1::bigint[])
          ORDER BY h.device_id FOR UPDATE
       ), written AS (
         INSERT INTO device_health
           (device_id, reported_at, status, status_reasons, alarm_count, report, ${METRIC_COLUMNS})
         SELECT d.device_id, d.reported_at, d.status::device_health_status, d.status_reasons, d.alarm_count, d.report,
                ${FLEET_METRICS.map((m) => `d.${m}`).join(', ')}
           FROM incoming d
           JOIN devices ON devices.id = d.device_id
           -- Reads and locks the previous reports first: a row this statement already replaced would be skipped by
           -- FOR UPDATE (updated by the same command).
           CROSS JOIN (SELECT count(*) FROM previous) AS locked_first
         ON CONFLICT (device_id) DO UPDATE
            SET reported_at = EXCLUDED.reported_at, status = EXCLUDED.status,
                status_reasons = EXCLUDED.status_reasons, alarm_count = EXCLUDED.alarm_count,
                report = EXCLUDED.report,
                ${FLEET_METRICS.map((m) => `${m} = EXCLUDED.${m}`).join(', ')}
         RETURNING device_id
       )
       SELECT w.device_id::text AS device_id, dv.identifier, dv.org_id::text AS org_id, p.name AS product,
              prev.alarms AS previous
         FROM written w
         JOIN incoming i ON i.device_id = w.device_id
         LEFT JOIN previous prev ON prev.device_id = w.device_id
         JOIN devices dv ON dv.id = w.device_id
         LEFT JOIN products p ON p.id = dv.product_id
        WHERE (i.alarm_count > 0 OR prev.alarms IS NOT NULL)
          AND prev.alarms IS DISTINCT FROM (CASE WHEN i.alarm_count > 0 THEN i.report->'alarms' END)`,
      [
        reports.map((r) => r.deviceId),
        reports.map((r) => r.reportedAt.toISOString()),
        reports.map((r) => r.status),
        reports.map((r) => (r.statusReasons === null ? null : JSON.stringify(r.statusReasons))),
        reports.map((r) => r.alarmCount),
        reports.map((r) => JSON.stringify(r.report)),
        ...metricArrays,
      ],
    );
  }

  /** The latest locations of many devices in one statement (one per device). */
  async upsertLocations(locations: readonly NewLocation[]): Promise<void> {
    await this.db.query(
      `INSERT INTO device_health (device_id, location, location_updated_at)
       SELECT d.device_id, d.location, d.at
         FROM unnest($1::bigint[], $2::jsonb[], $3::timestamptz[]) AS d(device_id, location, at)
         JOIN devices ON devices.id = d.device_id
       ON CONFLICT (device_id) DO UPDATE
          SET location = EXCLUDED.location, location_updated_at = EXCLUDED.location_updated_at`,
      [
        locations.map((l) => l.deviceId),
        locations.map((l) => JSON.stringify(l.location)),
        locations.map((l) => l.at.toISOString()),
      ],
    );
  }

  async insertMetrics(metrics: readonly NewMetric[]): Promise<void> {
    await this.db.query(
      `INSERT INTO device_health_metrics (device_id, reported_at, key, value)
       SELECT * FROM unnest($1::bigint[], $2::timestamptz[], $3::text[], $4::float8[])`,
      [
        metrics.map((m) => m.deviceId),
        metrics.map((m) => m.reportedAt.toISOString()),
        metrics.map((m) => m.key),
        metrics.map((m) => m.value),
      ],
    );
  }

  async find(deviceId: string): Promise<DeviceHealthRow | null> {
    const [row] = await this.db.query<DeviceHealthRow[]>(
      `SELECT status, status_reasons, report, reported_at, location, location_updated_at
         FROM device_health WHERE device_id = $1`,
      [deviceId],
    );
    return row ?? null;
  }

  /** The device's metric values in a time range, newest first, at most `limit`. */
  async metrics(
    deviceId: string,
    filter: { from: Date | null; to: Date | null; key: string | null; limit: number },
  ): Promise<MetricRow[]> {
    return this.db.query<MetricRow[]>(
      `SELECT reported_at, key, value FROM device_health_metrics
        WHERE device_id = $1
          AND ($2::timestamptz IS NULL OR reported_at >= $2)
          AND ($3::timestamptz IS NULL OR reported_at <= $3)
          AND ($4::text IS NULL OR key = $4)
        ORDER BY reported_at DESC, key
        LIMIT $5`,
      [
        deviceId,
        filter.from?.toISOString() ?? null,
        filter.to?.toISOString() ?? null,
        filter.key,
        filter.limit,
      ],
    );
  }
}
