import type { DataSource } from 'typeorm';

/** Rollout settings of a group (column names); anything left out takes the column default. */
export interface GroupSettings {
  is_active?: boolean;
  concurrent_updates?: number;
  inflight_update_expiration_minutes?: number;
  device_failure_threshold?: number;
  device_failure_rate_seconds?: number;
  device_failure_rate_amount?: number;
  failure_threshold?: number;
  penalty_timeout_minutes?: number;
  queue_management?: 'FIFO' | 'LIFO';
}

/**
 * Deployment groups, releases and memberships as rows: the API lands in a parallel branch (switch these to
 * `POST .../deployments` and membership by conditions then). `poke` publishes what the API publishes on a change.
 */
export class DeploymentRows {
  constructor(private readonly db: DataSource) {}

  /** An active (by default) group of `org`/`product` whose release 1 is the firmware `firmwareUuid`; its id. */
  async group(
    org: string,
    product: string,
    firmwareUuid: string,
    name: string,
    settings: GroupSettings = {},
  ): Promise<{ id: string; releaseId: string }> {
    const columns = Object.keys(settings);
    const values = Object.values(settings);
    const [group] = await this.db.query<{ id: string; firmware_id: string }[]>(
      `INSERT INTO deployment_groups (org_id, product_id, name, platform, architecture
                                      ${columns.map((c) => `, ${c}`).join('')})
       SELECT o.id, p.id, $3, f.platform, f.architecture ${columns.map((_, i) => `, $${i + 5}`).join('')}
         FROM orgs o JOIN products p ON p.org_id = o.id AND p.name = $2
         JOIN firmwares f ON f.product_id = p.id AND f.uuid = $4
        WHERE o.name = $1
       RETURNING id, (SELECT f.id FROM firmwares f WHERE f.uuid = $4 LIMIT 1) AS firmware_id`,
      [org, product, name, firmwareUuid, ...values],
    );
    const [release] = await this.db.query<{ id: string }[]>(
      `INSERT INTO deployment_releases (deployment_group_id, number, firmware_id) VALUES ($1, 1, $2) RETURNING id`,
      [group.id, group.firmware_id],
    );
    await this.db.query(`UPDATE deployment_groups SET current_release_id = $2 WHERE id = $1`, [
      group.id,
      release.id,
    ]);
    return { id: group.id, releaseId: release.id };
  }

  /** The devices `identifiers` belong to the group. */
  async members(groupId: string, identifiers: readonly string[]): Promise<void> {
    await this.db.query(`UPDATE devices SET deployment_group_id = $1 WHERE identifier = ANY($2::text[])`, [
      groupId,
      identifiers,
    ]);
  }

  /** Changes the group's settings (e.g. `is_active` true again after a pause). */
  async update(groupId: string, settings: GroupSettings & { paused_reason?: null; paused_at?: null }) {
    const columns = Object.keys(settings);
    await this.db.query(
      `UPDATE deployment_groups SET ${columns.map((c, i) => `${c} = $${i + 2}`).join(', ')} WHERE id = $1`,
      [groupId, ...Object.values(settings)],
    );
  }

  /** Tells the orchestrators the group changed, as the API does. */
  async poke(groupId: string): Promise<void> {
    await this.db.query(`SELECT pg_notify('deployments', $1)`, [JSON.stringify({ group: groupId })]);
  }
}
