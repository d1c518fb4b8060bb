import { Injectable } from '@nestjs/common';
import type { Actor, OrgAccess } from '../common/auth/actor';
import { type PaginationView, paginationView } from '../common/http/pagination';
import type { Queryable } from '../database/transactions';
import { type AuditInsert, type AuditRow, AuditRepository } from './audit.repository';
import type { AuditLogView } from './dto/audit-log.dto';
import type { AuditFilters, AuditListQuery } from './dto/audit-query';

/** One change to record: which organization, who (null: the system, e.g. the CLI), what, on which target. */
export interface AuditEntry {
  orgId: string;
  actor: Actor | null;
  action: string;
  targetType: string;
  targetId: string;
  details?: Record<string, unknown>;
}

const CSV_BATCH = 500;

/**
 * Told of every entry recorded, in the entry's transaction (e.g. the webhook outbox); a failure rolls the change
 * back with its entry.
 */
export type AuditObserver = (tx: Queryable, entry: AuditEntry) => Promise<void>;

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

/** The CSV export of an organization's audit log: its file name and its lines (the first already read). */
export interface AuditCsvExport {
  filename: string;
  lines: AsyncIterable<string>;
}

/**
 * The audit trail: `record` is called by every write path with the transaction of its change, so a change and
 * its entry commit (or roll back) together.
 */
@Injectable()
export class AuditService {
  private readonly observers: AuditObserver[] = [];

  constructor(private readonly entries: AuditRepository) {}

  /** Adds an observer of every entry recorded from now on (called by the observer's constructor). */
  observe(observer: AuditObserver): void {
    this.observers.push(observer);
  }

  async record(tx: Queryable, entry: AuditEntry): Promise<void> {
    await this.entries.insert({ orgId: entry.orgId, ...this.row(entry) }, tx);
    for (const observer of this.observers) await observer(tx, entry);
  }

  /** An account's own event (not an organization's change), recorded in each organization of the account. */
  async recordInOrgs(tx: Queryable, orgIds: string[], entry: Omit<AuditEntry, 'orgId'>): Promise<void> {
    await this.entries.insertInOrgs(orgIds, this.row(entry), tx);
  }

  private row(entry: Omit<AuditEntry, 'orgId'>): Omit<AuditInsert, 'orgId'> {
    return {
      actorUserId: entry.actor?.userId ?? null,
      actorType: entry.actor ? 'user' : 'system',
      actorName: entry.actor?.email ?? null,
      action: entry.action,
      targetType: entry.targetType,
      targetId: entry.targetId.slice(0, 255),
      details: entry.details ?? {},
      requestId: entry.actor?.requestId?.slice(0, 128) ?? null,
    };
  }

  async list(
    orgId: string,
    { filters, page }: AuditListQuery,
  ): Promise<{ data: AuditLogView[]; pagination: PaginationView }> {
    const { rows, count } = await this.entries.listPage(orgId, filters, page);
    return { data: rows.map(toView), pagination: paginationView(page, count) };
  }

  /** The CSV export, its first line read before the caller commits to a 200. */
  async exportCsv(access: OrgAccess, filters: AuditFilters): Promise<AuditCsvExport> {
    const lines = this.csv(access.orgId, filters);
    const first = await lines.next();
    return {
      filename: `${access.orgName}-audit-log.csv`,
      lines: (async function* () {
        if (!first.done) yield first.value;
        yield* lines;
      })(),
    };
  }

  /** The CSV export as a sequence of lines, read in batches by keyset so that memory stays flat. */
  async *csv(orgId: string, filters: AuditFilters): AsyncGenerator<string> {
    yield CSV_HEADER.join(',') + '\r\n';
    let afterId: string | null = null;
    for (;;) {
      const rows: AuditRow[] = await this.entries.listBatch(orgId, filters, CSV_BATCH, afterId);
      for (const row of rows) yield csvLine(toView(row));
      if (rows.length < CSV_BATCH) return;
      afterId = rows[rows.length - 1].id;
    }
  }
}
