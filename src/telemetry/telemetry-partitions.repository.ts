import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';

/** The tables partitioned by day (created by the migration DeviceTelemetryPartitions). */
export const PARTITIONED_TABLES = ['device_log_lines', 'device_health_metrics'] as const;
export type PartitionedTable = (typeof PARTITIONED_TABLES)[number];

/** A partition's name for the UTC day starting at `day`: `<table>_pYYYYMMDD`. */
export function partitionName(table: PartitionedTable, day: Date): string {
  return `${table}_p${day.toISOString().slice(0, 10).replace(/-/g, '')}`;
}

/** Creates and drops the daily partitions of the telemetry tables. */
@Injectable()
export class TelemetryPartitionsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** Creates the partition of the UTC day starting at `day` unless it exists. */
  async create(table: PartitionedTable, day: Date): Promise<void> {
    const next = new Date(day.getTime() + 86_400_000);
    await this.db.query(
      `CREATE TABLE IF NOT EXISTS "${partitionName(table, day)}" PARTITION OF "${table}"
         FOR VALUES FROM ('${day.toISOString()}') TO ('${next.toISOString()}')`,
    );
  }

  /** The partitions of `table`, by name. */
  async list(table: PartitionedTable): Promise<string[]> {
    const rows = await this.db.query<{ name: string }[]>(
      `SELECT c.relname AS name FROM pg_inherits i
         JOIN pg_class c ON c.oid = i.inhrelid
         JOIN pg_class p ON p.oid = i.inhparent
        WHERE p.relname = $1
        ORDER BY c.relname`,
      [table],
    );
    return rows.map((row) => row.name);
  }

  /** Drops a whole partition: retention without a DELETE. */
  async drop(name: string): Promise<void> {
    await this.db.query(`DROP TABLE IF EXISTS "${name}"`);
  }
}
