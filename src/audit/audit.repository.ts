import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { PageRequest } from '../common/http/pagination';
import type { Queryable } from '../database/transactions';
import type { AuditFilters } from './dto/audit-query';

/** One row to insert, as the service resolved it from its entry and actor. */
export interface AuditInsert {
  orgId: string;
  actorUserId: string | null;
  actorType: 'user' | 'system';
  actorName: string | null;
  action: string;
  targetType: string;
  targetId: string;
  details: Record<string, unknown>;
  requestId: string | null;
}

export interface AuditRow {
  id: string;
  actor_type: string;
  actor_name: string | null;
  action: string;
  target_type: string;
  target_id: string;
  details: Record<string, unknown>;
  request_id: string | null;
  inserted_at: Date;
}

const SELECT = `SELECT a.id, a.actor_type, a.actor_name, a.action, a.target_type, a.target_id, a.details,
                       a.request_id, a.inserted_at
                  FROM audit_logs a`;

/** The `audit_logs` table. */
@Injectable()
export class AuditRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** Inserts an entry in the transaction of the change it records. */
  async insert({ orgId, ...entry }: AuditInsert, tx: Queryable): Promise<void> {
    await this.insertInOrgs([orgId], entry, tx);
  }

  /** The same entry in each of several organizations (an account's own event, e.g. its two-factor sign-in). */
  async insertInOrgs(orgIds: string[], entry: Omit<AuditInsert, 'orgId'>, tx: Queryable): Promise<void> {
    if (orgIds.length === 0) return;
    await tx.query(
      `INSERT INTO audit_logs
         (org_id, actor_user_id, actor_type, actor_name, action, target_type, target_id, details, request_id)
       SELECT org_id, $2, $3, $4, $5, $6, $7, $8, $9 FROM unnest($1::bigint[]) AS org_id`,
      [
        orgIds,
        entry.actorUserId,
        entry.actorType,
        entry.actorName,
        entry.action,
        entry.targetType,
        entry.targetId,
        entry.details,
        entry.requestId,
      ],
    );
  }

  /** One page of the organization's entries, newest first, and the count of all that match. */
  async listPage(
    orgId: string,
    filters: AuditFilters,
    page: PageRequest,
  ): Promise<{ rows: AuditRow[]; count: number }> {
    const { where, params } = this.where(orgId, filters);
    const [rows, [{ count }]] = await Promise.all([
      this.db.query<AuditRow[]>(
        `${SELECT} WHERE ${where} ORDER BY a.inserted_at DESC, a.id DESC
          LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
        [...params, page.pageSize, page.offset],
      ),
      this.db.query<{ count: number }[]>(
        `SELECT count(*)::int AS count FROM audit_logs a WHERE ${where}`,
        params,
      ),
    ]);
    return { rows, count };
  }

  /**
   * Up to `limit` entries, newest first, after the entry `afterId` in that order (keyset) when given. The keyset
   * reads that entry's `inserted_at` in SQL: a JavaScript Date holds milliseconds, PostgreSQL microseconds, and a
   * rounded timestamp skipped every entry of the same millisecond that was not yet exported.
   */
  listBatch(
    orgId: string,
    filters: AuditFilters,
    limit: number,
    afterId: string | null,
  ): Promise<AuditRow[]> {
    const { where, params } = this.where(orgId, filters);
    const keyset: string = afterId
      ? ` AND (a.inserted_at, a.id) < (SELECT k.inserted_at, k.id FROM audit_logs k WHERE k.id = $${params.length + 2}::bigint)`
      : '';
    return this.db.query(
      `${SELECT} WHERE ${where}${keyset} ORDER BY a.inserted_at DESC, a.id DESC LIMIT $${params.length + 1}`,
      afterId ? [...params, limit, afterId] : [...params, limit],
    );
  }

  private where(orgId: string, filters: AuditFilters): { where: string; params: unknown[] } {
    const params: unknown[] = [orgId];
    const conditions = ['a.org_id = $1'];
    const add = (sql: (p: string) => string, value: unknown) => {
      params.push(value);
      conditions.push(sql(`$${params.length}`));
    };
    if (filters.actor !== null) add((p) => `lower(a.actor_name) = ${p}`, filters.actor);
    if (filters.targetType !== null) add((p) => `a.target_type = ${p}`, filters.targetType);
    if (filters.targetId !== null) add((p) => `a.target_id = ${p}`, filters.targetId);
    if (filters.from !== null) add((p) => `a.inserted_at >= ${p}`, filters.from);
    if (filters.to !== null) add((p) => `a.inserted_at <= ${p}`, filters.to);
    return { where: conditions.join(' AND '), params };
  }
}
