import { Injectable, type PipeTransform } from '@nestjs/common';
import { DomainError } from '../../common/errors/domain-error';
import { type PageRequest, parsePageRequest, type RawQuery } from '../../common/http/pagination';

/** The audit log's filters, parsed: null when absent or blank. */
export interface AuditFilters {
  actor: string | null;
  targetType: string | null;
  targetId: string | null;
  from: Date | null;
  to: Date | null;
}

/** The JSON list's query: filters and page. */
export interface AuditListQuery {
  filters: AuditFilters;
  page: PageRequest;
}

const FILTER_KEYS = ['actor', 'target_type', 'target_id', 'from', 'to'];
const PAGE_KEYS = ['pagination[page]', 'pagination[page_size]', 'page', 'page_size'];
const ISO_TIMESTAMP = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

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

function rawQuery(value: unknown): RawQuery {
  return typeof value === 'object' && value !== null ? (value as RawQuery) : {};
}

/** `GET .../audit_logs`: the filters, then the page (`parsePageRequest`), or a 422. */
@Injectable()
export class AuditListQueryPipe implements PipeTransform<unknown, AuditListQuery> {
  transform(value: unknown): AuditListQuery {
    const query = rawQuery(value);
    const filters = parseAuditFilters(query, true);
    return { filters, page: parsePageRequest(query) };
  }
}

/** `GET .../audit_logs.csv`: the filters only (the export is not paginated), or a 422. */
@Injectable()
export class AuditExportQueryPipe implements PipeTransform<unknown, AuditFilters> {
  transform(value: unknown): AuditFilters {
    return parseAuditFilters(rawQuery(value), false);
  }
}
