import { DomainError, type FieldErrors } from '../common/errors/domain-error';
import {
  DEFAULT_PAGE_SIZE,
  MAX_PAGE_SIZE,
  type PageRequest,
  type RawQuery,
} from '../common/http/page-request';
import { escapeLike } from '../common/values';
import {
  IROH_OWNER_TYPES,
  IROH_SERVICE,
  type IrohOwnerType,
  OWNER_JOINS,
  RECORD_COLUMNS,
} from './endpoint-view';

export const MAX_PAGE = 10_000_000;
export const SEARCH_MAX_LENGTH = 255;

/** The list's query, parsed: `search` and `owner` are null when absent or blank; `page` when paginating. */
export interface IrohListQuery {
  search: string | null;
  owner: IrohOwnerType | null;
  page: PageRequest | null;
}

/** A blank value is no value: the filter or page parameter takes its default. */
function given(query: RawQuery, name: string): boolean {
  const value = query[name];
  return value !== undefined && !(typeof value === 'string' && value.trim() === '');
}

function parseSearch(query: RawQuery, errors: FieldErrors): string | null {
  const raw = query.search;
  if (raw === undefined) return null;
  if (typeof raw !== 'string') {
    errors.search = ['must be a string'];
    return null;
  }
  const term = raw.trim();
  if (term === '') return null;
  if ([...term].length > SEARCH_MAX_LENGTH) {
    errors.search = [`should be at most ${SEARCH_MAX_LENGTH} character(s)`];
  } else if (term.includes('\u0000')) {
    errors.search = ['must not contain NUL characters'];
  }
  return term;
}

function parseOwner(query: RawQuery, errors: FieldErrors): IrohOwnerType | null {
  const raw = query.owner;
  if (raw === undefined || (typeof raw === 'string' && raw.trim() === '')) return null;
  const value = typeof raw === 'string' ? raw.trim() : null;
  if (value !== null && (IROH_OWNER_TYPES as readonly string[]).includes(value))
    return value as IrohOwnerType;
  errors.owner = [`must be one of: ${IROH_OWNER_TYPES.join(', ')}`];
  return null;
}

interface IntegerParam {
  /** The parameter's names, preferred first (the nested name, then its top-level alias). */
  names: string[];
  fallback: number;
  max: number;
  message: string;
  tooLarge: string;
}

function parseInteger(query: RawQuery, param: IntegerParam, errors: FieldErrors): number {
  const name = param.names.find((candidate) => given(query, candidate));
  if (name === undefined) return param.fallback;
  const raw = query[name];
  const text = typeof raw === 'string' ? raw.trim() : '';
  if (!/^\d+$/.test(text) || Number(text) < 1) {
    errors[name] = [param.message];
    return param.fallback;
  }
  if (Number(text) > param.max) {
    errors[name] = [param.tooLarge];
    return param.fallback;
  }
  return Number(text);
}

const PAGE: IntegerParam = {
  names: ['pagination[page]', 'page'],
  fallback: 1,
  max: MAX_PAGE,
  message: 'must be an integer of at least 1',
  tooLarge: `must be at most ${MAX_PAGE}`,
};

const PAGE_SIZE: IntegerParam = {
  names: ['pagination[page_size]', 'page_size'],
  fallback: DEFAULT_PAGE_SIZE,
  max: MAX_PAGE_SIZE,
  message: `must be an integer from 1 to ${MAX_PAGE_SIZE}`,
  tooLarge: `must be an integer from 1 to ${MAX_PAGE_SIZE}`,
};

/**
 * Parses the iroh list's query (Express's 'simple' parser: flat keys such as `pagination[page]`, a repeated
 * key as an array): `search`, `owner`, and the optional pagination (`pagination[page]`,
 * `pagination[page_size]`, with top-level `page` / `page_size` as aliases). Every problem is reported at once,
 * as a 422 naming the parameter; any other key is ignored.
 */
export function parseIrohListQuery(query: RawQuery): IrohListQuery {
  const errors: FieldErrors = {};
  const search = parseSearch(query, errors);
  const owner = parseOwner(query, errors);
  let page: PageRequest | null = null;
  if ([...PAGE.names, ...PAGE_SIZE.names].some((name) => query[name] !== undefined)) {
    const number = parseInteger(query, PAGE, errors);
    const pageSize = parseInteger(query, PAGE_SIZE, errors);
    page = { page: number, pageSize, offset: (number - 1) * pageSize };
  }
  if (Object.keys(errors).length > 0) throw DomainError.invalid(errors);
  return { search, owner, page };
}

/** Newest first; ties by identifier, so that pages never overlap (served by the (org_id, inserted_at, identifier) index). */
export const NEWEST_FIRST = `ORDER BY e.inserted_at DESC, e.identifier DESC`;

const OWNER_CONDITIONS: Record<IrohOwnerType, string> = {
  device: 'e.device_id IS NOT NULL',
  user: 'e.device_id IS NULL AND e.user_id IS NOT NULL',
  none: 'e.device_id IS NULL AND e.user_id IS NULL',
};

/**
 * `e.id IN (...)`: the union of three index-backed lookups, each restricted to the organization: a prefix
 * of the endpoint id (the "C"-collated unique b-tree), a substring of the holding device's identifier and of
 * the holding member's name (pg_trgm GIN indexes). Lookups that cannot match under `owner` are left out.
 */
