import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { isForeignKeyViolation, pgError } from '../common/errors/postgres-errors';
import type { Queryable } from '../database/transactions';

/** The rows a pending update refers to. */
export type PendingUpdateTarget = 'device' | 'firmware' | 'requester';

/** Foreign keys of pending_updates (migrations/1795322356360-Init.ts). */
const TARGET_BY_CONSTRAINT: Readonly<Record<string, PendingUpdateTarget>> = {
  FK_bbc32c53dbb6a785a03f1aa7b3f: 'device',
  FK_59da91b0017916881c7303e3b9b: 'firmware',
  FK_1ebf1db0ee040369002c74e5d40: 'requester',
};

/** The `pending_updates` table: at most one firmware waiting for each device. */
@Injectable()
export class PendingUpdatesRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** Records the device's update to `firmwareId`, replacing one not yet delivered (or delivered). */
  async upsert(deviceId: string, firmwareId: string, requestedById: string | null, tx: Queryable = this.db) {
    await tx.query(
      `INSERT INTO pending_updates (device_id, firmware_id, requested_by_id) VALUES ($1, $2, $3)
         ON CONFLICT (device_id) DO UPDATE
           SET firmware_id = EXCLUDED.firmware_id, requested_by_id = EXCLUDED.requested_by_id,
               inserted_at = now(), delivered_at = NULL`,
      [deviceId, firmwareId, requestedById],
    );
  }

  /**
   * The row an `upsert` referred to that a concurrent transaction deleted (its foreign key refused the insert once
   * that transaction committed), or undefined when `err` is anything else.
   */
  deletedTarget(err: unknown): PendingUpdateTarget | undefined {
    if (!isForeignKeyViolation(err)) return undefined;
    return TARGET_BY_CONSTRAINT[pgError(err)?.constraint ?? ''] ?? 'device';
  }

  /**
   * `fleethub demo`: a rollout in progress. Up to `limit` of the organization's devices of `productName` on
   * `fromVersion` (by identifier) wait for the product's newest firmware, requested by `requestedById`; answers
   * how many.
   */
  async insertDemoRollout(
    orgId: string,
    productName: string,
    fromVersion: string,
    limit: number,
    requestedById: string,
    tx: Queryable,
  ): Promise<number> {
    const rows = await tx.query<{ device_id: string }[]>(
      `INSERT INTO pending_updates (device_id, firmware_id, requested_by_id)
       SELECT d.id, newest.id, $2
         FROM devices d JOIN products p ON p.id = d.product_id AND p.org_id = $1 AND p.name = $4
         JOIN LATERAL (SELECT id FROM firmwares WHERE product_id = p.id
                        ORDER BY version_sort_key DESC LIMIT 1) newest ON true
        WHERE d.firmware_version = $3
        ORDER BY d.identifier LIMIT $5
       RETURNING device_id`,
      [orgId, requestedById, fromVersion, productName, limit],
    );
    return rows.length;
  }
}
