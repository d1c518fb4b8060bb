import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';

/** A log line as the gateway hands it over for storage. */
export interface NewLogLine {
  deviceId: string;
  loggedAt: Date;
  level: string;
  message: string;
  meta: Record<string, unknown>;
}

/** A stored log line; `logged_iso` its time as ISO 8601 with microseconds, `at_us` the cursor's position. */
export interface LogLineRow {
  id: string;
  logged_iso: string;
  at_us: string;
  level: string;
  message: string;
  meta: Record<string, unknown>;
}

export interface LogLineFilter {
  deviceId: string;
  from: Date | null;
  to: Date | null;
  levels: string[] | null;
  search: string | null;
  /** Lines strictly before this position (newest first): microseconds since the epoch and id. */
  before: { atUs: string; id: string } | null;
  limit: number;
}

/** `device_log_lines`: partitioned by day on `logged_at`, no entity (see the migration DeviceTelemetryPartitions). */
@Injectable()
export class DeviceLogsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** One statement for the whole batch, whatever its size (arrays, not one placeholder per value). */
  async insertBatch(lines: readonly NewLogLine[]): Promise<void> {
    await this.db.query(
      `INSERT INTO device_log_lines (device_id, logged_at, level, message, meta)
       SELECT * FROM unnest($1::bigint[], $2::timestamptz[], $3::text[], $4::text[], $5::jsonb[])`,
      [
        lines.map((l) => l.deviceId),
        lines.map((l) => l.loggedAt.toISOString()),
        lines.map((l) => l.level),
        lines.map((l) => l.message),
        lines.map((l) => JSON.stringify(l.meta)),
      ],
    );
  }

  /**
   * The device's lines, newest first, on the index (device_id, logged_at DESC, id DESC) of each partition; the
   * time bounds prune partitions. (No output column may be called `logged_at`: ORDER BY would sort on it.)
   */
  async list(filter: LogLineFilter): Promise<LogLineRow[]> {
    return this.db.query<LogLineRow[]>(
      `SELECT id, to_char(logged_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS logged_iso,
              ((extract(epoch FROM logged_at) * 1000000)::numeric(20, 0))::text AS at_us,
              level, message, meta
         FROM device_log_lines
        WHERE device_id = $1
          AND ($2::timestamptz IS NULL OR logged_at >= $2)
          AND ($3::timestamptz IS NULL OR logged_at <= $3)
          AND ($4::text[] IS NULL OR level = ANY($4))
          AND ($5::text IS NULL OR message ILIKE '%' || $5 || '%')
          AND ($6::bigint IS NULL
               OR (logged_at, id) < ('epoch'::timestamptz + $6::bigint * interval '1 microsecond', $7::bigint))
        ORDER BY logged_at DESC, id DESC
        LIMIT $8`,
      [
        filter.deviceId,
        filter.from?.toISOString() ?? null,
        filter.to?.toISOString() ?? null,
        filter.levels,
        filter.search === null ? null : filter.search.replace(/[\\%_]/g, (c) => `\\${c}`),
        filter.before?.atUs ?? null,
        filter.before?.id ?? null,
        filter.limit,
      ],
    );
  }
}