function searchCondition(term: string, owner: IrohOwnerType | null, params: unknown[]): string {
  const branches: string[] = [];
  const prefix = term.toLowerCase();
  // Endpoint ids are lower-case hex: another term cannot be the start of one.
  if (/^[0-9a-f]+$/.test(prefix)) {
    // The range [prefix, prefix with its last character raised by one) is exactly "starts with prefix" under
    // the column's "C" collation, and stays an index range in a generic plan (a LIKE parameter does not).
    params.push(
      prefix,
      `${prefix.slice(0, -1)}${String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1)}`,
    );
    branches.push(
      `SELECT e.id FROM iroh_endpoints e
        WHERE e.org_id = $1 AND e.identifier >= $${params.length - 1} AND e.identifier < $${params.length}`,
    );
  }
  // Only endpoints held by a device or a member have a holder's identifier or name to match.
  if (owner === 'none') return branches.length === 0 ? 'false' : `e.id IN (${branches[0]})`;
  params.push(`%${escapeLike(term)}%`);
  const substring = `$${params.length}`;
  if (owner === null || owner === 'device') {
    branches.push(
      `SELECT e.id FROM devices d JOIN iroh_endpoints e ON e.device_id = d.id
        WHERE d.org_id = $1 AND e.org_id = $1 AND d.identifier ILIKE ${substring}`,
    );
  }
  if (owner === null || owner === 'user') {
    branches.push(
      `SELECT e.id FROM users u JOIN iroh_endpoints e ON e.user_id = u.id
        WHERE e.org_id = $1 AND e.device_id IS NULL AND u.name ILIKE ${substring}`,
    );
  }
  return `e.id IN (${branches.join(' UNION ')})`;
}

/** A statement and its parameters. */
export interface Statement {
  sql: string;
  params: unknown[];
}

/**
 * The statements of the org's list, newest first, narrowed by `owner` and `search`:
 * - `all` (no pagination asked): every match, as EndpointRow;
 * - `searchPage` (paginated search): the page of hits and their total in one statement: the hits (few, found
 *   through the search indexes) are evaluated once, the page is cut from them by sort key, and only the page's
 *   rows are joined to their holders; rows are EndpointRow plus `total`, with one all-null row when the page is
 *   past the end (the total row is always present, so such a page still reports the total);
 * - `page` + `count` (paginated, no search): the page, and the total from the counter rows the `iroh_endpoints`
 *   triggers keep exact, sent together.
 */
export type IrohListStatements =
  | { kind: 'all'; all: Statement }
  | { kind: 'searchPage'; page: PageRequest; searchPage: Statement }
  | { kind: 'page'; page: PageRequest; rows: Statement; count: Statement };

export function irohListStatements(orgId: string, query: IrohListQuery): IrohListStatements {
  const params: unknown[] = [orgId, IROH_SERVICE];
  const conditions = ['e.org_id = $1', 'e.service = $2'];
  if (query.owner) conditions.push(OWNER_CONDITIONS[query.owner]);
  if (query.search !== null) conditions.push(searchCondition(query.search, query.owner, params));
  const where = conditions.join(' AND ');
  const limit = `LIMIT $${params.length + 1} OFFSET $${params.length + 2}`;

  if (!query.page) {
    return {
      kind: 'all',
      all: {
        sql: `SELECT ${RECORD_COLUMNS} FROM iroh_endpoints e ${OWNER_JOINS} WHERE ${where} ${NEWEST_FIRST}`,
        params,
      },
    };
  }
  const pageParams = [...params, query.page.pageSize, query.page.offset];
  if (query.search !== null) {
    return {
      kind: 'searchPage',
      page: query.page,
      searchPage: {
        sql: `WITH hits AS MATERIALIZED (SELECT e.id, e.inserted_at, e.identifier FROM iroh_endpoints e WHERE ${where}),
                   page AS (SELECT id FROM hits ORDER BY inserted_at DESC, identifier DESC ${limit})
              SELECT ${RECORD_COLUMNS}, total.total
                FROM (SELECT count(*)::int AS total FROM hits) total
                LEFT JOIN (page JOIN iroh_endpoints e ON e.id = page.id ${OWNER_JOINS}) ON true
               ${NEWEST_FIRST}`,
        params: pageParams,
      },
    };
  }
  return {
    kind: 'page',
    page: query.page,
    rows: {
      sql: `SELECT ${RECORD_COLUMNS} FROM iroh_endpoints e ${OWNER_JOINS} WHERE ${where} ${NEWEST_FIRST} ${limit}`,
      params: pageParams,
    },
    count: irohCountStatement(orgId, query.owner),
  };
}

/** The org's endpoints (of one kind of holder), from the counter rows the `iroh_endpoints` triggers keep exact. */
export function irohCountStatement(orgId: string, owner: IrohOwnerType | null): Statement {
  return {
    sql: `SELECT COALESCE(sum(total), 0)::int AS total FROM org_iroh_endpoint_counts
           WHERE org_id = $1 AND service = $2 AND ($3::varchar IS NULL OR owner_type = $3)`,
    params: [orgId, IROH_SERVICE, owner],
  };
}
