import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { ExtensionSettings } from '../common/extensions/extension-settings';
import { PreparedStatement, readRows, writeRows } from '../database/read-rows';
import type { Queryable, Tx } from '../database/transactions';
import { semverSortKey } from '../firmware/fwup/semver-sort-key';
import { PENDING_UPDATE_COLUMNS, type PendingUpdateRow } from '../firmware/pending-update-view';
import {
  type BulkChange,
  bulkChangeSql,
  type BulkEvents,
  bulkEventsSql,
  type BulkSelection,
  bulkWindowSql,
  COUNTS_BY_STATEMENT,
  ORDERED_WINDOW_SETTINGS,
  overTagLimitSql,
} from './device-bulk.query';
import { deviceCountSql, type DeviceListQuery, deviceListSql, devicePageSql } from './device-list.query';
import { DEVICE_COLUMNS, DEVICE_FROM, type DeviceRow } from './device-view';
import { Device, type FirmwareMetadata } from './device.entity';

/** A device whose disconnection was just recorded: what the console's live events need. */
export interface DisconnectedDevice {
  product_id: string;
  identifier: string;
}

// The device path's writes: once per device connection and update (prepared once per pool connection).
const RECORD_JOIN = new PreparedStatement(
  `WITH installed AS (
      SELECT $2::boolean AND EXISTS (
               SELECT 1 FROM pending_updates pu JOIN firmwares f ON f.id = pu.firmware_id
                WHERE pu.device_id = $1 AND pu.deployment_group_id IS NOT NULL AND f.uuid::text = $3::jsonb->>'uuid'
             ) AS update_attempts_cleared
    ), joined AS (
      UPDATE devices SET
        firmware_metadata = CASE WHEN $2::boolean THEN $3::jsonb ELSE firmware_metadata END,
        firmware_version = CASE WHEN $2::boolean THEN $4 ELSE firmware_version END,
        firmware_platform = CASE WHEN $2::boolean THEN $5 ELSE firmware_platform END,
        firmware_version_key = CASE WHEN $2::boolean THEN $9 ELSE firmware_version_key END,
        update_attempts = CASE WHEN installed.update_attempts_cleared THEN '{}' ELSE update_attempts END,
        updates_blocked_until = CASE WHEN installed.update_attempts_cleared THEN NULL ELSE updates_blocked_until END,
        connection_status = 'connected', connected_instance_id = $6, last_communication = now(),
        connected_at = now()
      FROM installed
      WHERE id = $1 RETURNING id, product_id, installed.update_attempts_cleared
    )
    SELECT CASE WHEN $8::boolean
          THEN ARRAY(SELECT k.key FROM signing_keys k WHERE k.org_id = $7 ORDER BY k.id) END AS keys,
        joined.update_attempts_cleared,
        (EXISTS (SELECT 1 FROM deployment_group_members m WHERE m.device_id = joined.id) OR EXISTS (
           SELECT 1 FROM deployment_groups g
            WHERE g.product_id = joined.product_id AND g.is_active AND NOT g.lock_device_membership
        )) AS membership_check,
        ${PENDING_UPDATE_COLUMNS}
      FROM joined
      LEFT JOIN pending_updates pu ON pu.device_id = joined.id
      LEFT JOIN firmwares f ON f.id = pu.firmware_id
      LEFT JOIN products p ON p.id = f.product_id`,
);
const CLEAR_UPDATE_ATTEMPTS = new PreparedStatement(
  `UPDATE devices SET update_attempts = '{}', updates_blocked_until = NULL
    WHERE id = $1 AND (cardinality(update_attempts) > 0 OR updates_blocked_until IS NOT NULL)`,
);

/** What a `device` channel join answers with: the org's fwup public keys (when asked) and the pending update. */
export interface DeviceJoin {
  keys: string[] | null;
  pending: PendingUpdateRow | null;
  /**
   * Whether the device's deployment group must be checked: it has one (its firmware may have changed), or its
   * product has an active group that takes devices.
   */
  membershipCheck: boolean; /**
   * The device reported the firmware of its pending deployment update: the update is installed, and the join
   * cleared the device's update attempts and penalty (as the completion would, one statement later).
   */
  updateAttemptsCleared: boolean;
}

