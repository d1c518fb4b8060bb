import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { Queryable } from '../database/transactions';

export interface WebhookRow {
  id: string;
  org_id: string;
  url: string;
  event_types: string[];
  product: string | null;
  enabled: boolean;
  rate_limit_per_second: number | null;
  disabled_reason: string | null;
  disabled_at: Date | null;
  previous_secret_expires_at: Date | null;
  consecutive_failures: number;
  failing_since: Date | null;
  inserted_at: Date;
  updated_at: Date;
}

export interface WebhookInsert {
  orgId: string;
  url: string;
  eventTypes: string[];
  product: string | null;
  enabled: boolean;
  rateLimitPerSecond: number | null;
  secretEncrypted: Buffer;
}

export interface WebhookChanges {
  url?: string;
  eventTypes?: string[];
  product?: string | null;
  enabled?: boolean;
  rateLimitPerSecond?: number | null;
}

const COLUMNS = `id, org_id, url, event_types, product, enabled, rate_limit_per_second, disabled_reason, disabled_at,
                 CASE WHEN previous_secret_expires_at > now() THEN previous_secret_expires_at END
                   AS previous_secret_expires_at,
                 consecutive_failures, failing_since, inserted_at, updated_at`;

/** The `webhooks` table: an organization's subscriptions. */
@Injectable()
export class WebhooksRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async insert(entry: WebhookInsert, tx: Queryable): Promise<WebhookRow> {
    const [row] = await tx.query<WebhookRow[]>(
      `INSERT INTO webhooks (org_id, url, event_types, product, enabled, disabled_reason, disabled_at, secret_encrypted,
                             rate_limit_per_second)
       VALUES ($1, $2, $3, $4, $5, CASE WHEN $5 THEN NULL ELSE 'disabled when created' END,
               CASE WHEN $5 THEN NULL ELSE now() END, $6, $7)
       RETURNING ${COLUMNS}`,
      [
        entry.orgId,
        entry.url,
        entry.eventTypes,
        entry.product,
        entry.enabled,
        entry.secretEncrypted,
        entry.rateLimitPerSecond,
      ],
    );
    return row;
  }

  /** Locks the organization's webhooks (so that concurrent creates count each other) and counts them. */
  async countForOrgLocked(orgId: string, tx: Queryable): Promise<number> {
    await tx.query(`SELECT pg_advisory_xact_lock(hashtextextended('webhooks:' || $1::text, 0))`, [orgId]);
    const [{ count }] = await tx.query<{ count: number }[]>(
      `SELECT count(*)::int AS count FROM webhooks WHERE org_id = $1`,
      [orgId],
    );
    return count;
  }

  list(orgId: string): Promise<WebhookRow[]> {
    return this.db.query(`SELECT ${COLUMNS} FROM webhooks WHERE org_id = $1 ORDER BY id`, [orgId]);
  }

  async find(orgId: string, id: string, tx: Queryable = this.db): Promise<WebhookRow | null> {
    const [row] = await tx.query<WebhookRow[]>(
      `SELECT ${COLUMNS} FROM webhooks WHERE org_id = $1 AND id = $2`,
      [orgId, id],
    );
    return row ?? null;
  }

  /**
   * Applies the changes; enabling clears the reason it was disabled and the failure streak, disabling by hand
   * records `reason`. Null when there is no such webhook.
   */
  async update(
    orgId: string,
    id: string,
    changes: WebhookChanges,
    disabledReason: string,
    tx: Queryable,
  ): Promise<WebhookRow | null> {
    const [rows] = await tx.query<[WebhookRow[], number]>(
      `UPDATE webhooks SET
         url = coalesce($3, url),
         event_types = coalesce($4, event_types),
         product = CASE WHEN $5 THEN $6 ELSE product END,
         enabled = coalesce($7, enabled),
         disabled_reason = CASE WHEN $7 IS TRUE THEN NULL
                                WHEN $7 IS FALSE AND enabled THEN $8 ELSE disabled_reason END,
         disabled_at = CASE WHEN $7 IS TRUE THEN NULL
                            WHEN $7 IS FALSE AND enabled THEN now() ELSE disabled_at END,
         consecutive_failures = CASE WHEN $7 IS TRUE THEN 0 ELSE consecutive_failures END,
         failing_since = CASE WHEN $7 IS TRUE THEN NULL ELSE failing_since END,
         rate_limit_per_second = CASE WHEN $9 THEN $10 ELSE rate_limit_per_second END,
         updated_at = now()
       WHERE org_id = $1 AND id = $2
       RETURNING ${COLUMNS}`,
      [
        orgId,
        id,
        changes.url ?? null,
        changes.eventTypes ?? null,
        changes.product !== undefined,
        changes.product ?? null,
        changes.enabled ?? null,
        disabledReason,
        changes.rateLimitPerSecond !== undefined,
        changes.rateLimitPerSecond ?? null,
      ],
    );
    return rows[0] ?? null;
  }

  async delete(orgId: string, id: string, tx: Queryable): Promise<boolean> {
    const [, deleted] = await tx.query<[unknown, number]>(
      `DELETE FROM webhooks WHERE org_id = $1 AND id = $2`,
      [orgId, id],
    );
    return deleted > 0;
  }

  /** The current secret becomes the previous one (signing until now + grace); `secret` the current one. */
  async rotateSecret(
    orgId: string,
    id: string,
    secretEncrypted: Buffer,
    graceMs: number,
    tx: Queryable,
  ): Promise<WebhookRow | null> {
    const [rows] = await tx.query<[WebhookRow[], number]>(
      `UPDATE webhooks SET previous_secret_encrypted = secret_encrypted,
              previous_secret_expires_at = now() + $4::float8 * interval '1 millisecond',
              secret_encrypted = $3, updated_at = now()
        WHERE org_id = $1 AND id = $2
        RETURNING ${COLUMNS}`,
      [orgId, id, secretEncrypted, graceMs],
    );
    return rows[0] ?? null;
  }
}
