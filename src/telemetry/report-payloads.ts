import { isUnstorableText, someString } from '../common/values';
import { isPlainObject } from '../common/validation/validation.pipe';
import { FLEET_METRICS, type FleetMetric, type HealthStatus } from './device-health.entity';

/** Elixir's Logger levels, most severe first (what NervesHub stores). */
export const LOG_LEVELS = [
  'emergency',
  'alert',
  'critical',
  'error',
  'warning',
  'notice',
  'info',
  'debug',
] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export const MAX_LOG_MESSAGE_BYTES = 8192;
export const MAX_LOG_META_BYTES = 4096;
export const MAX_HEALTH_REPORT_BYTES = 65_536;
export const MAX_HEALTH_METRICS = 200;
export const MAX_LOCATION_BYTES = 2048;

/** Problem with a payload: it is logged and ignored. */
export class Malformed {
  constructor(readonly reason: string) {}
}

function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value), 'utf8');
}

/** Text PostgreSQL can store: no NUL, no unpaired surrogate (replaced). */
function storable(text: string): string {
  return text.replaceAll('\u0000', '').replace(/\p{Cs}/gu, '\uFFFD');
}

function truncateBytes(text: string, max: number): string {
  if (Buffer.byteLength(text, 'utf8') <= max) return text;
  return Buffer.from(text, 'utf8')
    .subarray(0, max)
    .toString('utf8')
    .replace(/\uFFFD$/, '');
}

/** Whether every string (keys and values) in a JSON value can be stored in jsonb. */
function storableJson(value: unknown): boolean {
  return !someString(value, isUnstorableText);
}

export interface ParsedLogLine {
  loggedAt: Date;
  level: LogLevel;
  message: string;
  meta: Record<string, unknown>;
}

function logLevel(raw: unknown): LogLevel | null {
  if (typeof raw !== 'string') return null;
  const level = raw.toLowerCase();
  if (level === 'warn') return 'warning';
  return (LOG_LEVELS as readonly string[]).includes(level) ? (level as LogLevel) : null;
}

/** The device's time for a line: `timestamp` (ISO 8601) or, as NervesHub reads it, `meta.time` (µs since the epoch). */
function deviceTime(payload: Record<string, unknown>): Date | null {
  if (typeof payload.timestamp === 'string') {
    const at = new Date(payload.timestamp);
    return Number.isNaN(at.getTime()) ? null : at;
  }
  const time = isPlainObject(payload.meta) ? payload.meta.time : undefined;
  if ((typeof time === 'string' && /^\d{1,19}$/.test(time)) || typeof time === 'number') {
    const at = new Date(Number(time) / 1000);
    return Number.isNaN(at.getTime()) ? null : at;
  }
  return null;
}

/**
 * A `logging:send` payload: `{"level", "message", "meta"?, "timestamp"?}`. The message is truncated to 8 KiB; the
 * device's time is kept when it falls in [earliest, now + 5 min], otherwise the line is stamped with the time it
 * arrived (a line must land in a partition that exists and is not about to be dropped).
 */
export function parseLogLine(payload: unknown, now: Date, earliest: Date): ParsedLogLine | Malformed {
  if (!isPlainObject(payload)) return new Malformed('not an object');
  const level = logLevel(payload.level);
  if (level === null) return new Malformed('level');
  const raw = payload.message;
  let message: string;
  if (typeof raw === 'string') message = raw;
  else if (Array.isArray(raw) && raw.every((c) => typeof c === 'number' || typeof c === 'string')) {
    message = raw.map((c) => (typeof c === 'number' ? String.fromCodePoint(c) : c)).join('');
  } else return new Malformed('message');
  const meta = payload.meta ?? {};
  if (!isPlainObject(meta) || jsonBytes(meta) > MAX_LOG_META_BYTES || !storableJson(meta)) {
    return new Malformed('meta');
  }
  const at = deviceTime(payload);
  const inWindow = at !== null && at >= earliest && at.getTime() <= now.getTime() + 300_000;
  return {
    loggedAt: inWindow ? at : now,
    level,
    message: truncateBytes(storable(message), MAX_LOG_MESSAGE_BYTES),
    meta,
  };
}

/** NervesHub's default thresholds (`HealthStatus`): at or above `warning`, then `unhealthy`. */
export const HEALTH_THRESHOLDS: Record<string, { warning: number; unhealthy: number }> = {
  cpu_usage_percent: { warning: 80, unhealthy: 90 },
  mem_used_percent: { warning: 70, unhealthy: 80 },
  disk_used_percentage: { warning: 80, unhealthy: 90 },
};