/** Characters of a reported version or platform stored in their (indexed) columns. */
const MAX_INDEXED_VALUE = 255;

/** `firmware_version_key` for a join's metadata: the SemVer sort key of the version as stored, or null. */
function versionKey(metadata: FirmwareMetadata | null): string | null {
  const version = metadata?.version?.slice(0, MAX_INDEXED_VALUE);
  return version ? semverSortKey(version) : null;
}

export type DeviceChanges = Partial<Pick<Device, 'description' | 'tags' | 'updatesEnabled'>>;

/** What one statement of a bulk change did (device-bulk.query.ts). */
export interface BulkChangeResult {
  /** Devices the selection named (within the window). */
  matched: number;
  /** Rows written. */
  written: number;
  /** `add_tags`: devices that would have carried too many tags (then nothing changed). */
  overLimit: number;
  /** The devices changed (locked and changed; for an upgrade, every selected one), by id. */
  ids: string[];
  /** Their identifiers, in the same order. */
  identifiers: string[];
  /** Those of them that are connected. */
  connected: string[];
}

/** A device as the events that name it need it (ids as strings). */
export interface DeviceNames {
  id: string;
  identifier: string;
  org_id: string;
  product_id: string;
}

/** The `devices` table and the device counters its triggers keep (`product_device_counts`, `product_tag_counts`). */
@Injectable()
export class DevicesRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** Those of these devices with updates enabled and not in the penalty box (by primary key). */
  async takingUpdates(deviceIds: readonly string[]): Promise<Set<string>> {
    if (deviceIds.length === 0) return new Set();
    const rows = await this.db.query<{ id: string }[]>(
      `SELECT id FROM devices
        WHERE id = ANY($1::bigint[]) AND updates_enabled
          AND (updates_blocked_until IS NULL OR updates_blocked_until <= now())`,
      [deviceIds],
    );
    return new Set(rows.map((row) => row.id));
  }

  /** Registers a device; an identifier already taken (anywhere) is pg's unique violation. */
  async insert(
    device: {
      orgId: string;
      productId: string;
      identifier: string;
      description: string | null;
      tags: string[];
    },
    tx: Tx,
  ): Promise<void> {
    await tx.getRepository(Device).insert(device);
  }

  /**
   * One page of a product's device list: the page's ids first (index-only scan of the sort index), then their rows
   * (device-list.query.ts).
   */
  async pageForProduct(productId: string, q: DeviceListQuery): Promise<DeviceRow[]> {
    const { where, orderBy, params } = deviceListSql(productId, q);
    return readRows<DeviceRow>(this.db, devicePageSql(where, orderBy, params), [
      ...params,
      q.page.pageSize,
      q.page.offset,
    ]);
  }

  /** How many devices a product's device list holds: from the counter rows when the filters allow. */
  async countForProduct(productId: string, q: DeviceListQuery): Promise<number> {
    const { where, params } = deviceListSql(productId, q);
    const countQuery = deviceCountSql(productId, q, where, params);
    const [{ count }] = await readRows<{ count: number }>(this.db, countQuery.sql, countQuery.params);
    return count;
  }

  /** A device with its organization and product names, by id. */
  async findRowById(id: string): Promise<DeviceRow | null> {
    const rows = await this.db.query<DeviceRow[]>(
      `SELECT ${DEVICE_COLUMNS} FROM ${DEVICE_FROM} WHERE d.id = $1`,
      [id],
    );
    return rows[0] ?? null;
  }

  /** A product's device with its organization and product names, by id. */
  async findRowByIdInProduct(productId: string, id: string): Promise<DeviceRow | null> {
    const rows = await this.db.query<DeviceRow[]>(
      `SELECT ${DEVICE_COLUMNS} FROM ${DEVICE_FROM} WHERE d.product_id = $1 AND d.id = $2`,
      [productId, id],
    );
    return rows[0] ?? null;
  }

  /** A product's device with its organization and product names, by identifier. */
  async findRowByIdentifier(productId: string, identifier: string): Promise<DeviceRow | null> {
    const rows = await this.db.query<DeviceRow[]>(
      `SELECT ${DEVICE_COLUMNS} FROM ${DEVICE_FROM} WHERE d.product_id = $1 AND d.identifier = $2`,
      [productId, identifier],
    );
    return rows[0] ?? null;
  }

  /** A product's device entity by identifier. */
  findByIdentifier(productId: string, identifier: string): Promise<Device | null> {
    return this.db.getRepository(Device).findOneBy({ productId, identifier });
  }

  /** A device's identifier by id. */
  async findIdentifierById(id: string, tx: Queryable = this.db): Promise<string | undefined> {
    const rows = await tx.query<{ identifier: string }[]>(`SELECT identifier FROM devices WHERE id = $1`, [
      id,
    ]);
    return rows[0]?.identifier;
  }

  /** The extensions the product's device opts out of, as stored (keys it never set are absent), or null: no device. */
  async extensionOptOuts(productId: string, identifier: string): Promise<unknown> {
    const rows = await this.db.query<{ extensions: unknown }[]>(
      `SELECT extensions FROM devices WHERE product_id = $1 AND identifier = $2`,
      [productId, identifier],
    );
    return rows.length === 0 ? null : rows[0].extensions;
  }

  /** Merges changed opt-outs into the stored ones; the stored opt-outs after, or null when there is no such device. */
  async mergeExtensionOptOuts(
    productId: string,
    identifier: string,
    changes: Partial<ExtensionSettings>,
    tx: Queryable,
  ): Promise<unknown> {
    const [rows] = await tx.query<[{ extensions: unknown }[], number]>(
      `UPDATE devices SET extensions = extensions || $3::jsonb, updated_at = now()
        WHERE product_id = $1 AND identifier = $2 RETURNING extensions`,
      [productId, identifier, JSON.stringify(changes)],
    );
    return rows.length === 0 ? null : rows[0].extensions;
  }

  /** The device's extension settings and its product's (see allowedExtensions), or null when it is gone. */
  async extensionSettings(deviceId: string): Promise<{ product: unknown; device: unknown } | null> {
    const rows: { product: unknown; device: unknown }[] = await this.db.query(
      `SELECT p.extensions AS product, d.extensions AS device
         FROM devices d JOIN products p ON p.id = d.product_id WHERE d.id = $1`,
      [deviceId],
    );
    return rows[0] ?? null;
  }

  /** The device with this identifier (identifiers are unique across products) and its product, or null. */
  async findProductByIdentifier(identifier: string): Promise<{ id: string; product_id: string } | null> {
    const rows: { id: string; product_id: string }[] = await this.db.query(
      `SELECT id, product_id FROM devices WHERE identifier = $1`,
      [identifier],
    );
    return rows[0] ?? null;
  }

  /** Registers a device; the new row's id, or none when the identifier exists already. */
  insertIfAbsent(
    orgId: string,
    productId: string,
    identifier: string,
    tx: Queryable,
    template?: { tags: string[]; description: string | null },
  ): Promise<{ id: string }[]> {
    if (template) {
      return tx.query(
        `INSERT INTO devices (org_id, product_id, identifier, tags, description) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (identifier) DO NOTHING RETURNING id`,
        [orgId, productId, identifier, template.tags, template.description],
      );
    }
    return tx.query(
      `INSERT INTO devices (org_id, product_id, identifier) VALUES ($1, $2, $3)
       ON CONFLICT (identifier) DO NOTHING RETURNING id`,
      [orgId, productId, identifier],
    );
  }

  /** Changes a product's device; false when there is none with that identifier. */
  async update(productId: string, identifier: string, changes: DeviceChanges, tx: Tx): Promise<boolean> {
    const result = await tx.getRepository(Device).update({ productId, identifier }, changes);
    return Boolean(result.affected);
  }

  /**
   * Moves the device to another product and organization, if it is still in `fromProductId` (compare-and-set
   * against a concurrent move). The counters' triggers follow `product_id`.
   */
  async move(deviceId: string, fromProductId: string, orgId: string, productId: string, tx: Queryable) {
    const [, moved] = await tx.query<[unknown, number]>(
      `UPDATE devices SET org_id = $3, product_id = $4, updated_at = now() WHERE id = $1 AND product_id = $2`,
      [deviceId, fromProductId, orgId, productId],
    );
    return moved === 1;
  }

  /** Turns the device's automatic updates off (a manual upgrade). */
  async disableUpdates(deviceId: string, tx: Queryable): Promise<void> {
    await tx.query(`UPDATE devices SET updates_enabled = false WHERE id = $1 AND updates_enabled`, [
      deviceId,
    ]);
  }

  /**
   * Takes the device out of the deployment penalty box, as NervesHub does: no block, no update attempts, automatic
   * updates on. False when the device is gone.
   */
  async clearPenaltyBox(deviceId: string, tx: Queryable): Promise<boolean> {
    const [, count] = await tx.query<[unknown[], number]>(
      `UPDATE devices SET updates_blocked_until = NULL, update_attempts = '{}', updates_enabled = true WHERE id = $1`,
      [deviceId],
    );
    return count > 0;
  }

  /** Deletes a product's device; false when there is none with that identifier. */
  async delete(productId: string, identifier: string, tx: Tx): Promise<boolean> {
    const result = await tx.getRepository(Device).delete({ productId, identifier });
    return Boolean(result.affected);
  }

  /**
   * A device's `device` channel join in one statement: stores the metadata (unchanged when the join names no
   * firmware), marks the device connected on `instanceId`, and reads what the join answers with: the org's fwup
   * public keys (when `withKeys`) and the device's pending update. Null when the device no longer exists.
   */
  async recordJoin(
    device: { deviceId: string; orgId: string },
    metadata: FirmwareMetadata | null,
    instanceId: string,
    withKeys: boolean,
  ): Promise<DeviceJoin | null> {
    const rows = await readRows<
      Partial<PendingUpdateRow> & {
        keys: string[] | null;
        membership_check: boolean;
        update_attempts_cleared: boolean;
      }
    >(this.db, RECORD_JOIN, [
      device.deviceId,
      metadata !== null,
      metadata === null ? null : JSON.stringify(metadata),
      metadata?.version?.slice(0, MAX_INDEXED_VALUE) ?? null,
      metadata?.platform?.slice(0, MAX_INDEXED_VALUE) ?? null,
      instanceId,
      device.orgId,
      withKeys,
      versionKey(metadata),
    ]);
    const row = rows[0];
    if (!row) return null;
    const {
      keys,
      membership_check: membershipCheck,
      update_attempts_cleared: updateAttemptsCleared,
      ...pending
    } = row;
    return {
      keys: withKeys ? (keys ?? []) : null,
      pending: pending.firmware_id ? (pending as PendingUpdateRow) : null,
      membershipCheck,
      updateAttemptsCleared,
    };
  }

  /** The instance holding the device's socket according to the database, or null when not connected. */
  async findHolder(deviceId: string): Promise<string | null> {
    const [row] = await this.db.query<{ connected_instance_id: string | null }[]>(
      `SELECT connected_instance_id FROM devices WHERE id = $1 AND connection_status = 'connected'`,
      [deviceId],
    );
    return row?.connected_instance_id ?? null;
  }

  /** The device is connected on `instanceId` (activity now). */
  async markConnected(deviceId: string, instanceId: string): Promise<void> {
    await this.db.query(
      `UPDATE devices SET connection_status = 'connected', connected_instance_id = $2, last_communication = now(),
                          connected_at = now()
        WHERE id = $1`,
      [deviceId, instanceId],
    );
  }

  /**
   * The devices among `ids` still held by `instanceId` are disconnected (activity now). Rows are locked in id
   * order, as `recordActivity` locks them, so that the two never deadlock. The instance is compared with
   * `IS NOT DISTINCT FROM`, which no index serves: the rows are found by id. With `=`, PostgreSQL could take the
   * index on `connected_instance_id` and read every device the instance holds (10,000 index entries for a batch
   * of 12 devices, 90 ms, seen on a rollout).
   */
  async markDisconnected(ids: readonly string[], instanceId: string): Promise<DisconnectedDevice[]> {
    const { rows } = await writeRows<DisconnectedDevice>(
      this.db,
      `UPDATE devices d
              SET connection_status = 'disconnected', connected_instance_id = NULL, connected_at = NULL,
                  last_communication = now()
             FROM (SELECT id FROM devices
                    WHERE id = ANY($1::bigint[]) AND connected_instance_id IS NOT DISTINCT FROM $2::uuid
                    ORDER BY id FOR UPDATE) AS leaving
            WHERE d.id = leaving.id
        RETURNING d.product_id, d.identifier`,
      [ids, instanceId],
    );
    return rows;
  }

  /**
   * Writes `last_communication` of the devices among `ids` still held by `instanceId` (rows locked in id order;
   * found by id, as in `markDisconnected`).
   */
  async recordActivity(ids: readonly string[], ats: readonly string[], instanceId: string): Promise<void> {
    await this.db.query(
      `UPDATE devices d SET last_communication = v.at
         FROM unnest($1::bigint[], $2::timestamptz[]) AS v(id, at),
              (SELECT id FROM devices
                WHERE id = ANY($1::bigint[]) AND connected_instance_id IS NOT DISTINCT FROM $3::uuid
                ORDER BY id FOR UPDATE) AS held
        WHERE d.id = v.id AND d.id = held.id`,
      [ids, ats, instanceId],
    );
  }

  /** Every device held by `instanceId` becomes disconnected; answers those of the products `watched`. */
  async disconnectAllHeldBy(instanceId: string, watched: readonly string[]): Promise<DisconnectedDevice[]> {
    return this.db.query(
      `WITH gone AS (
         UPDATE devices SET connection_status = 'disconnected', connected_instance_id = NULL, connected_at = NULL
          WHERE connected_instance_id = $1
         RETURNING product_id, identifier)
       SELECT product_id, identifier FROM gone WHERE product_id = ANY($2::bigint[])`,
      [instanceId, watched],
    );
  }

  /** The devices `ids` are connected on `instanceId` again (its instance row had been reaped). */
  async markConnectedAgain(ids: readonly string[], instanceId: string): Promise<void> {
    await this.db.query(
      `UPDATE devices SET connection_status = 'connected', connected_instance_id = $2,
                          connected_at = COALESCE(connected_at, now())
            WHERE id = ANY($1::bigint[])`,
      [ids, instanceId],
    );
  }

  /**
   * Devices held by gateway instances whose lease ran out become disconnected; answers how many, and those of the
   * products `watched`.
   */
  async disconnectFromExpiredInstances(
    tx: Queryable = this.db,
    watched: readonly string[] = [],
  ): Promise<{ reaped: number; watched: DisconnectedDevice[] }> {
    const [row] = await tx.query<{ reaped: number; watched: DisconnectedDevice[] | null }[]>(
      `WITH gone AS (
         UPDATE devices SET connection_status = 'disconnected', connected_instance_id = NULL, connected_at = NULL
          WHERE connected_instance_id IN (SELECT id FROM gateway_instances WHERE lease_until < now())
         RETURNING product_id, identifier)
       SELECT count(*)::int AS reaped,
              json_agg(json_build_object('product_id', product_id::text, 'identifier', identifier))
                FILTER (WHERE product_id = ANY($1::bigint[])) AS watched
         FROM gone`,
      [watched],
    );
    return { reaped: row?.reaped ?? 0, watched: row?.watched ?? [] };
  }

  /** How many devices are connected. */
  async countConnected(): Promise<number> {
    const rows: { n: string }[] = await this.db.query(
      `SELECT count(*) AS n FROM devices WHERE connection_status = 'connected'`,
    );
    return Number(rows[0].n);
  }

  /**
   * `fleethub demo`: devices `from`..`to` of a made-up fleet in one statement, spread over the org's products
   * (three gateways to one sensor) with tags from `tags`, a firmware version of their product and its metadata,
   * backdated registration and a connection history: about a third connected now, most seen within the last
   * week, one in twenty never. Numbering and spread come from `hashtext`, so the fleet is the same every time.
   */
  async insertDemoFleet(orgId: string, from: number, to: number, tags: readonly string[], tx: Queryable) {
    await tx.query(
      `WITH firmware AS (
         SELECT f.product_id, p.name AS product, f.uuid::text AS uuid, f.version, f.version_sort_key, f.platform,
                f.architecture, f.author, f.description,
                row_number() OVER (PARTITION BY f.product_id ORDER BY f.version_sort_key) - 1 AS nth,
                count(*) OVER (PARTITION BY f.product_id) AS versions
           FROM firmwares f JOIN products p ON p.id = f.product_id WHERE p.org_id = $1
       ), numbered AS (
         SELECT i, CASE WHEN i % 4 = 0 THEN 'sensor' ELSE 'gateway' END AS product_name,
                (hashtext('demo' || i) & 2147483647) AS h
           FROM generate_series($2::int, $3::int) AS i
       )
       INSERT INTO devices (org_id, product_id, identifier, description, tags, connection_status,
                            last_communication, firmware_metadata, firmware_version, firmware_version_key,
                            firmware_platform, inserted_at)
       SELECT $1, p.id, 'demo-' || n.product_name || '-' || lpad(n.i::text, 5, '0'),
              'Demo ' || n.product_name || ' #' || n.i,
              ARRAY[($4::text[])[1 + n.h % 3], ($4::text[])[4 + (n.h / 3) % 2]]
                || CASE WHEN n.h % 5 = 0 THEN ARRAY[($4::text[])[6 + (n.h / 7) % 2]] ELSE '{}'::text[] END,
              CASE WHEN n.h % 20 = 0 THEN 'not_seen'
                   WHEN n.h % 3 = 0 THEN 'connected' ELSE 'disconnected' END::device_connection_status,
              CASE WHEN n.h % 20 = 0 THEN NULL
                   WHEN n.h % 3 = 0 THEN now() - make_interval(secs => n.h % 60)
                   ELSE now() - make_interval(mins => n.h % 10080) END,
              CASE WHEN n.h % 20 = 0 THEN NULL ELSE jsonb_build_object(
                'uuid', f.uuid, 'product', f.product, 'version', f.version, 'platform', f.platform,
                'architecture', f.architecture, 'author', f.author, 'description', f.description) END,
              CASE WHEN n.h % 20 = 0 THEN NULL ELSE f.version END,
              CASE WHEN n.h % 20 = 0 THEN NULL ELSE f.version_sort_key END,
              CASE WHEN n.h % 20 = 0 THEN NULL ELSE f.platform END,
              now() - make_interval(days => 30 + n.h % 60)
         FROM numbered n
         JOIN products p ON p.org_id = $1 AND p.name = n.product_name
         JOIN firmware f ON f.product_id = p.id AND f.nth = (n.h / 11) % f.versions`,
      [orgId, from, to, tags],
    );
  }

  /**
   * `fleethub demo`: a rollout part done. Of the group's devices not yet on its current release (in identifier
   * order), every `everyNth` one already runs the release's firmware (the metadata a join would have stored).
   * Answers how many moved.
   */
  async updateDemoDeploymentDevices(groupId: string, everyNth: number, tx: Queryable): Promise<number> {
    const [, count] = await tx.query<[unknown, number]>(
      `WITH release AS (
         SELECT f.uuid::text AS uuid, f.version, f.version_sort_key, f.platform, f.architecture, f.author,
                f.description, p.name AS product
           FROM deployment_groups g
           JOIN deployment_releases r ON r.id = g.current_release_id
           JOIN firmwares f ON f.id = r.firmware_id
           JOIN products p ON p.id = f.product_id
          WHERE g.id = $1
       ), behind AS (
         SELECT d.id, row_number() OVER (ORDER BY d.identifier) AS nth
           FROM devices d JOIN deployment_group_members m ON m.device_id = d.id, release
          WHERE m.deployment_group_id = $1 AND (d.firmware_metadata->>'uuid') IS DISTINCT FROM release.uuid
       )
       UPDATE devices d
          SET firmware_metadata = jsonb_build_object(
                'uuid', release.uuid, 'product', release.product, 'version', release.version,
                'platform', release.platform, 'architecture', release.architecture, 'author', release.author,
                'description', release.description),
              firmware_version = release.version, firmware_version_key = release.version_sort_key,
              firmware_platform = release.platform
         FROM behind, release
        WHERE d.id = behind.id AND behind.nth % $2 = 0`,
      [groupId, everyNth],
    );
    return count;
  }

  /**
   * `fleethub demo`: `count` of the group's devices (behind its release, with no update in flight, in identifier
   * order from the end) failed their update just now: one update attempt each and the penalty box for the group's
   * `penalty_timeout_minutes`, as the orchestrator leaves them. Answers how many.
   */
  async blockDemoDeploymentDevices(groupId: string, count: number, tx: Queryable): Promise<number> {
    const [, blocked] = await tx.query<[unknown, number]>(
      `WITH g AS (
         SELECT g.id, g.penalty_timeout_minutes, f.uuid::text AS uuid
           FROM deployment_groups g
           JOIN deployment_releases r ON r.id = g.current_release_id
           JOIN firmwares f ON f.id = r.firmware_id
          WHERE g.id = $1
       ), picked AS (
         SELECT d.id FROM devices d JOIN deployment_group_members m ON m.device_id = d.id, g
          WHERE m.deployment_group_id = g.id AND (d.firmware_metadata->>'uuid') IS DISTINCT FROM g.uuid
            AND NOT EXISTS (SELECT 1 FROM pending_updates pu WHERE pu.device_id = d.id)
          ORDER BY d.identifier DESC LIMIT $2
       )
       UPDATE devices d
          SET update_attempts = ARRAY[now() - interval '2 minutes'],
              updates_blocked_until = now() - interval '2 minutes' + make_interval(mins => g.penalty_timeout_minutes)
         FROM picked, g
        WHERE d.id = picked.id`,
      [groupId, count],
    );
    return blocked;
  }

  /** How many devices the organization has, and how many of them are shown as connected. */
  async countConnectedInOrg(orgId: string, tx: Queryable = this.db) {
    const [counts] = await tx.query<{ devices: string; connected: string }[]>(
      `SELECT count(*) AS devices, count(*) FILTER (WHERE connection_status = 'connected') AS connected
         FROM devices WHERE org_id = $1`,
      [orgId],
    );
    return { devices: Number(counts.devices), connected: Number(counts.connected) };
  }

  /**
   * Deployment orchestrator: an orchestrated update of each of `ids` failed, was ignored or expired. Appends an
   * update attempt (cleared when an update completes); the device goes in the penalty box for
   * `rule.penaltyMinutes` when `penaliseAlways` (the device reported the failure, as NervesHub does), or when it
   * reaches `rule.threshold` attempts or `rule.rateAmount` attempts within the last `rule.rateSeconds`. Answers
   * the ids in the penalty box.
   */
  async recordUpdateFailures(
    ids: readonly string[],
    rule: { threshold: number; rateSeconds: number; rateAmount: number; penaltyMinutes: number },
    penaliseAlways: boolean,
    tx: Queryable = this.db,
  ): Promise<string[]> {
    const penalised = `($6::boolean OR cardinality(d.update_attempts) + 1 >= $2
        OR (SELECT count(*) FROM unnest(d.update_attempts) t WHERE t > now() - make_interval(secs => $3)) + 1 >= $4)`;
    const [rows] = await tx.query<[{ id: string; penalised: boolean }[], number]>(
      `UPDATE devices d
          SET updates_blocked_until = CASE WHEN ${penalised} THEN now() + make_interval(mins => $5)
                                           ELSE d.updates_blocked_until END,
              update_attempts = d.update_attempts || now()
        WHERE d.id = ANY($1::bigint[])
       RETURNING d.id, d.updates_blocked_until > now() AS penalised`,
      [ids, rule.threshold, rule.rateSeconds, rule.rateAmount, rule.penaltyMinutes, penaliseAlways],
    );
    return rows.filter((row) => row.penalised).map((row) => row.id);
  }

  /** The identifiers of these devices (those that still exist), with their organization and product, by id. */
  async identifiersOf(ids: readonly string[], tx: Queryable = this.db): Promise<DeviceNames[]> {
    return tx.query(
      `SELECT id, identifier, org_id, product_id FROM devices WHERE id = ANY($1::bigint[]) ORDER BY id`,
      [ids],
    );
  }

  /** Deployment orchestrator: the device's update completed: its attempts and penalty box are cleared. */
  async clearUpdateAttempts(id: string, tx: Queryable = this.db): Promise<void> {
    if (tx === this.db) await writeRows(this.db, CLEAR_UPDATE_ATTEMPTS, [id]);
    else await tx.query(CLEAR_UPDATE_ATTEMPTS.text, [id]);
  }

  /**
   * The ids of the next window of a bulk change over a filter (device-bulk.query.ts, `bulkWindowSql`), in `tx`.
   * `ordered` (a window came back full before: the filter matches more than a window) reads it in primary-key
   * order only: bitmap scans and sorts are disabled for this statement, since either would read every remaining
   * match for each window (a window read from a bitmap of 200,000 tagged devices, then sorted, 40 times over),
   * where the ordered scan reads on from where the last window stopped. The first window is planned freely: a
   * filter that matches few devices is best found by its own index, once.
   */
  async bulkWindow(
    productId: string,
    selection: BulkSelection,
    after: string,
    size: number,
    ordered: boolean,
    tx: Queryable,
  ): Promise<string[]> {
    const { sql, params } = bulkWindowSql(productId, selection, after, size);
    if (!ordered) {
      const [row] = await tx.query<{ ids: string[] }[]>(sql, params);
      return row.ids;
    }
    const names = [...ORDERED_WINDOW_SETTINGS];
    await tx.query(`SELECT set_config(name, 'off', true) FROM unnest($1::text[]) AS name`, [names]);
    const [row] = await tx.query<{ ids: string[] }[]>(sql, params);
    // Back to the session's values for the rest of the window's transaction.
    await tx.query(`SELECT set_config(name, reset_val, true) FROM pg_settings WHERE name = ANY($1::text[])`, [
      names,
    ]);
    return row.ids;
  }

  /** The SELECT of a window's webhook events (run by the outbox, in the window's transaction): no statement here. */
  bulkEventsSource(ids: readonly string[], events: BulkEvents): { sql: string; params: unknown[] } {
    return bulkEventsSql(ids, events);
  }

  /**
   * One statement of a bulk change of the product's devices (device-bulk.query.ts), in `tx`. The counters' row
   * trigger skips its rows: the statement writes their deltas itself, once.
   */
  async bulkChange(
    productId: string,
    selection: BulkSelection,
    change: BulkChange,
    window: readonly string[] | null,
    tx: Queryable,
  ): Promise<BulkChangeResult> {
    const { sql, params } = bulkChangeSql(productId, selection, change, window);
    await tx.query(`SELECT set_config($1, $2, true)`, [COUNTS_BY_STATEMENT.name, COUNTS_BY_STATEMENT.value]);
    const [row] = await tx.query<
      {
        matched: number;
        written: number;
        over_limit: number;
        ids: string[];
        identifiers: string[];
        connected: string[];
      }[]
    >(sql, params);
    // Only this statement: anything else in the transaction counts through the trigger again.
    await tx.query(`SELECT set_config($1, '', true)`, [COUNTS_BY_STATEMENT.name]);
    return {
      matched: row.matched,
      written: row.written,
      overLimit: row.over_limit,
      ids: row.ids.map(String),
      identifiers: row.identifiers,
      connected: row.connected.map(String),
    };
  }

  /** How many selected devices would carry more than `maxTags` tags once `tags` are added. */
  async countOverTagLimit(
    productId: string,
    selection: BulkSelection,
    tags: readonly string[],
    maxTags: number,
  ): Promise<number> {
    const { sql, params } = overTagLimitSql(productId, selection, tags, maxTags);
    const [row] = await readRows<{ n: number }>(this.db, sql, params);
    return row.n;
  }
}
