import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { Queryable } from '../database/transactions';
import type { DeviceImportError, DeviceImportStatus } from './device-import.entity';

export interface DeviceImportRow {
  id: string;
  format: string;
  tags: string[];
  status: DeviceImportStatus;
  total: number;
  processed: number;
  created: number;
  unchanged: number;
  failed: number;
  errors: DeviceImportError[];
  inserted_at: Date;
  updated_at: Date;
  stale: boolean;
}

const COLUMNS = `id, format, tags, status, total, processed, created, unchanged, failed, errors, inserted_at, updated_at,
  status = 'running' AND updated_at < now() - interval '1 minute' AS stale`;

/** The `device_imports` table, and the bulk device writes of an import. */
@Injectable()
export class DeviceImportsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async insert(
    job: { productId: string; format: string; tags: string[]; total: number; requestedById: string },
    tx: Queryable,
  ): Promise<DeviceImportRow> {
    const rows: DeviceImportRow[] = await tx.query(
      `INSERT INTO device_imports (product_id, format, tags, total, requested_by_id) VALUES ($1, $2, $3, $4, $5)
       RETURNING ${COLUMNS}`,
      [job.productId, job.format, job.tags, job.total, job.requestedById],
    );
    return rows[0];
  }

  async find(productId: string, id: string): Promise<DeviceImportRow | undefined> {
    const rows: DeviceImportRow[] = await this.db.query(
      `SELECT ${COLUMNS} FROM device_imports WHERE product_id = $1 AND id = $2`,
      [productId, id],
    );
    return rows[0];
  }

  /** Adds one batch's counts and errors (at most `maxErrors` listed in all); `done` ends the job. */
  async recordBatch(
    id: string,
    batch: { processed: number; created: number; unchanged: number; errors: DeviceImportError[] },
    done: boolean,
    maxErrors: number,
    tx: Queryable = this.db,
  ): Promise<void> {
    await tx.query(
      `UPDATE device_imports SET processed = processed + $2, created = created + $3, unchanged = unchanged + $4,
              failed = failed + $5,
              errors = CASE WHEN jsonb_array_length(errors) >= $7 THEN errors
                            ELSE errors || (SELECT COALESCE(jsonb_agg(e), '[]'::jsonb)
                                              FROM (SELECT e FROM jsonb_array_elements($6::jsonb) e
                                                     LIMIT $7 - jsonb_array_length(errors)) s) END,
              status = CASE WHEN $8 THEN 'done'::device_import_status ELSE status END,
              updated_at = now()
        WHERE id = $1`,
      [
        id,
        batch.processed,
        batch.created,
        batch.unchanged,
        batch.errors.length,
        JSON.stringify(batch.errors),
        maxErrors,
        done,
      ],
    );
  }

  /** Creates the devices of these identifiers that do not exist anywhere; answers those it created. */
  async insertDevices(
    orgId: string,
    productId: string,
    identifiers: string[],
    tags: string[],
    tx: Queryable,
  ): Promise<Map<string, string>> {
    const rows: { id: string; identifier: string }[] = await tx.query(
      `INSERT INTO devices (org_id, product_id, identifier, tags)
       SELECT $1, $2, i, $4::text[] FROM unnest($3::text[]) i
       ON CONFLICT (identifier) DO NOTHING RETURNING id, identifier`,
      [orgId, productId, identifiers, tags],
    );
    return new Map(rows.map((row) => [row.identifier, row.id]));
  }

  /** The devices of these identifiers, wherever they are: id and product. */
  async findDevices(
    identifiers: string[],
    tx: Queryable,
  ): Promise<Map<string, { id: string; product_id: string }>> {
    const rows: { id: string; identifier: string; product_id: string }[] = await tx.query(
      `SELECT id, identifier, product_id FROM devices WHERE identifier = ANY($1::text[])`,
      [identifiers],
    );
    return new Map(rows.map((row) => [row.identifier, { id: row.id, product_id: row.product_id }]));
  }
}
