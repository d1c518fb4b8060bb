import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { isForeignKeyViolation, pgError } from '../common/errors/postgres-errors';
import { PreparedStatement, readRows, writeRows } from '../database/read-rows';
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

// The device path's statements: several per device and update, prepared once per connection.
const FIND_MANY_FOR_DELIVERY = new PreparedStatement(
  `SELECT pu.device_id, ${PENDING_UPDATE_COLUMNS}
     FROM pending_updates pu JOIN firmwares f ON f.id = pu.firmware_id JOIN products p ON p.id = f.product_id
    WHERE pu.device_id = ANY($1::bigint[])`,
);
const MARK_DELIVERED = new PreparedStatement(
  `UPDATE pending_updates p
      SET delivered_at = now(), status = NULL, progress = NULL, status_updated_at = now()
     FROM unnest($1::bigint[], $2::bigint[]) AS sent(device_id, firmware_id)
    WHERE p.device_id = sent.device_id AND p.firmware_id = sent.firmware_id`,
);
const RECORD_PROGRESS = new PreparedStatement(
  `UPDATE pending_updates p
      SET status = reported.status, progress = COALESCE(reported.progress, p.progress), status_updated_at = now()
     FROM unnest($1::bigint[], $2::text[], $3::int[]) AS reported(device_id, status, progress)
    WHERE p.device_id = reported.device_id AND p.delivered_at IS NOT NULL`,
);
const DELETE_FOR_FIRMWARE_RETURNING = new PreparedStatement(
  `DELETE FROM pending_updates WHERE device_id = $1 AND firmware_id = $2 RETURNING deployment_group_id`,
);

/** The `pending_updates` table: at most one firmware waiting for each device. */
/** A delivered update that ended (failed or ignored): its group and release (null: manual) and its firmware. */
export interface EndedUpdateRow {
  deployment_group_id: string | null;
  deployment_release_id: string | null;
  firmware_uuid: string;
  firmware_version: string;
}

