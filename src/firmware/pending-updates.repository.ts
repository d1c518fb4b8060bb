import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { isForeignKeyViolation, pgError } from '../common/errors/postgres-errors';
import type { Queryable } from '../database/transactions';
import { PENDING_UPDATE_COLUMNS, type PendingUpdateRow } from './pending-update-view';

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

  /** The device's pending update with its firmware and product, as the `update` message needs it. */
  async findForDelivery(deviceId: string): Promise<PendingUpdateRow | null> {
    const [row] = await this.db.query<PendingUpdateRow[]>(
      `SELECT ${PENDING_UPDATE_COLUMNS}
         FROM pending_updates pu JOIN firmwares f ON f.id = pu.firmware_id JOIN products p ON p.id = f.product_id
        WHERE pu.device_id = $1`,
      [deviceId],
    );
    return row ?? null;
  }

  /** The update to `firmwareId` was sent to the device: delivered now, its status and progress reset. */
  async markDelivered(deviceId: string, firmwareId: string): Promise<void> {
    await this.db.query(
      `UPDATE pending_updates SET delivered_at = now(), status = NULL, progress = NULL, status_updated_at = now()
        WHERE device_id = $1 AND firmware_id = $2`,
      [deviceId, firmwareId],
    );
  }

  /** Deletes the device's pending update to `firmwareId` (the device runs it). */
  async deleteForFirmware(deviceId: string, firmwareId: string): Promise<void> {
    await this.db.query(`DELETE FROM pending_updates WHERE device_id = $1 AND firmware_id = $2`, [
      deviceId,
      firmwareId,
    ]);
  }

  /** Deletes the device's delivered update; answers how many rows went (0 or 1). */
  async deleteDelivered(deviceId: string): Promise<number> {
    const deleted = await this.db.query<[unknown[], number]>(
      `DELETE FROM pending_updates WHERE device_id = $1 AND delivered_at IS NOT NULL`,
      [deviceId],
    );
    return deleted[1];
  }

  /** Puts the device's delivered update back in the queue, status `rescheduled`. */
  async rescheduleDelivered(deviceId: string): Promise<void> {
    await this.db.query(
      `UPDATE pending_updates SET delivered_at = NULL, status = 'rescheduled', progress = NULL,
                status_updated_at = now()
          WHERE device_id = $1 AND delivered_at IS NOT NULL`,
      [deviceId],
    );
  }

  /** Records the status and, when given, the progress percentage of the device's delivered update. */
  async recordProgress(deviceId: string, status: string, progress: number | null): Promise<void> {
    await this.db.query(
      `UPDATE pending_updates SET status = $2, progress = COALESCE($3, progress), status_updated_at = now()
        WHERE device_id = $1 AND delivered_at IS NOT NULL`,
      [deviceId, status, progress],
    );
  }

  /** How many pending updates there are. */
  async count(): Promise<number> {
    const rows: { n: string }[] = await this.db.query(`SELECT count(*) AS n FROM pending_updates`);
    return Number(rows[0].n);
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
