import { Injectable, type PipeTransform } from '@nestjs/common';
import { DomainError } from '../../common/errors/domain-error';
import type { RawQuery } from '../../common/http/page-request';
import { isUnstorableText } from '../../common/values';
import { LOG_LEVELS, type LogLevel } from '../report-payloads';
import { IDENTITY_SERVICES } from './network-identity.view';

const ISO_TIMESTAMP = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;
export const DEFAULT_LOG_LIMIT = 100;
export const MAX_LOG_LIMIT = 1000;
export const MAX_METRICS_LIMIT = 5000;

function rawQuery(value: unknown): RawQuery {
  return typeof value === 'object' && value !== null ? (value as RawQuery) : {};
}

function onlyKnown(query: RawQuery, known: readonly string[]): void {
  for (const key of Object.keys(query)) {
    if (!known.includes(key)) throw DomainError.invalidField(key, 'is not a known parameter');
  }
}

/** A single string parameter, trimmed; null when absent or blank. */
function text(query: RawQuery, name: string, max: number): string | null {
  const raw = query[name];
  if (raw === undefined) return null;
  if (typeof raw !== 'string') throw DomainError.invalidField(name, 'must be a single string');
  const value = raw.trim();
  if (value === '') return null;
  if (value.length > max) throw DomainError.invalidField(name, `should be at most ${max} character(s)`);
  if (isUnstorableText(value)) throw DomainError.invalidField(name, 'must be valid text');
  return value;
}

function timestamp(query: RawQuery, name: string): Date | null {
  const value = text(query, name, 64);
  if (value === null) return null;
  const message = 'must be an ISO 8601 timestamp, e.g. 2026-11-22T03:04:05Z';
  if (!ISO_TIMESTAMP.test(value)) throw DomainError.invalidField(name, message);
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) throw DomainError.invalidField(name, message);
  return date;
}

function limit(query: RawQuery, fallback: number, max: number): number {
  const value = text(query, 'limit', 10);
  if (value === null) return fallback;
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > max) {
    throw DomainError.invalidField('limit', `must be an integer from 1 to ${max}`);
  }
  return Number(value);
}

function range(query: RawQuery): { from: Date | null; to: Date | null } {
  const from = timestamp(query, 'from');
  const to = timestamp(query, 'to');
  if (from && to && from > to) throw DomainError.invalidField('to', 'must not be before from');
  return { from, to };
}

export interface NetworkIdentitiesQuery {
  service: string | null;
  instance: string | null;
}

/** `?service=&instance=` (NervesHub's): an unknown service is a 422. */
@Injectable()
export class NetworkIdentitiesQueryPipe implements PipeTransform<unknown, NetworkIdentitiesQuery> {
  transform(value: unknown): NetworkIdentitiesQuery {
    const query = rawQuery(value);
    onlyKnown(query, ['service', 'instance']);
    const service = text(query, 'service', 32);
    if (service !== null && !(IDENTITY_SERVICES as readonly string[]).includes(service)) {
      throw DomainError.invalidField('service', `is invalid (one of: ${IDENTITY_SERVICES.join(', ')})`);
    }
    return { service, instance: text(query, 'instance', 255) };
  }
}

export interface DeviceLogsQuery {
  from: Date | null;
  to: Date | null;
  /** The levels to show: the named one and those more severe. */
  levels: LogLevel[] | null;
  search: string | null;
  cursor: { atUs: string; id: string } | null;
  limit: number;
}

/** The position after the last line of a page, opaque to clients. */
export function encodeLogCursor(atUs: string, id: string): string {
  return Buffer.from(`${atUs}.${id}`, 'utf8').toString('base64url');
}

function decodeLogCursor(raw: string): { atUs: string; id: string } {
  const match = /^(-?\d{1,19})\.(\d{1,19})$/.exec(Buffer.from(raw, 'base64url').toString('utf8'));
  if (!match) throw DomainError.invalidField('cursor', 'is not a cursor this server gave');
  return { atUs: match[1], id: match[2] };
}

/** `?from=&to=&level=&search=&cursor=&limit=` of a device's log lines. */
@Injectable()
export class DeviceLogsQueryPipe implements PipeTransform<unknown, DeviceLogsQuery> {
  transform(value: unknown): DeviceLogsQuery {
    const query = rawQuery(value);
    onlyKnown(query, ['from', 'to', 'level', 'search', 'cursor', 'limit']);
    const level = text(query, 'level', 16)?.toLowerCase() ?? null;
    const index =
      level === null ? -1 : LOG_LEVELS.indexOf((level === 'warn' ? 'warning' : level) as LogLevel);
    if (level !== null && index < 0) {
      throw DomainError.invalidField('level', `must be one of: ${LOG_LEVELS.join(', ')}`);
    }
    const cursor = text(query, 'cursor', 64);
    return {
      ...range(query),
      levels: index < 0 ? null : LOG_LEVELS.slice(0, index + 1),
      search: text(query, 'search', 255),
      cursor: cursor === null ? null : decodeLogCursor(cursor),
      limit: limit(query, DEFAULT_LOG_LIMIT, MAX_LOG_LIMIT),
    };
  }
}

export interface HealthMetricsQuery {
  from: Date | null;
  to: Date | null;
  key: string | null;
  limit: number;
}

/** `?from=&to=&key=&limit=` of a device's metric history. */
@Injectable()
export class HealthMetricsQueryPipe implements PipeTransform<unknown, HealthMetricsQuery> {
  transform(value: unknown): HealthMetricsQuery {
    const query = rawQuery(value);
    onlyKnown(query, ['from', 'to', 'key', 'limit']);
    return { ...range(query), key: text(query, 'key', 255), limit: limit(query, 1000, MAX_METRICS_LIMIT) };
  }
}