export interface ParsedHealthReport {
  report: Record<string, unknown>;
  metrics: Record<string, number>;
  alarmCount: number;
  status: HealthStatus;
  statusReasons: Record<string, unknown> | null;
  fleetMetrics: Record<FleetMetric, number | null>;
}

/** NervesHub's status: unknown without a known metric, else healthy, warning or unhealthy with the reasons. */
export function healthStatus(metrics: Record<string, number>): {
  status: HealthStatus;
  reasons: Record<string, unknown> | null;
} {
  let status: HealthStatus = 'unknown';
  const warning: Record<string, unknown> = {};
  const unhealthy: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(metrics)) {
    const threshold = HEALTH_THRESHOLDS[key];
    if (!threshold) continue;
    if (value >= threshold.unhealthy) {
      unhealthy[key] = { value, threshold: threshold.unhealthy };
      status = 'unhealthy';
    } else if (value >= threshold.warning) {
      warning[key] = { value, threshold: threshold.warning };
      if (status !== 'unhealthy') status = 'warning';
    } else if (status === 'unknown') {
      status = 'healthy';
    }
  }
  return { status, reasons: status === 'warning' || status === 'unhealthy' ? { warning, unhealthy } : null };
}

/**
 * A `health:report` payload: `{"value": {timestamp, metadata, alarms, metrics, checks, connectivity}}`. The report is
 * kept as sent (at most 64 KiB); metrics that are not finite numbers are left out of the history and the status.
 */
export function parseHealthReport(payload: unknown): ParsedHealthReport | Malformed {
  if (!isPlainObject(payload) || !isPlainObject(payload.value)) return new Malformed('value');
  const report = payload.value;
  if (jsonBytes(report) > MAX_HEALTH_REPORT_BYTES) return new Malformed('too large');
  if (!storableJson(report)) return new Malformed('text');
  const rawMetrics = report.metrics ?? {};
  if (!isPlainObject(rawMetrics)) return new Malformed('metrics');
  const alarms = report.alarms ?? {};
  if (!isPlainObject(alarms) && !Array.isArray(alarms)) return new Malformed('alarms');
  const metrics: Record<string, number> = {};
  for (const [key, value] of Object.entries(rawMetrics).slice(0, MAX_HEALTH_METRICS)) {
    if (typeof value === 'number' && Number.isFinite(value) && key.length <= 255) metrics[key] = value;
  }
  const { status, reasons } = healthStatus(metrics);
  const fleetMetrics = Object.fromEntries(FLEET_METRICS.map((m) => [m, metrics[m] ?? null])) as Record<
    FleetMetric,
    number | null
  >;
  return {
    report,
    metrics,
    alarmCount: Array.isArray(alarms) ? alarms.length : Object.keys(alarms).length,
    status,
    statusReasons: reasons,
    fleetMetrics,
  };
}

/**
 * A `geo:location:update` payload: a location (`latitude` and `longitude` numbers, `source`, maybe `accuracy`) or
 * an error (`error_code`, `error_description`); stored as sent.
 */
export function parseLocation(payload: unknown): Record<string, unknown> | Malformed {
  if (!isPlainObject(payload)) return new Malformed('not an object');
  if (jsonBytes(payload) > MAX_LOCATION_BYTES || !storableJson(payload)) return new Malformed('too large');
  const { latitude, longitude } = payload;
  const isCoordinate = (v: unknown, max: number) =>
    typeof v === 'number' && Number.isFinite(v) && Math.abs(v) <= max;
  if (isCoordinate(latitude, 90) && isCoordinate(longitude, 180)) return payload;
  if (payload.error_code !== undefined && latitude === undefined && longitude === undefined) return payload;
  return new Malformed('neither a location nor an error');
}

/**
 * The alarms of a report's `alarms` (as NervesHub Link sends them: an object of alarm id → description; a list of
 * ids is read too, an element that is not a string standing for its JSON text): id → description (null: none).
 */
export function alarmsOf(alarms: unknown): Map<string, string | null> {
  const describe = (value: unknown): string | null =>
    value === null || value === undefined ? null : typeof value === 'string' ? value : JSON.stringify(value);
  if (Array.isArray(alarms))
    return new Map(alarms.map((a) => [typeof a === 'string' ? a : JSON.stringify(a), null]));
  if (isPlainObject(alarms))
    return new Map(Object.entries(alarms).map(([id, value]) => [id, describe(value)]));
  return new Map();
}

/** The alarms raised (in `now`, not in `before`) and cleared (the other way round). */
export function alarmTransitions(
  before: Map<string, string | null>,
  now: Map<string, string | null>,
): { raised: [string, string | null][]; cleared: [string, string | null][] } {
  return {
    raised: [...now].filter(([id]) => !before.has(id)),
    cleared: [...before].filter(([id]) => !now.has(id)),
  };
}
