import type { QueryResultRow } from 'pg';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { PreparedStatement, readRows } from '../database/read-rows';
import type { Queryable } from '../database/transactions';
import type { QueueManagement, TagOperator } from './deployment-group.entity';
import { parseVersionRequirement, versionRequirementSql } from './version-requirement';

/** A device's membership inputs, read on every join of a device with a group (prepared once per connection). */
const MEMBERSHIP_STATE = new PreparedStatement(
  `SELECT d.id, d.product_id, m.deployment_group_id, d.tags, d.firmware_platform,
          d.firmware_metadata->>'architecture' AS firmware_architecture, d.firmware_version,
          COALESCE((
            SELECT json_agg(json_build_object(
                     'id', g.id::text, 'is_active', g.is_active,
                     'lock_device_membership', g.lock_device_membership, 'platform', g.platform,
                     'architecture', g.architecture, 'conditions_version', g.conditions_version,
                     'conditions_tags', g.conditions_tags, 'conditions_tag_operator', g.conditions_tag_operator,
                     'version_sort_key', f.version_sort_key))
              FROM deployment_groups g
              JOIN deployment_releases r ON r.id = g.current_release_id
              JOIN firmwares f ON f.id = r.firmware_id
             WHERE g.product_id = d.product_id), '[]'::json) AS groups
     FROM devices d LEFT JOIN deployment_group_members m ON m.device_id = d.id WHERE d.id = $1`,
);

/** A deployment group with its current release's firmware and its live counts, as the API shows it. */
export interface DeploymentGroupRow {
  id: string;
  name: string;
  is_active: boolean;
  platform: string;
  architecture: string;
  conditions_version: string;
  conditions_tags: string[];
  conditions_tag_operator: TagOperator;
  notes: string | null;
  delta_updatable: boolean;
  concurrent_updates: number;
  inflight_update_expiration_minutes: number;
  device_failure_threshold: number;
  device_failure_rate_seconds: number;
  device_failure_rate_amount: number;
  failure_threshold: number;
  penalty_timeout_minutes: number;
  queue_management: QueueManagement;
  lock_device_membership: boolean;
  paused_reason: string | null;
  paused_at: Date | null;
  inserted_at: Date;
  updated_at: Date;
  release_number: number | null;
  release_failed_count: number | null;
  release_inserted_at: Date | null;
  release_updated_at: Date | null;
  firmware_uuid: string | null;
  firmware_version: string | null;
  firmware_platform: string | null;
  firmware_architecture: string | null;
  releases_count: number;
  device_count: number;
  updating_count: number;
  updated_count: number;
  blocked_count: number;
}

type GroupCounts = Pick<
  DeploymentGroupRow,
  'device_count' | 'updating_count' | 'updated_count' | 'blocked_count'
>;

/** A group's live counts with its release's failures: what `counts` of the group API is made of. */
export type GroupCountsRow = GroupCounts & Pick<DeploymentGroupRow, 'id' | 'name' | 'release_failed_count'>;

/** The settings a create or an update writes (columns of `deployment_groups`). */
export interface DeploymentGroupSettings {
  name?: string;
  is_active?: boolean;
  conditions_version?: string;
  conditions_tags?: string[];
  conditions_tag_operator?: TagOperator;
  notes?: string | null;
  delta_updatable?: boolean;
  concurrent_updates?: number;
  inflight_update_expiration_minutes?: number;
  device_failure_threshold?: number;
  device_failure_rate_seconds?: number;
  device_failure_rate_amount?: number;
  failure_threshold?: number;
  penalty_timeout_minutes?: number;
  queue_management?: QueueManagement;
  lock_device_membership?: boolean;
  paused_reason?: null;
  paused_at?: null;
}

/** Only these names reach the SQL text of an insert or update. */
const SETTING_COLUMNS: readonly (keyof DeploymentGroupSettings)[] = [
  'name',
  'is_active',
  'conditions_version',
  'conditions_tags',
  'conditions_tag_operator',
  'notes',
  'delta_updatable',
  'concurrent_updates',
  'inflight_update_expiration_minutes',
  'device_failure_threshold',
  'device_failure_rate_seconds',
  'device_failure_rate_amount',
  'failure_threshold',
  'penalty_timeout_minutes',
  'queue_management',
  'lock_device_membership',
  'paused_reason',
  'paused_at',
];