@Injectable()
export class PendingUpdatesRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** Records the device's update to `firmwareId`, replacing one not yet delivered (or delivered). */
  async upsert(deviceId: string, firmwareId: string, requestedById: string | null, tx: Queryable = this.db) {
    await tx.query(
      `INSERT INTO pending_updates (device_id, firmware_id, requested_by_id) VALUES ($1, $2, $3)
         ON CONFLICT (device_id) DO UPDATE
           SET firmware_id = EXCLUDED.firmware_id, requested_by_id = EXCLUDED.requested_by_id,
               inserted_at = now(), delivered_at = NULL,
               deployment_group_id = NULL, deployment_release_id = NULL, expires_at = NULL, delta_allowed = false`,
      [deviceId, firmwareId, requestedById],
    );
  }

  /**
   * Records the same update for many devices in one statement (a bulk upgrade), each replacing the device's
   * previous one as `upsert` does.
   */
  async upsertMany(
    deviceIds: readonly string[],
    firmwareId: string,
    requestedById: string | null,
    tx: Queryable,
  ): Promise<void> {
    await tx.query(
      `INSERT INTO pending_updates (device_id, firmware_id, requested_by_id)
       SELECT device_id, $2, $3 FROM unnest($1::bigint[]) AS ids(device_id) ORDER BY device_id
         ON CONFLICT (device_id) DO UPDATE
           SET firmware_id = EXCLUDED.firmware_id, requested_by_id = EXCLUDED.requested_by_id,
               inserted_at = now(), delivered_at = NULL,
               deployment_group_id = NULL, deployment_release_id = NULL, expires_at = NULL, delta_allowed = false`,
      [deviceIds, firmwareId, requestedById],
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
   * Each device's pending update with its firmware and product, as the `update` message needs it (null: none), in
   * the order of `deviceIds`.
   */
  async findForDelivery(deviceIds: readonly string[]): Promise<(PendingUpdateRow | null)[]> {
    const rows = await readRows<PendingUpdateRow & { device_id: string }>(this.db, FIND_MANY_FOR_DELIVERY, [
      deviceIds,
    ]);
    const byDevice = new Map(rows.map(({ device_id, ...row }) => [String(device_id), row]));
    return deviceIds.map((id) => byDevice.get(id) ?? null);
  }

  /** Each update was sent to its device: delivered now, its status and progress reset. */
  async markDelivered(sent: readonly { deviceId: string; firmwareId: string }[]): Promise<void> {
    await writeRows(this.db, MARK_DELIVERED, [
      sent.map((entry) => entry.deviceId),
      sent.map((entry) => entry.firmwareId),
    ]);
  }

  /** Deletes the device's pending update, whatever its firmware (the device moves to another product). */
  async deleteForDevice(deviceId: string, tx: Queryable): Promise<void> {
    await tx.query(`DELETE FROM pending_updates WHERE device_id = $1`, [deviceId]);
  }

  /** Deletes the pending updates of these devices, whatever their firmware (they move to another product). */
  async deleteForDevices(deviceIds: readonly string[], tx: Queryable): Promise<void> {
    await tx.query(`DELETE FROM pending_updates WHERE device_id = ANY($1::bigint[])`, [deviceIds]);
  }

  /** Deletes the device's pending update to `firmwareId` (the device runs it). */
  async deleteForFirmware(deviceId: string, firmwareId: string): Promise<void> {
    await this.db.query(`DELETE FROM pending_updates WHERE device_id = $1 AND firmware_id = $2`, [
      deviceId,
      firmwareId,
    ]);
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

  /**
   * Records, in one statement, the status and, when given, the progress percentage of each device's delivered
   * update (at most one entry per device).
   */
  async recordProgress(
    entries: readonly { deviceId: string; status: string; progress: number | null }[],
  ): Promise<void> {
    if (entries.length === 0) return;
    await writeRows(this.db, RECORD_PROGRESS, [
      entries.map((entry) => entry.deviceId),
      entries.map((entry) => entry.status),
      entries.map((entry) => entry.progress),
    ]);
  }

  /** How many pending updates there are. */
  async count(): Promise<number> {
    const rows: { n: string }[] = await this.db.query(`SELECT count(*) AS n FROM pending_updates`);
    return Number(rows[0].n);
  }

  /**
   * `fleethub demo`: a deployment rollout in flight, as the orchestrator claims it. Up to the group's
   * `concurrent_updates` of its devices (shown as connected, behind its release, not in the penalty box, without an
   * update; in identifier order) get a pending update naming the group and its current release, sent a while ago, with the
   * progress their device reported. Answers how many.
   */
  async insertDemoDeploymentRollout(groupId: string, tx: Queryable): Promise<number> {
    const rows = await tx.query<{ device_id: string }[]>(
      `INSERT INTO pending_updates
              (device_id, firmware_id, requested_by_id, deployment_group_id, deployment_release_id, expires_at,
               delivered_at, status, progress, status_updated_at)
       SELECT d.id, r.firmware_id, NULL, g.id, r.id,
              now() + make_interval(mins => g.inflight_update_expiration_minutes),
              now() - interval '1 minute', 'updating', (d.nth * 37 % 90)::smallint, now()
         FROM deployment_groups g
         JOIN deployment_releases r ON r.id = g.current_release_id
         JOIN firmwares f ON f.id = r.firmware_id
         CROSS JOIN LATERAL (
           SELECT d.id, row_number() OVER (ORDER BY d.identifier) AS nth
             FROM devices d JOIN deployment_group_members m ON m.device_id = d.id
            WHERE m.deployment_group_id = g.id AND d.connection_status = 'connected' AND d.updates_enabled
              AND (d.updates_blocked_until IS NULL OR d.updates_blocked_until <= now())
              AND (d.firmware_metadata->>'uuid') IS DISTINCT FROM f.uuid::text
              AND NOT EXISTS (SELECT 1 FROM pending_updates pu WHERE pu.device_id = d.id)
            ORDER BY d.identifier LIMIT g.concurrent_updates) d
        WHERE g.id = $1
       RETURNING device_id`,
      [groupId],
    );
    return rows.length;
  }

  /**
   * Deployment orchestrator: the atomic claim. Inserts a pending update to the release's firmware for at most
   * `concurrent_updates` minus the group's rows already in flight of its candidate devices (connected, in the
   * group, updates enabled, not in the penalty box, no pending update, firmware known and not the release's),
   * oldest connection first (`newestFirst`: newest), and answers the devices claimed. Run under the group's claim
   * lock (`tx`), so that two claims never both count the same free slots; a device claimed meanwhile by a manual
   * upgrade is skipped (ON CONFLICT).
   */
  async claimForDeployment(
    groupId: string,
    releaseId: string,
    newestFirst: boolean,
    tx: Queryable,
  ): Promise<string[]> {
    const rows = await tx.query<{ device_id: string }[]>(
      `INSERT INTO pending_updates
              (device_id, firmware_id, requested_by_id, deployment_group_id, deployment_release_id, expires_at,
               delta_allowed)
       SELECT d.id, r.firmware_id, NULL, g.id, r.id, now() + make_interval(mins => g.inflight_update_expiration_minutes),
              g.delta_updatable
         FROM deployment_groups g
         JOIN deployment_releases r ON r.id = g.current_release_id AND r.id = $2
         JOIN firmwares f ON f.id = r.firmware_id
         CROSS JOIN LATERAL (SELECT count(*) AS n FROM pending_updates WHERE deployment_group_id = g.id) inflight
         CROSS JOIN LATERAL (
           SELECT d.id FROM devices d
            WHERE d.product_id = g.product_id AND d.connected_at IS NOT NULL
              AND EXISTS (SELECT 1 FROM deployment_group_members m
                           WHERE m.device_id = d.id AND m.deployment_group_id = g.id)
              AND d.connection_status = 'connected' AND d.updates_enabled
              AND (d.updates_blocked_until IS NULL OR d.updates_blocked_until <= now())
              AND d.firmware_metadata IS NOT NULL AND (d.firmware_metadata->>'uuid') IS DISTINCT FROM f.uuid::text
              AND NOT EXISTS (SELECT 1 FROM pending_updates pu WHERE pu.device_id = d.id)
            ORDER BY d.connected_at ${newestFirst ? 'DESC' : 'ASC'}, d.id ${newestFirst ? 'DESC' : 'ASC'}
            LIMIT GREATEST(g.concurrent_updates - inflight.n, 0)) d
        WHERE g.id = $1 AND g.is_active
       ON CONFLICT (device_id) DO NOTHING
       RETURNING device_id`,
      [groupId, releaseId],
    );
    return rows.map((row) => row.device_id);
  }

  /**
   * Deployment orchestrator: deletes the orchestrated updates past `expires_at` (of any group, paused ones
   * included); answers their devices, groups and releases. Concurrent callers never both get a row.
   */
  async deleteExpired(
    tx: Queryable = this.db,
  ): Promise<{ device_id: string; deployment_group_id: string; deployment_release_id: string }[]> {
    const deleted = await tx.query<
      [{ device_id: string; deployment_group_id: string; deployment_release_id: string }[], number]
    >(
      `DELETE FROM pending_updates WHERE expires_at <= now()
       RETURNING device_id, deployment_group_id, deployment_release_id`,
    );
    return deleted[0];
  }

  /** Deployment orchestrator: the group's claimed updates not yet sent to their connected device. */
  async undeliveredOfGroup(groupId: string): Promise<string[]> {
    const rows = await this.db.query<{ device_id: string }[]>(
      `SELECT pu.device_id FROM pending_updates pu JOIN devices d ON d.id = pu.device_id
        WHERE pu.deployment_group_id = $1 AND pu.delivered_at IS NULL AND d.connection_status = 'connected'`,
      [groupId],
    );
    return rows.map((row) => row.device_id);
  }

  /** Deletes the group's claimed updates not sent yet; answers how many. */
  async deleteUndeliveredOfGroup(groupId: string, tx: Queryable): Promise<number> {
    const [, count] = await tx.query<[unknown[], number]>(
      `DELETE FROM pending_updates WHERE deployment_group_id = $1 AND delivered_at IS NULL`,
      [groupId],
    );
    return count;
  }

  /** Deletes the device's delivered update (failed, ignored); answers its deployment group and release if any. */
  async deleteDeliveredReturning(deviceId: string, tx: Queryable = this.db): Promise<EndedUpdateRow | null> {
    const [ended] = await tx.query<EndedUpdateRow[]>(
      `WITH ended AS (
         DELETE FROM pending_updates WHERE device_id = $1 AND delivered_at IS NOT NULL
         RETURNING deployment_group_id, deployment_release_id, firmware_id
       )
       SELECT e.deployment_group_id, e.deployment_release_id, f.uuid AS firmware_uuid,
              f.version AS firmware_version
         FROM ended e JOIN firmwares f ON f.id = e.firmware_id`,
      [deviceId],
    );
    return ended ?? null;
  }

  /** Deletes the device's update to `firmwareId` (it runs it); answers its deployment group if any, else null. */
  async deleteForFirmwareReturning(deviceId: string, firmwareId: string): Promise<string | null> {
    const { rows } = await writeRows<{ deployment_group_id: string | null }>(
      this.db,
      DELETE_FOR_FIRMWARE_RETURNING,
      [deviceId, firmwareId],
    );
    return rows[0]?.deployment_group_id ?? null;
  }

  /** How many orchestrated updates are in flight (all groups). */
  async countOrchestrated(): Promise<number> {
    const rows: { n: string }[] = await this.db.query(
      `SELECT count(*) AS n FROM pending_updates WHERE deployment_group_id IS NOT NULL`,
    );
    return Number(rows[0].n);
  }
}
