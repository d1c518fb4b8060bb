import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
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

  /** The latest reports of many devices in one statement (one report per device in `reports`). */
  async upsertReports(reports: readonly NewHealthReport[]): Promise<void> {
    const metricArrays = FLEET_METRICS.map((metric) => reports.map((r) => r.fleetMetrics[metric]));
    const metricParams = FLEET_METRICS.map((_, i) => `$${i + 7}::float8[]`).join(', ');
    await this.db.query(
      `INSERT INTO device_health
         (device_id, reported_at, status, status_reasons, alarm_count, report, ${METRIC_COLUMNS})
       SELECT d.device_id, d.reported_at, d.status::device_health_status, d.status_reasons, d.alarm_count, d.report,
              ${FLEET_METRICS.map((m) => `d.${m}`).join(', ')}
         FROM unnest($1::bigint[], $2::timestamptz[], $3::text[], $4::jsonb[], $5::int[], $6::jsonb[], ${metricParams})
              AS d(device_id, reported_at, status, status_reasons, alarm_count, report, ${METRIC_COLUMNS})
         JOIN devices ON devices.id = d.device_id
       ON CONFLICT (device_id) DO UPDATE
          SET reported_at = EXCLUDED.reported_at, status = EXCLUDED.status,
              status_reasons = EXCLUDED.status_reasons, alarm_count = EXCLUDED.alarm_count,
              report = EXCLUDED.report,
              ${FLEET_METRICS.map((m) => `${m} = EXCLUDED.${m}`).join(', ')}`,
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
