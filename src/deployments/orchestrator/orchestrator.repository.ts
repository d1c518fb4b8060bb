import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { Queryable } from '../../database/transactions';

/** What a claim needs of its group, read under the group's claim lock. */
export interface ClaimableGroup {
  id: string;
  current_release_id: string;
  queue_management: 'FIFO' | 'LIFO';
}

/** The group rules an ended update is judged by (the group of the update's release). */
export interface FailureRule {
  group_id: string;
  /**
   * For the webhook events of the failures: the group's organization, name, product, the release's number and
   * firmware.
   */
  org_id: string;
  group_name: string;
  product_id: string;
  release_number: number;
  firmware_uuid: string;
  firmware_version: string;
  device_failure_threshold: number;
  device_failure_rate_seconds: number;
  device_failure_rate_amount: number;
  penalty_timeout_minutes: number;
}

/** A group that paused itself: its release's failures reached `failure_threshold`. */
export interface PausedGroup {
  id: string;
  org_id: string;
  name: string;
  product_id: string;
  release_number: number;
  failed_count: number;
  paused_reason: string;
}

/** A release all of whose group's devices run it: what `deployment_group.finished` says. */
export interface FinishedRelease {
  org_id: string;
  name: string;
  product: string;
  release_number: number;
  firmware_uuid: string;
  firmware_version: string;
  devices: number;
}

/** The deployment orchestrator's statements over deployment_groups and deployment_releases. */
@Injectable()
export class DeploymentOrchestratorRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** The deployment groups of the devices `ids` (devices that just came online), each once. */
  async groupsOfDevices(ids: readonly string[]): Promise<string[]> {
    const rows = await this.db.query<{ id: string }[]>(
      `SELECT DISTINCT deployment_group_id AS id FROM deployment_group_members WHERE device_id = ANY($1::bigint[])`,
      [ids],
    );
    return rows.map((row) => row.id);
  }

  /** The groups that roll out now: active, with a current release. */
  async activeGroupIds(): Promise<string[]> {
    const rows = await this.db.query<{ id: string }[]>(
      `SELECT id FROM deployment_groups WHERE is_active AND current_release_id IS NOT NULL`,
    );
    return rows.map((row) => row.id);
  }

  /**
   * Takes the group's claim lock until `tx` ends (every claim of the group, on any instance, waits for it) and
   * reads the group, or null when it is not active or has no release.
   */
  async lockForClaim(groupId: string, tx: Queryable): Promise<ClaimableGroup | null> {
    await this.lockClaims(groupId, tx);
    const [row] = await tx.query<ClaimableGroup[]>(
      `SELECT id, current_release_id, queue_management FROM deployment_groups
        WHERE id = $1 AND is_active AND current_release_id IS NOT NULL`,
      [groupId],
    );
    return row ?? null;
  }

  /** Takes the group's claim lock until `tx` ends: no claim of the group runs meanwhile, on any instance. */
  async lockClaims(groupId: string, tx: Queryable): Promise<void> {
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext('deployment-claim'), hashtext($1))`, [groupId]);
  }

  /** The rules of the release's group, or null when the release is gone. */
  async failureRuleOfRelease(releaseId: string, tx: Queryable = this.db): Promise<FailureRule | null> {
    const [row] = await tx.query<FailureRule[]>(
      `SELECT g.id AS group_id, g.org_id, g.name AS group_name, g.product_id, r.number AS release_number,
              f.uuid AS firmware_uuid, f.version AS firmware_version,
              g.device_failure_threshold, g.device_failure_rate_seconds,
              g.device_failure_rate_amount, g.penalty_timeout_minutes
         FROM deployment_releases r JOIN deployment_groups g ON g.id = r.deployment_group_id
         JOIN firmwares f ON f.id = r.firmware_id
        WHERE r.id = $1`,
      [releaseId],
    );
    return row ?? null;
  }

  /**
   * Adds `count` failed updates to the release; when it is its group's current release and its failures reach
   * the group's `failure_threshold`, the active group pauses itself (inactive, with the reason and time). Answers
   * the paused group, or null.
   */
  async addReleaseFailures(releaseId: string, count: number, tx: Queryable): Promise<PausedGroup | null> {
    // An UPDATE answers [rows, count] through TypeORM.
    const [[row]] = await tx.query<[PausedGroup[], number]>(
      `WITH r AS (UPDATE deployment_releases SET failed_count = failed_count + $2, updated_at = now()
                   WHERE id = $1 RETURNING id, deployment_group_id, number, failed_count)
       UPDATE deployment_groups g
          SET is_active = false, paused_at = now(), updated_at = now(),
              paused_reason = format('paused by fleethub: %s updates of release %s failed', r.failed_count, r.number)
         FROM r
        WHERE g.id = r.deployment_group_id AND g.current_release_id = r.id AND g.is_active
          AND r.failed_count >= g.failure_threshold
       RETURNING g.id, g.org_id, g.name, g.product_id, r.number AS release_number, r.failed_count, g.paused_reason`,
      [releaseId, count],
    );
    return row ?? null;
  }

  /**
   * Marks the group's current release finished, once, when the group has devices, every one of them that takes
   * updates runs the release's firmware and none has an update of the group in flight; answers it then, else
   * null. Concurrent callers: the release row's lock lets one of them mark it. The member scan stops at the
   * first device behind (cheap while a rollout runs); it is a full scan of the group only when it finishes.
   */
  async finishCurrentRelease(groupId: string, tx: Queryable): Promise<FinishedRelease | null> {
    const [[row]] = await tx.query<[FinishedRelease[], number]>(
      `WITH g AS (
         SELECT g.id, g.org_id, g.name, g.product_id, g.current_release_id FROM deployment_groups g
          WHERE g.id = $1 AND g.current_release_id IS NOT NULL
       )
       UPDATE deployment_releases r SET finished_at = now(), updated_at = now()
         FROM g, firmwares f, products p
        WHERE r.id = g.current_release_id AND r.finished_at IS NULL AND f.id = r.firmware_id
          AND p.id = g.product_id
          AND EXISTS (SELECT 1 FROM deployment_group_members m WHERE m.deployment_group_id = g.id)
          AND NOT EXISTS (SELECT 1 FROM pending_updates pu WHERE pu.deployment_group_id = g.id)
          AND NOT EXISTS (
                SELECT 1 FROM deployment_group_members m JOIN devices d ON d.id = m.device_id
                 WHERE m.deployment_group_id = g.id AND d.updates_enabled
                   AND (d.firmware_metadata->>'uuid') IS DISTINCT FROM f.uuid::text)
       RETURNING g.org_id, g.name, p.name AS product, r.number AS release_number, f.uuid::text AS firmware_uuid,
                 f.version AS firmware_version,
                 (SELECT count(*)::int FROM deployment_group_members m WHERE m.deployment_group_id = g.id) AS devices`,
      [groupId],
    );
    return row ?? null;
  }
}
