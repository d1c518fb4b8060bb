import { Injectable, type PipeTransform } from '@nestjs/common';
import { DomainError, type FieldErrors } from '../../common/errors/domain-error';
import {
  DEFAULT_PAGE_SIZE,
  MAX_PAGE_SIZE,
  type PageRequest,
  type RawQuery,
} from '../../common/http/pagination';
import { IROH_OWNER_TYPES, type IrohOwnerType } from './iroh-endpoint.view';

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

/** Turns the raw query into an IrohListQuery (or a 422) before the handler runs. */
@Injectable()
export class IrohListQueryPipe implements PipeTransform<unknown, IrohListQuery> {
  transform(value: unknown): IrohListQuery {
    return parseIrohListQuery(typeof value === 'object' && value !== null ? (value as RawQuery) : {});
  }
}
