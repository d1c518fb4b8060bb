import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { Queryable } from '../../database/transactions';
import type { DeltaState } from './firmware-delta.entity';

/** A delta as the API lists it, with the uuid and version of both firmware. */
export interface FirmwareDeltaRow {
  id: string;
  state: DeltaState;
  attempts: number;
  error: string | null;
  size: string | null;
  source_size: string | null;
  target_size: string | null;
  fwup_version: string | null;
  build_ms: number | null;
  inserted_at: Date;
  updated_at: Date;
  source_uuid: string;
  source_version: string;
  target_uuid: string;
  target_version: string;
}

/** What the `update` message needs of a delta (ready or not), for one device's update. */
export interface DeliverableDelta {
  /** null only when another request created the row in the same instant (treated as pending). */
  id: string | null;
  /** null: no row existed, this call requested it (pending now). */
  state: DeltaState | null;
  size: string | null;
  sha256: string | null;
  chunk_sha256: string[] | null;
  fwup_version: string | null;
  storage_key: string | null;
  source_uuid: string;
  target_uuid: string;
}

/** A delta a builder claimed: what it needs to build it. */
export interface ClaimedDelta {
  id: string;
  attempts: number;
  product_id: string;
  source_uuid: string;
  source_key: string;
  target_uuid: string;
  target_key: string;
}

const LIST_COLUMNS = `d.id, d.state, d.attempts, d.error, d.size, d.source_size, d.target_size, d.fwup_version,
       d.build_ms, d.inserted_at, d.updated_at, s.uuid AS source_uuid, s.version AS source_version,
       t.uuid AS target_uuid, t.version AS target_version
  FROM firmware_deltas d JOIN firmwares s ON s.id = d.source_id JOIN firmwares t ON t.id = d.target_id`;