export interface FirmwareChoice {
  id: string;
  uuid: string;
  version: string;
  platform: string;
  architecture: string;
}

export interface DeploymentReleaseRow {
  number: number;
  failed_count: number;
  inserted_at: Date;
  updated_at: Date;
  firmware_uuid: string;
  firmware_version: string;
  firmware_platform: string;
  firmware_architecture: string;
  created_by: string | null;
}

/** A group as membership sees it: its conditions, and the sort key of its current release's firmware version. */
export interface MembershipGroup {
  id: string;
  is_active: boolean;
  lock_device_membership: boolean;
  platform: string;
  architecture: string;
  conditions_version: string;
  conditions_tags: string[];
  conditions_tag_operator: TagOperator;
  version_sort_key: string;
}

/** What deciding one device's group needs: the device's firmware, tags and group, and its product's groups. */
export interface MembershipState {
  id: string;
  product_id: string;
  deployment_group_id: string | null;
  tags: string[];
  firmware_platform: string | null;
  firmware_architecture: string | null;
  firmware_version: string | null;
  groups: MembershipGroup[];
}

/** A group's live counts (SQL over the group's id, its product, and its release's version and uuid). */
function countColumns(group: string, product: string, version: string, uuid: string): string {
  const member = `EXISTS (SELECT 1 FROM deployment_group_members m WHERE m.device_id = d.id AND m.deployment_group_id = ${group})`;
  return `
    (SELECT count(*)::int FROM deployment_group_members m WHERE m.deployment_group_id = ${group}) AS device_count,
    (SELECT count(*)::int FROM devices d
      WHERE d.product_id = ${product} AND d.firmware_version = ${version}
        AND d.firmware_metadata->>'uuid' = ${uuid} AND ${member}) AS updated_count,
    (SELECT count(*)::int FROM devices d
      WHERE d.product_id = ${product} AND d.updates_blocked_until > now() AND ${member}) AS blocked_count,
    (SELECT count(*)::int FROM pending_updates pu WHERE pu.deployment_group_id = ${group}) AS updating_count`;
}

/** A group with its current release; `counts`: and its live counts. */
function groupSelect(counts: boolean): string {
  return `
  SELECT g.id, g.name, g.is_active, g.platform, g.architecture, g.conditions_version,
         g.conditions_tags, g.conditions_tag_operator, g.notes, g.delta_updatable, g.concurrent_updates,
         g.inflight_update_expiration_minutes, g.device_failure_threshold, g.device_failure_rate_seconds,
         g.device_failure_rate_amount, g.failure_threshold, g.penalty_timeout_minutes, g.queue_management,
         g.lock_device_membership, g.paused_reason, g.paused_at, g.inserted_at, g.updated_at,
         r.number AS release_number, r.failed_count AS release_failed_count,
         r.inserted_at AS release_inserted_at, r.updated_at AS release_updated_at,
         f.uuid AS firmware_uuid, f.version AS firmware_version, f.platform AS firmware_platform,
         f.architecture AS firmware_architecture,
         (SELECT count(*)::int FROM deployment_releases rc WHERE rc.deployment_group_id = g.id) AS releases_count
         ${counts ? `, ${countColumns('g.id', 'g.product_id', 'f.version', 'f.uuid::text')}` : ''}
    FROM deployment_groups g
    LEFT JOIN deployment_releases r ON r.id = g.current_release_id
    LEFT JOIN firmwares f ON f.id = r.firmware_id`;
}

/** Serialises the membership recomputations of one product (first key of the two-key advisory lock). */
export const MEMBERSHIP_LOCK_CLASS = 0x15d6;

/** SQL: the device `d` satisfies group `g`'s platform, architecture and tag conditions. */
const MATCHES_FIRMWARE_AND_TAGS = `
  g.platform = d.firmware_platform AND g.architecture = d.firmware_metadata->>'architecture'
  AND CASE WHEN g.conditions_tag_operator = 'or'
           THEN cardinality(g.conditions_tags) = 0 OR g.conditions_tags && d.tags
           ELSE g.conditions_tags <@ d.tags END`;

