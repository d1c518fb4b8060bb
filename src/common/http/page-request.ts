import { DomainError } from '../errors/domain-error';

export const DEFAULT_PAGE_SIZE = 10;
export const MAX_PAGE_SIZE = 500;

export interface PageRequest {
  page: number;
  pageSize: number;
  offset: number;
}

/** A paginated list's `pagination` object (documented in OpenAPI as `PaginationView`). */
export interface PageView {
  page_number: number;
  page_size: number;
  total_entries: number;
  total_pages: number;
}

/** A query string as Express's 'simple' parser delivers it: flat keys, repeated keys as arrays. */
export type RawQuery = Record<string, unknown>;

function positiveInteger(query: RawQuery, names: string[], fallback: number, max: number): number {
  const given = names.filter((name) => query[name] !== undefined && query[name] !== '');
  if (given.length === 0) return fallback;
  const name = given[0];
  const raw = query[name];
  const message =
    max === Infinity ? 'must be an integer of at least 1' : `must be an integer from 1 to ${max}`;
  if (typeof raw !== 'string' || !/^\d{1,9}$/.test(raw.trim())) throw DomainError.invalidField(name, message);
  const value = Number(raw.trim());
  if (value < 1 || value > max) throw DomainError.invalidField(name, message);
  return value;
}

/**
 * `pagination[page]` / `pagination[page_size]` (NervesHub's names), with top-level `page` / `page_size`
 * accepted as aliases. Page ≥ 1 (default 1), page size 1–500 (default 10); anything else is a 422 naming
 * the parameter.
 */
export function parsePageRequest(query: RawQuery, defaultPageSize = DEFAULT_PAGE_SIZE): PageRequest {
  const page = positiveInteger(query, ['pagination[page]', 'page'], 1, 10_000_000);
  const pageSize = positiveInteger(
    query,
    ['pagination[page_size]', 'page_size'],
    defaultPageSize,
    MAX_PAGE_SIZE,
  );
  return { page, pageSize, offset: (page - 1) * pageSize };
}

export function paginationView(request: PageRequest, totalEntries: number): PageView {
  return {
    page_number: request.page,
    page_size: request.pageSize,
    total_entries: totalEntries,
    total_pages: totalEntries === 0 ? 0 : Math.ceil(totalEntries / request.pageSize),
  };
}