/** The `firmware_deltas` table: one fwup delta per (source, target) firmware pair. */
@Injectable()
export class FirmwareDeltasRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** The deltas from or to firmware `firmwareId`, newest first. */
  listForFirmware(firmwareId: string): Promise<FirmwareDeltaRow[]> {
    return this.db.query<FirmwareDeltaRow[]>(
      `SELECT ${LIST_COLUMNS} WHERE d.source_id = $1 OR d.target_id = $1 ORDER BY d.inserted_at DESC, d.id DESC`,
      [firmwareId],
    );
  }

  /** The deltas to firmware `targetId`, newest first. */
  listForTarget(targetId: string): Promise<FirmwareDeltaRow[]> {
    return this.db.query<FirmwareDeltaRow[]>(
      `SELECT ${LIST_COLUMNS} WHERE d.target_id = $1 ORDER BY d.inserted_at DESC, d.id DESC`,
      [targetId],
    );
  }

  /**
   * For each (target firmware, source uuid) pair, in one statement: the delta from the product's firmware with that
   * uuid to the target, requested (a pending row) when there is none yet. Answers, in the order of the pairs, the
   * delta (its state null when this call requested it) or null when the source is not a firmware of the target's
   * product (or is the target) or the target cannot be a delta's (no delta-capable resource).
   */
  async forDelivery(
    pairs: readonly { targetId: string; sourceUuid: string }[],
  ): Promise<(DeliverableDelta | null)[]> {
    const rows = await this.db.query<(DeliverableDelta & { n: string })[]>(
      `WITH req AS (
         SELECT r.n, r.target_id, s.id AS source_id, s.uuid AS source_uuid, t.uuid AS target_uuid
           FROM unnest($1::bigint[], $2::uuid[]) WITH ORDINALITY AS r(target_id, source_uuid, n)
           JOIN firmwares t ON t.id = r.target_id AND t.delta_fwup_version IS NOT NULL
           JOIN firmwares s ON s.product_id = t.product_id AND s.uuid = r.source_uuid AND s.id <> t.id
       ), requested AS (
         INSERT INTO firmware_deltas (source_id, target_id)
         SELECT DISTINCT source_id, target_id FROM req ORDER BY source_id, target_id
         ON CONFLICT (source_id, target_id) DO NOTHING
         RETURNING source_id, target_id, id
       )
       SELECT req.n, COALESCE(d.id, q.id) AS id, d.state, d.size, d.sha256, d.chunk_sha256, d.fwup_version,
              d.storage_key, req.source_uuid, req.target_uuid
         FROM req
         LEFT JOIN firmware_deltas d ON d.source_id = req.source_id AND d.target_id = req.target_id
         LEFT JOIN requested q ON q.source_id = req.source_id AND q.target_id = req.target_id`,
      [pairs.map((p) => p.targetId), pairs.map((p) => p.sourceUuid)],
    );
    const byIndex = new Map(rows.map(({ n, ...row }) => [Number(n), row]));
    return pairs.map((_, i) => byIndex.get(i + 1) ?? null);
  }

  /** Where the ready delta `id` is stored, provided its target's uuid is `targetUuid`. */
  async findStorageKey(id: string, targetUuid: string): Promise<string | undefined> {
    const rows = await this.db.query<{ storage_key: string }[]>(
      `SELECT d.storage_key FROM firmware_deltas d JOIN firmwares t ON t.id = d.target_id
        WHERE d.id = $1 AND t.uuid = $2 AND d.state = 'ready'`,
      [id, targetUuid],
    );
    return rows[0]?.storage_key;
  }

  /**
   * Claims the next delta to build (FOR UPDATE SKIP LOCKED: builders never take the same one): a pending one whose
   * time has come, or a building one whose lease ran out with attempts left. It becomes `building` under a lease
   * of `leaseSec` held by `token`, one attempt more.
   */
  async claimNext(token: string, leaseSec: number, maxAttempts: number): Promise<ClaimedDelta | null> {
    const [rows] = await this.db.query<[ClaimedDelta[], number]>(
      `UPDATE firmware_deltas d
          SET state = 'building', attempts = d.attempts + 1, lease_token = $1,
              lease_until = now() + make_interval(secs => $2), updated_at = now()
         FROM firmwares s, firmwares t
        WHERE d.id = (SELECT id FROM firmware_deltas
                       WHERE (state = 'pending' AND next_attempt_at <= now())
                          OR (state = 'building' AND lease_until < now() AND attempts < $3)
                       ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
          AND s.id = d.source_id AND t.id = d.target_id
       RETURNING d.id, d.attempts, t.product_id, s.uuid AS source_uuid, s.storage_key AS source_key,
                 t.uuid AS target_uuid, t.storage_key AS target_key`,
      [token, leaseSec, maxAttempts],
    );
    return rows[0] ?? null;
  }

  /** Builds whose lease ran out on their last attempt (the builder died each time) are failed. */
  async failAbandoned(maxAttempts: number): Promise<number> {
    const [, count] = await this.db.query<[unknown[], number]>(
      `UPDATE firmware_deltas
          SET state = 'failed', error = format('the build did not finish (%s attempts)', attempts),
              lease_until = NULL, lease_token = NULL, updated_at = now()
        WHERE state = 'building' AND lease_until < now() AND attempts >= $1`,
      [maxAttempts],
    );
    return count;
  }

  /** The build holding `token` is still running: its lease runs `leaseSec` from now. */
  async renewLease(id: string, token: string, leaseSec: number): Promise<void> {
    await this.db.query(
      `UPDATE firmware_deltas SET lease_until = now() + make_interval(secs => $3)
        WHERE id = $1 AND lease_token = $2 AND state = 'building'`,
      [id, token, leaseSec],
    );
  }

  /** Records a finished build (only by the build holding the lease); false when the row is gone or taken over. */
  async markReady(
    id: string,
    token: string,
    built: {
      size: number;
      sourceSize: number;
      targetSize: number;
      sha256: string;
      chunkSha256: string[];
      fwupVersion: string;
      buildMs: number;
      storageKey: string;
    },
  ): Promise<boolean> {
    const [rows] = await this.db.query<[{ id: string }[], number]>(
      `UPDATE firmware_deltas
          SET state = 'ready', error = NULL, lease_until = NULL, lease_token = NULL, size = $3, source_size = $4,
              target_size = $5, sha256 = $6, chunk_sha256 = $7, fwup_version = $8, build_ms = $9,
              storage_key = $10, updated_at = now()
        WHERE id = $1 AND lease_token = $2 AND state = 'building'
       RETURNING id`,
      [
        id,
        token,
        built.size,
        built.sourceSize,
        built.targetSize,
        built.sha256,
        built.chunkSha256,
        built.fwupVersion,
        built.buildMs,
        built.storageKey,
      ],
    );
    return rows.length > 0;
  }

  /** A build given up because its instance stops: pending again at once, the attempt not counted. */
  async release(id: string, token: string): Promise<void> {
    await this.db.query(
      `UPDATE firmware_deltas
          SET state = 'pending', attempts = greatest(attempts - 1, 0), next_attempt_at = now(),
              lease_until = NULL, lease_token = NULL, updated_at = now()
        WHERE id = $1 AND lease_token = $2 AND state = 'building'`,
      [id, token],
    );
  }

  /**
   * Records a failed build: back to pending after `retryInSec` while `retry` and attempts remain, else failed.
   * Answers the state it is left in, or null when the build no longer holds the row.
   */
  async markFailed(
    id: string,
    token: string,
    error: string,
    retry: boolean,
    maxAttempts: number,
    retryInSec: number,
  ): Promise<DeltaState | null> {
    const [rows] = await this.db.query<[{ state: DeltaState }[], number]>(
      `UPDATE firmware_deltas
          SET state = CASE WHEN $4 AND attempts < $5 THEN 'pending' ELSE 'failed' END::firmware_delta_state,
              error = $3, next_attempt_at = now() + make_interval(secs => $6), lease_until = NULL,
              lease_token = NULL, updated_at = now()
        WHERE id = $1 AND lease_token = $2 AND state = 'building'
       RETURNING state`,
      [id, token, error.slice(0, 1000), retry, maxAttempts, retryInSec],
    );
    return rows[0]?.state ?? null;
  }

  /** Deletes the deltas from or to firmware `firmwareId` in `tx`; answers the storage keys of their files. */
  async deleteForFirmware(firmwareId: string, tx: Queryable): Promise<string[]> {
    const [rows] = await tx.query<[{ storage_key: string | null }[], number]>(
      `DELETE FROM firmware_deltas WHERE source_id = $1 OR target_id = $1 RETURNING storage_key`,
      [firmwareId],
    );
    return rows.flatMap((row) => (row.storage_key ? [row.storage_key] : []));
  }

  /** Deletes every delta of the product's firmware in `tx`; answers the storage keys of their files. */
  async deleteForProduct(productId: string, tx: Queryable): Promise<string[]> {
    const [rows] = await tx.query<[{ storage_key: string | null }[], number]>(
      `DELETE FROM firmware_deltas d USING firmwares t
        WHERE t.id = d.target_id AND t.product_id = $1
       RETURNING d.storage_key`,
      [productId],
    );
    return rows.flatMap((row) => (row.storage_key ? [row.storage_key] : []));
  }
}
