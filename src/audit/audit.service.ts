import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';
import type { Actor } from '../common/auth/actor';
import { DomainError } from '../common/errors/domain-error';
import {
  type PageRequest,
  type PaginationView,
  paginationView,
  parsePageRequest,
  type RawQuery,
} from '../common/http/pagination';
import type { AuditLogView } from './dto/audit-log.dto';

/** One change to record: which organization, who (null: the system, e.g. the CLI), what, on which target. */
export interface AuditEntry {
  orgId: string;
  actor: Actor | null;
  action: string;
  targetType: string;
  targetId: string;
  details?: Record<string, unknown>;
}

export interface AuditFilters {
  actor: string | null;
  targetType: string | null;
  targetId: string | null;
  from: Date | null;
  to: Date | null;
}

interface AuditRow {
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

const FILTER_KEYS = ['actor', 'target_type', 'target_id', 'from', 'to'];
const PAGE_KEYS = ['pagination[page]', 'pagination[page_size]', 'page', 'page_size'];
const ISO_TIMESTAMP = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;
const CSV_BATCH = 500;

function stringFilter(query: RawQuery, name: string, max: number): string | null {
  const raw = query[name];
  if (raw === undefined || raw === '') return null;
  if (typeof raw !== 'string') throw DomainError.invalidField(name, 'must be a single string');
  const value = raw.trim();
  if (value === '') return null;
  if ([...value].length > max) throw DomainError.invalidField(name, `should be at most ${max} character(s)`);
  return value;
}

function timestampFilter(query: RawQuery, name: string): Date | null {
  const raw = query[name];
  if (raw === undefined || raw === '') return null;
  const message = 'must be an ISO 8601 timestamp, e.g. 2026-11-22T03:04:05Z';
  if (typeof raw !== 'string' || !ISO_TIMESTAMP.test(raw.trim()))
    throw DomainError.invalidField(name, message);
  const date = new Date(raw.trim());
  if (Number.isNaN(date.getTime())) throw DomainError.invalidField(name, message);
  return date;
}

/** The filters of the audit log queries; an unknown parameter or a bad value is a 422 naming it. */
export function parseAuditFilters(query: RawQuery, allowPaging: boolean): AuditFilters {
  for (const key of Object.keys(query)) {
    if (!FILTER_KEYS.includes(key) && !(allowPaging && PAGE_KEYS.includes(key))) {
      throw DomainError.invalidField(key, 'is not a known parameter');
    }
  }
  const actor = stringFilter(query, 'actor', 320);
  return {
    actor: actor === null ? null : actor.toLowerCase(),
    targetType: stringFilter(query, 'target_type', 32),
    targetId: stringFilter(query, 'target_id', 255),
    from: timestampFilter(query, 'from'),
    to: timestampFilter(query, 'to'),
  };
}

function toView(row: AuditRow): AuditLogView {
  return {
    id: String(row.id),
    actor:
      row.actor_type === 'user'
        ? { type: 'user', email: row.actor_name }
        : { type: row.actor_type, identifier: row.actor_name },
    action: row.action,
    target_type: row.target_type,
    target_id: row.target_id,
    details: row.details,
    request_id: row.request_id,
    inserted_at: row.inserted_at.toISOString(),
  };
}

/** RFC 4180 quoting, and a leading quote for cells a spreadsheet would read as a formula. */
export function csvCell(value: string | null): string {
  if (value === null) return '';
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

export const CSV_HEADER = [
  'id',
  'inserted_at',
  'actor_type',
  'actor',
  'action',
  'target_type',
  'target_id',
  'details',
  'request_id',
];

function csvLine(view: AuditLogView): string {
  const actor = 'email' in view.actor ? view.actor.email : view.actor.identifier;
  return (
    [
      view.id,
      view.inserted_at,
      view.actor.type,
      actor,
      view.action,
      view.target_type,
      view.target_id,
      JSON.stringify(view.details),
      view.request_id,
    ]
      .map(csvCell)
      .join(',') + '\r\n'
  );
}

/**
 * The audit trail: `record` is called by every write path with the transaction's manager, so a change and
 * its entry commit (or roll back) together.
 */
@Injectable()
export class AuditService {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async record(manager: EntityManager, entry: AuditEntry): Promise<void> {
    await manager.query(
      `INSERT INTO audit_logs
         (org_id, actor_user_id, actor_type, actor_name, action, target_type, target_id, details, request_id)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [
        entry.orgId,
        entry.actor?.userId ?? null,
        entry.actor ? 'user' : 'system',
        entry.actor?.email ?? null,
        entry.action,
        entry.targetType,
        entry.targetId.slice(0, 255),
        entry.details ?? {},
        entry.actor?.requestId?.slice(0, 128) ?? null,
      ],
    );
  }

  async list(orgId: string, query: RawQuery): Promise<{ data: AuditLogView[]; pagination: PaginationView }> {
    const filters = parseAuditFilters(query, true);
    const page = parsePageRequest(query);
    const { where, params } = this.where(orgId, filters);
    const [rows, [{ count }]] = await Promise.all([
      this.page(where, params, page),
      this.db.query<{ count: number }[]>(
        `SELECT count(*)::int AS count FROM audit_logs a WHERE ${where}`,
        params,
      ),
    ]);
    return { data: rows.map(toView), pagination: paginationView(page, count) };
  }

  /** The CSV export as a sequence of lines, read in batches by keyset so that memory stays flat. */
  async *csv(orgId: string, filters: AuditFilters): AsyncGenerator<string> {
    yield CSV_HEADER.join(',') + '\r\n';
    const { where, params } = this.where(orgId, filters);
    let after: { insertedAt: Date; id: string } | null = null;
    for (;;) {
      const keyset: string = after
        ? ` AND (a.inserted_at, a.id) < ($${params.length + 2}::timestamptz, $${params.length + 3}::bigint)`
        : '';
      const rows: AuditRow[] = await this.db.query(
        `${SELECT} WHERE ${where}${keyset} ORDER BY a.inserted_at DESC, a.id DESC LIMIT $${params.length + 1}`,
        after ? [...params, CSV_BATCH, after.insertedAt, after.id] : [...params, CSV_BATCH],
      );
      for (const row of rows) yield csvLine(toView(row));
      if (rows.length < CSV_BATCH) return;
      const last = rows[rows.length - 1];
      after = { insertedAt: last.inserted_at, id: last.id };
    }
  }

  private page(where: string, params: unknown[], page: PageRequest): Promise<AuditRow[]> {
    return this.db.query(
      `${SELECT} WHERE ${where} ORDER BY a.inserted_at DESC, a.id DESC
        LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
      [...params, page.pageSize, page.offset],
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

const SELECT = `SELECT a.id, a.actor_type, a.actor_name, a.action, a.target_type, a.target_id, a.details,
                       a.request_id, a.inserted_at
                  FROM audit_logs a`;
