import { isIP } from 'node:net';
import { resolve } from 'node:path';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** The validated configuration. Nothing else in the code base reads `process.env`. */
export interface AppConfig {
  port: number;
  host: string;
  /** Unset: the embedded PostgreSQL under `dataDir/postgres` is used. */
  databaseUrl: string | null;
  dataDir: string;
  publicUrl: string;
  /** Unset: a key is generated once and kept in `dataDir` (see SecretKeyService). */
  secretKey: string | null;
  logLevel: LogLevel;
  /** Largest firmware upload accepted, in bytes. */
  firmwareMaxBytes: number;
  /** Login attempts per minute per account (per source address: three times this); 0 disables. */
  rateLimitLoginPerMin: number;
  /** Authenticated API calls per minute per token; 0 disables. */
  rateLimitApiPerMin: number;
  /** Failed bearer authentications per minute per source address; 0 disables. */
  rateLimitAuthFailuresPerMin: number;
  /** Origins allowed by CORS (exact `scheme://host[:port]`, or `*`); empty: CORS is off. */
  corsOrigins: string[];
  /** An API call that takes longer than this answers 503 (firmware transfers excepted); 0 disables. */
  requestTimeoutMs: number;
  /** After SIGTERM: how long /readyz fails while requests are still served, so a balancer can stop routing. */
  shutdownDrainMs: number;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

function present(env: Env, name: string): string | undefined {
  const value = env[name];
  return value === undefined || value.trim() === '' ? undefined : value.trim();
}

function integer(env: Env, name: string, fallback: number, min: number, max: number, problems: string[]) {
  const raw = present(env, name);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    problems.push(`${name} must be an integer from ${min} to ${max} (got "${raw}")`);
    return fallback;
  }
  return Number(raw);
}

function isHostname(value: string): boolean {
  return (
    isIP(value) !== 0 || /^[A-Za-z0-9]([A-Za-z0-9-]{0,62})(\.[A-Za-z0-9]([A-Za-z0-9-]{0,62}))*$/.test(value)
  );
}

/** Reads and validates the environment once; throws a ConfigError listing every problem. */
export function loadConfig(env: Env = process.env): AppConfig {
  const problems: string[] = [];

  const port = integer(env, 'PORT', 4000, 0, 65535, problems);

  const host = present(env, 'HOST') ?? '127.0.0.1';
  if (!isHostname(host)) problems.push(`HOST must be an IP address or a host name (got "${host}")`);

  const databaseUrl = present(env, 'DATABASE_URL') ?? null;
  if (databaseUrl !== null) {
    try {
      const url = new URL(databaseUrl);
      if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
        problems.push('DATABASE_URL must be a postgres:// or postgresql:// URL');
      }
    } catch {
      problems.push('DATABASE_URL is not a valid URL');
    }
  }

  const dataDir = resolve(present(env, 'FLEETHUB_DATA_DIR') ?? '.data');

  const defaultPublicHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  let publicUrl = present(env, 'FLEETHUB_PUBLIC_URL') ?? `http://${defaultPublicHost}:${port}`;
  try {
    const url = new URL(publicUrl);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      problems.push('FLEETHUB_PUBLIC_URL must be an http:// or https:// URL');
    }
    publicUrl = publicUrl.replace(/\/+$/, '');
  } catch {
    problems.push(`FLEETHUB_PUBLIC_URL is not a valid URL (got "${publicUrl}")`);
  }

  const secretKey = present(env, 'FLEETHUB_SECRET_KEY') ?? null;
  if (secretKey !== null && secretKey.length < 32) {
    problems.push('FLEETHUB_SECRET_KEY must be at least 32 characters long');
  }

  const rawLevel = (present(env, 'LOG_LEVEL') ?? 'info').toLowerCase();
  const logLevel = LOG_LEVELS.includes(rawLevel as LogLevel) ? (rawLevel as LogLevel) : 'info';
  if (!LOG_LEVELS.includes(rawLevel as LogLevel)) {
    problems.push(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')} (got "${rawLevel}")`);
  }

  const firmwareMaxMiB = integer(env, 'FLEETHUB_FIRMWARE_MAX_MIB', 256, 1, 16384, problems);

  const rateLimitLoginPerMin = integer(env, 'FLEETHUB_RATE_LIMIT_LOGIN_PER_MIN', 10, 0, 1_000_000, problems);
  const rateLimitApiPerMin = integer(env, 'FLEETHUB_RATE_LIMIT_API_PER_MIN', 6000, 0, 10_000_000, problems);
  const rateLimitAuthFailuresPerMin = integer(
    env,
    'FLEETHUB_RATE_LIMIT_AUTH_FAILURES_PER_MIN',
    30,
    0,
    1_000_000,
    problems,
  );
  const corsOrigins = (present(env, 'FLEETHUB_CORS_ORIGINS') ?? '')
    .split(',')
    .map((origin) => origin.trim())
    .filter((origin) => origin !== '');
  for (const origin of corsOrigins) {
    if (origin === '*') continue;
    let valid = false;
    try {
      const url = new URL(origin);
      valid = (url.protocol === 'http:' || url.protocol === 'https:') && url.origin === origin;
    } catch {
      valid = false;
    }
    if (!valid) {
      problems.push(
        `FLEETHUB_CORS_ORIGINS must be a comma-separated list of origins such as https://ops.example.com, or * (got "${origin}")`,
      );
    }
  }
  const requestTimeoutSec = integer(env, 'FLEETHUB_REQUEST_TIMEOUT_SEC', 30, 0, 3600, problems);
  const shutdownDrainMs = integer(env, 'FLEETHUB_SHUTDOWN_DRAIN_MS', 0, 0, 600_000, problems);

  if (problems.length > 0) throw new ConfigError(problems);
  return {
    port,
    host,
    databaseUrl,
    dataDir,
    publicUrl,
    secretKey,
    logLevel,
    firmwareMaxBytes: firmwareMaxMiB * 1024 * 1024,
    rateLimitLoginPerMin,
    rateLimitApiPerMin,
    rateLimitAuthFailuresPerMin,
    corsOrigins,
    requestTimeoutMs: requestTimeoutSec * 1000,
    shutdownDrainMs,
  };
}

/** Injection token for the validated AppConfig. */
export const APP_CONFIG = Symbol('APP_CONFIG');
