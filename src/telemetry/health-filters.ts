import { DomainError } from '../common/errors/domain-error';
import type { RawQuery } from '../common/http/page-request';
import { FLEET_METRICS, type FleetMetric, HEALTH_STATUSES, type HealthStatus } from './health-values';

/** The device list's health filters (NervesHub's names). */
export const HEALTH_FILTERS = [
  'alarm_status',
  'health_status',
  'metrics_key',
  'metrics_operator',
  'metrics_value',
] as const;

export interface HealthFilters {
  alarmStatus?: 'with' | 'without';
  healthStatus?: HealthStatus;
  metric?: { key: FleetMetric; operator: 'gt' | 'lt'; value: number };
}

function value(query: RawQuery, name: string): string | undefined {
  const raw = query[`filters[${name}]`];
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string')
    throw DomainError.invalidField(`filters[${name}]`, 'must be given once, as a string');
  const trimmed = raw.trim();
  return trimmed === '' ? undefined : trimmed;
}

function oneOf<T extends string>(query: RawQuery, name: string, allowed: readonly T[]): T | undefined {
  const found = value(query, name);
  if (found === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(found)) {
    throw DomainError.invalidField(`filters[${name}]`, `must be one of: ${allowed.join(', ')}`);
  }
  return found as T;
}

/**
 * `filters[alarm_status]` (with, without), `filters[health_status]` and `filters[metrics_key]` with
 * `filters[metrics_operator]` (gt, lt; default gt) and `filters[metrics_value]`. Metric filters are limited to the
 * metrics that have a column and an index of their own (FLEET_METRICS); a bad value is a 422 naming the parameter.
 */
export function parseHealthFilters(query: RawQuery): HealthFilters {
  const filters: HealthFilters = {};
  const alarmStatus = oneOf(query, 'alarm_status', ['with', 'without'] as const);
  if (alarmStatus) filters.alarmStatus = alarmStatus;
  const healthStatus = oneOf(query, 'health_status', HEALTH_STATUSES);
  if (healthStatus) filters.healthStatus = healthStatus;
  const key = oneOf(query, 'metrics_key', FLEET_METRICS);
  const operator = oneOf(query, 'metrics_operator', ['gt', 'lt'] as const) ?? 'gt';
  const raw = value(query, 'metrics_value');
  if (key !== undefined || raw !== undefined) {
    if (key === undefined) throw DomainError.invalidField('filters[metrics_key]', "can't be blank");
    const number = Number(raw);
    if (raw === undefined || !/^-?\d+(\.\d+)?$/.test(raw) || !Number.isFinite(number)) {
      throw DomainError.invalidField('filters[metrics_value]', 'must be a number');
    }
    filters.metric = { key, operator, value: number };
  }
  return filters;
}

/**
 * The SQL conditions of the health filters on the devices `d`, each on an index of `device_health`: the partial
 * index of alarmed devices, (status, device_id), or the metric's partial index.
 */
export function healthFilterSql(filters: HealthFilters, param: (value: unknown) => string): string[] {
  const conditions: string[] = [];
  const exists = (condition: string) =>
    `EXISTS (SELECT 1 FROM device_health h WHERE h.device_id = d.id AND ${condition})`;
  if (filters.alarmStatus === 'with') conditions.push(exists('h.alarm_count > 0'));
  if (filters.alarmStatus === 'without') conditions.push(`NOT ${exists('h.alarm_count > 0')}`);
  if (filters.healthStatus === 'unknown') conditions.push(`NOT ${exists(`h.status <> 'unknown'`)}`);
  else if (filters.healthStatus) {
    conditions.push(exists(`h.status = ${param(filters.healthStatus)}::device_health_status`));
  }
  if (filters.metric) {
    const { key, operator, value: threshold } = filters.metric;
    conditions.push(exists(`h.${key} ${operator === 'gt' ? '>' : '<'} ${param(threshold)}::float8`));
  }
  return conditions;
}