/** SQL: group `g`'s version requirement holds for device `d` (one branch per group, given as `groups`). */
function versionCase(groups: MembershipGroup[], params: unknown[]): string {
  const branches = groups.map((group) => {
    const requirement = parseVersionRequirement(group.conditions_version);
    // A stored requirement that does not parse matches nothing (every one is validated when written).
    const predicate = requirement
      ? versionRequirementSql(requirement, 'd.firmware_version_key', params)
      : 'FALSE';
    params.push(group.id);
    return `WHEN $${params.length}::bigint THEN ${predicate}`;
  });
  return branches.length === 0 ? 'FALSE' : `CASE g.id ${branches.join(' ')} ELSE FALSE END`;
}

@Injectable()
export class DeploymentGroupsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** The product's groups by name, with their current release and live counts (one statement). */
  listForProduct(productId: string): Promise<DeploymentGroupRow[]> {
    return readRows<DeploymentGroupRow>(
      this.db,
      `${groupSelect(true)} WHERE g.product_id = $1 ORDER BY g.name`,
      [productId],
    );
  }

  /** The live counts of each of the product's groups (one statement): what the console's live view follows. */
  countsOfProduct(productId: string): Promise<GroupCountsRow[]> {
    return readRows<GroupCountsRow>(
      this.db,
      `SELECT g.id, g.name, r.failed_count AS release_failed_count,
              ${countColumns('g.id', 'g.product_id', 'f.version', 'f.uuid::text')}
         FROM deployment_groups g
         LEFT JOIN deployment_releases r ON r.id = g.current_release_id
         LEFT JOIN firmwares f ON f.id = r.firmware_id
        WHERE g.product_id = $1 ORDER BY g.name`,
      [productId],
    );
  }

  /**
   * The product's group by name, with its current release and live counts. The counts are a statement of their
   * own with the release's version and uuid as values, so that PostgreSQL plans them for that version (a new
   * release that no device runs yet: a few index pages) rather than for an average one (a scan of the product).
   */
  async findByName(productId: string, name: string, tx?: Queryable): Promise<DeploymentGroupRow | null> {
    const read = <T extends QueryResultRow>(sql: string, params: unknown[]) =>
      tx ? tx.query<T[]>(sql, params) : readRows<T>(this.db, sql, params);
    const [group] = await read<Omit<DeploymentGroupRow, keyof GroupCounts>>(
      `${groupSelect(false)} WHERE g.product_id = $1 AND g.name = $2`,
      [productId, name],
    );
    if (!group) return null;
    const [counts] = await read<GroupCounts>(
      `SELECT ${countColumns('$1::bigint', '$2::bigint', '$3::text', '$4::text')}`,
      [group.id, productId, group.firmware_version, group.firmware_uuid],
    );
    return { ...group, ...counts };
  }

  /** Locks the product's group by name for a change; its id, platform and architecture. */
  async lockByName(
    productId: string,
    name: string,
    tx: Queryable,
  ): Promise<{ id: string; platform: string; architecture: string; is_active: boolean } | null> {
    const rows = await tx.query<{ id: string; platform: string; architecture: string; is_active: boolean }[]>(
      `SELECT id, platform, architecture, is_active FROM deployment_groups
        WHERE product_id = $1 AND name = $2 FOR UPDATE`,
      [productId, name],
    );
    return rows[0] ?? null;
  }

  /** The product's firmware with this uuid (compared lower-case), for a release. */
  async findFirmware(
    productId: string,
    uuid: string,
    tx: Queryable = this.db,
  ): Promise<FirmwareChoice | null> {
    const rows = await tx.query<FirmwareChoice[]>(
      `SELECT id, uuid::text AS uuid, version, platform, architecture FROM firmwares
        WHERE product_id = $1 AND uuid::text = lower($2)`,
      [productId, uuid],
    );
    return rows[0] ?? null;
  }

  /** Inserts a group; its id. A duplicate name is the unique violation of `deployment_groups_product_id_name_idx`. */
  async insert(
    orgId: string,
    productId: string,
    firmware: FirmwareChoice,
    settings: DeploymentGroupSettings,
    tx: Queryable,
  ): Promise<string> {
    const columns = SETTING_COLUMNS.filter((column) => settings[column] !== undefined);
    const params: unknown[] = [orgId, productId, firmware.platform, firmware.architecture];
    for (const column of columns) params.push(settings[column]);
    const rows = await tx.query<{ id: string }[]>(
      `INSERT INTO deployment_groups (org_id, product_id, platform, architecture${columns.map((c) => `, ${c}`).join('')})
       VALUES ($1, $2, $3, $4${columns.map((_, i) => `, $${i + 5}`).join('')}) RETURNING id`,
      params,
    );
    return rows[0].id;
  }

  /** Changes a group's settings (those given). */
  async update(groupId: string, settings: DeploymentGroupSettings, tx: Queryable): Promise<void> {
    const columns = SETTING_COLUMNS.filter((column) => settings[column] !== undefined);
    if (columns.length === 0) return;
    const params: unknown[] = [groupId];
    for (const column of columns) params.push(settings[column]);
    await tx.query(
      `UPDATE deployment_groups SET ${columns.map((c, i) => `${c} = $${i + 2}`).join(', ')}, updated_at = now()
        WHERE id = $1`,
      params,
    );
  }

  /** Adds the group's next release (number + 1) of `firmwareId` and makes it the current one; its number. */
  async addRelease(
    groupId: string,
    firmwareId: string,
    createdById: string | null,
    tx: Queryable,
  ): Promise<number> {
    const [release] = await tx.query<{ id: string; number: number }[]>(
      `INSERT INTO deployment_releases (deployment_group_id, number, firmware_id, created_by_id)
       SELECT $1, COALESCE(max(number), 0) + 1, $2, $3 FROM deployment_releases WHERE deployment_group_id = $1
       RETURNING id, number`,
      [groupId, firmwareId, createdById],
    );
    await tx.query(`UPDATE deployment_groups SET current_release_id = $2, updated_at = now() WHERE id = $1`, [
      groupId,
      release.id,
    ]);
    return release.number;
  }

  async delete(groupId: string, tx: Queryable): Promise<void> {
    await tx.query(`DELETE FROM deployment_groups WHERE id = $1`, [groupId]);
  }

  /** Deletes every group of the product (before its firmware, which their releases hold). */
  async deleteAllOfProduct(productId: string, tx: Queryable): Promise<void> {
    await tx.query(`DELETE FROM deployment_groups WHERE product_id = $1`, [productId]);
  }

  /** The group's releases, newest first. */
  listReleases(groupId: string): Promise<DeploymentReleaseRow[]> {
    return readRows<DeploymentReleaseRow>(
      this.db,
      `SELECT r.number, r.failed_count, r.inserted_at, r.updated_at, f.uuid::text AS firmware_uuid,
              f.version AS firmware_version, f.platform AS firmware_platform,
              f.architecture AS firmware_architecture, u.email AS created_by
         FROM deployment_releases r
         JOIN firmwares f ON f.id = r.firmware_id
         LEFT JOIN users u ON u.id = r.created_by_id
        WHERE r.deployment_group_id = $1
        ORDER BY r.number DESC`,
      [groupId],
    );
  }

  /**
   * The product's groups as membership sees them, after taking the product's membership lock (held until the
   * transaction ends, so that two recomputations of one product never interleave).
   */
  /** The device's membership inputs and the groups of its product, in one read. */
  async findMembershipState(deviceId: string): Promise<MembershipState | null> {
    const rows = await readRows<MembershipState>(this.db, MEMBERSHIP_STATE, [deviceId]);
    return rows[0] ?? null;
  }

  /** Takes the device out of its deployment group (it is moving to another product); the group it left. */
  async removeDevice(deviceId: string, tx: Queryable): Promise<string | null> {
    const [rows]: [{ deployment_group_id: string }[], number] = await tx.query(
      `DELETE FROM deployment_group_members WHERE device_id = $1 RETURNING deployment_group_id`,
      [deviceId],
    );
    return rows[0]?.deployment_group_id ?? null;
  }

  /** Takes these devices out of their deployment groups (they are moving to another product), in one statement. */
  async removeDevices(deviceIds: readonly string[], tx: Queryable): Promise<void> {
    await tx.query(`DELETE FROM deployment_group_members WHERE device_id = ANY($1::bigint[])`, [deviceIds]);
  }

  /**
   * Moves the device from group `from` to group `to` (either null), unless its membership changed meanwhile
   * (compare-and-set), in one statement. It takes the shared side of the product's membership lock before it
   * writes (every write below waits for the lock's CTE), so that it waits for a recomputation of the product,
   * which inserts without conflict handling; the rows it writes are read as they are then, whatever the
   * statement's snapshot (READ COMMITTED re-checks an updated or deleted row, and ON CONFLICT sees committed
   * keys). A new membership locks its device and group rows as a foreign key would (KEY SHARE), so that neither
   * can be deleted underneath it.
   */
  async moveDevice(
    deviceId: string,
    productId: string,
    from: string | null,
    to: string | null,
  ): Promise<boolean> {
    if (from === null && to === null) return false;
    const change =
      to === null
        ? `DELETE FROM deployment_group_members WHERE device_id = $1 AND deployment_group_id = $2
              AND EXISTS (SELECT 1 FROM l) RETURNING 1`
        : from === null
          ? `INSERT INTO deployment_group_members (device_id, deployment_group_id)
             SELECT d.id, g.id FROM d, g WHERE $2::bigint IS NULL
             ON CONFLICT (device_id) DO NOTHING RETURNING 1`
          : `UPDATE deployment_group_members m SET deployment_group_id = g.id
               FROM g WHERE m.device_id = $1 AND m.deployment_group_id = $2 RETURNING 1`;
    const rows = await this.db.query<{ n: number }[]>(
      `WITH l AS MATERIALIZED (SELECT pg_advisory_xact_lock_shared($4, hashtext($5::text))),
            d AS (SELECT devices.id FROM l, devices WHERE devices.id = $1 FOR KEY SHARE OF devices),
            g AS (SELECT deployment_groups.id FROM l, deployment_groups
                   WHERE deployment_groups.id = $3 FOR KEY SHARE OF deployment_groups),
            moved AS (${change})
       SELECT count(*)::int AS n FROM moved`,
      [deviceId, from, to, MEMBERSHIP_LOCK_CLASS, productId],
    );
    return rows[0].n > 0;
  }

  /**
   * Takes the product's membership lock (exclusive, until the transaction ends) and answers the product's groups
   * with their current release's version key.
   */
  async lockMembershipGroups(productId: string, tx: Queryable): Promise<MembershipGroup[]> {
    await tx.query(`SELECT pg_advisory_xact_lock($1, hashtext($2::text))`, [
      MEMBERSHIP_LOCK_CLASS,
      productId,
    ]);
    return tx.query<MembershipGroup[]>(
      `SELECT g.id, g.is_active, g.lock_device_membership, g.platform, g.architecture, g.conditions_version,
              g.conditions_tags, g.conditions_tag_operator, f.version_sort_key
         FROM deployment_groups g
         JOIN deployment_releases r ON r.id = g.current_release_id
         JOIN firmwares f ON f.id = r.firmware_id
        WHERE g.product_id = $1`,
      [productId],
    );
  }

  /**
   * Devices of the product (or those among `deviceIds`) leave the unlocked groups among `groups` whose
   * conditions they no longer meet; one statement. Answers how many left.
   */
  async releaseMismatched(
    productId: string,
    groups: MembershipGroup[],
    deviceIds: readonly string[] | null,
    tx: Queryable,
  ): Promise<number> {
    const unlocked = groups.filter((group) => !group.lock_device_membership);
    if (unlocked.length === 0) return 0;
    const params: unknown[] = [productId, unlocked.map((group) => group.id), deviceIds];
    const version = versionCase(unlocked, params);
    const [, count] = await tx.query<[unknown, number]>(
      `DELETE FROM deployment_group_members m
        USING devices d, deployment_groups g
        WHERE m.deployment_group_id = ANY($2::bigint[]) AND d.id = m.device_id AND d.product_id = $1
          AND g.id = m.deployment_group_id AND ($3::bigint[] IS NULL OR d.id = ANY($3::bigint[]))
          AND NOT COALESCE((${MATCHES_FIRMWARE_AND_TAGS}) AND ${version}, FALSE)`,
      params,
    );
    return count;
  }

  /**
   * Devices of the product (or those among `deviceIds`) without a group join their best matching group among
   * `groups` that are active and unlocked: the highest current-release firmware version, then the most matching
   * tags, then the oldest group. One statement; answers how many joined. Under the product's membership lock
   * (`lockMembershipGroups`), so no one else adds a membership meanwhile: a plain insert, a quarter cheaper than
   * one with ON CONFLICT at a million rows.
   */
  async assignBestMatches(
    productId: string,
    groups: MembershipGroup[],
    deviceIds: readonly string[] | null,
    tx: Queryable,
  ): Promise<number> {
    const open = groups.filter((group) => group.is_active && !group.lock_device_membership);
    if (open.length === 0) return 0;
    const params: unknown[] = [productId, open.map((group) => group.id), deviceIds];
    const version = versionCase(open, params);
    const rows = await tx.query<{ n: number }[]>(
      `WITH g AS MATERIALIZED (
         SELECT g.id, g.platform, g.architecture, g.conditions_tags, g.conditions_tag_operator, f.version_sort_key
           FROM deployment_groups g
           JOIN deployment_releases r ON r.id = g.current_release_id
           JOIN firmwares f ON f.id = r.firmware_id
          WHERE g.id = ANY($2::bigint[])
       ), picked AS (
         -- Every pick is made before the first insert: the anti-join below reads the table the insert fills,
         -- and planned for a table that was empty, it would scan it again for each device as it grows.
         SELECT array_agg(d.id ORDER BY d.id) AS ids, array_agg(best.id ORDER BY d.id) AS groups
           FROM devices d
           CROSS JOIN LATERAL (
             SELECT g.id FROM g
              WHERE ${MATCHES_FIRMWARE_AND_TAGS} AND ${version}
              ORDER BY g.version_sort_key DESC,
                       cardinality(ARRAY(SELECT unnest(g.conditions_tags) INTERSECT SELECT unnest(d.tags))) DESC,
                       g.id
              LIMIT 1
           ) best
          WHERE d.product_id = $1 AND d.firmware_platform IS NOT NULL
            AND ($3::bigint[] IS NULL OR d.id = ANY($3::bigint[]))
            AND NOT EXISTS (SELECT 1 FROM deployment_group_members m WHERE m.device_id = d.id)
       ), inserted AS (
         INSERT INTO deployment_group_members (device_id, deployment_group_id)
         SELECT pick.id, pick.group_id FROM picked, unnest(picked.ids, picked.groups) AS pick(id, group_id)
         RETURNING 1
       )
       SELECT count(*)::int AS n FROM inserted`,
      params,
    );
    return rows[0].n;
  }

  /** `fleethub demo`: `count` updates of the group's current release failed (its devices are in the penalty box). */
  async addDemoReleaseFailures(groupId: string, count: number, tx: Queryable): Promise<void> {
    await tx.query(
      `UPDATE deployment_releases r SET failed_count = failed_count + $2, updated_at = now()
         FROM deployment_groups g WHERE g.id = $1 AND r.id = g.current_release_id`,
      [groupId, count],
    );
  }

  /** The groups of these devices (device id → group id), by the membership primary key; both parents joined. */
  async groupsOfDevices(deviceIds: readonly string[]): Promise<Map<string, string>> {
    if (deviceIds.length === 0) return new Map();
    const rows = await this.db.query<{ device_id: string; deployment_group_id: string }[]>(
      `SELECT m.device_id, m.deployment_group_id
         FROM deployment_group_members m
         JOIN deployment_groups g ON g.id = m.deployment_group_id
         JOIN devices d ON d.id = m.device_id
        WHERE m.device_id = ANY($1::bigint[])`,
      [deviceIds],
    );
    return new Map(rows.map((row) => [row.device_id, row.deployment_group_id]));
  }

  /** `fleethub demo`: the product's group by name, its id (null when there is none). */
  async findIdByName(productId: string, name: string, tx: Queryable = this.db): Promise<string | null> {
    const rows = await tx.query<{ id: string }[]>(
      `SELECT id FROM deployment_groups WHERE product_id = $1 AND name = $2`,
      [productId, name],
    );
    return rows[0]?.id ?? null;
  }
}
