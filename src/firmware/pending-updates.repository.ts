import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { Queryable } from '../database/transactions';

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
}
