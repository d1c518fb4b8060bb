import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
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
  /** After the drain: how long requests still in flight (uploads, firmware downloads) may take before they are cut. */
  shutdownTimeoutMs: number;
  /** Where firmware files live: `dataDir/firmware` on local disk, or an S3-compatible bucket. */
  storage: StorageConfig;
  /** What devices report through the `extensions` channel (docs/decisions.md, "Device telemetry"). */
  telemetry: TelemetryConfig;
  /** The mTLS device socket (issue #17): null when `FLEETHUB_DEVICE_TLS_PORT` is unset (off). */
  deviceTls: DeviceTlsConfig | null;
  /**
   * Certificate authentication through a TLS terminator in front (opt-in): the verified client certificate arrives
   * in a header, with a shared secret proving that the proxy sent it. Null: off.
   */
  deviceCertProxy: DeviceCertProxyConfig | null;
  /** Outgoing mail (invitations): null, none is sent. */
  smtp: SmtpConfig | null;
  /** Browser sign-in sessions (`POST /api/session`). */
  browserSessions: BrowserSessionsConfig;
  /** Event streams (`GET .../events`) one user may have open at once, across instances. */
  eventStreamsPerUser: number;
  /** Single sign-on through an OpenID Connect provider: null when `FLEETHUB_OIDC_ISSUER` is unset (off). */
  oidc: OidcConfig | null;
  /** Outgoing webhooks: where they may go, how they are retried, how long events are kept. */
  webhooks: WebhooksConfig;
}

export interface OidcConfig {
  /** The provider's issuer URL (its discovery document is `<issuer>/.well-known/openid-configuration`). */
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** What the sign-in button says: "Sign in with <displayName>". */
  displayName: string;
  /** A verified email without an account gets one at its first sign-in (else it is refused). */
  createUsers: boolean;
}

/** A range of addresses: `10.0.0.0/8`, `fd00::/8`, `127.0.0.1/32`. */
export interface CidrRange {
  address: string;
  prefix: number;
  family: 'ipv4' | 'ipv6';
}

export interface WebhooksConfig {
  /** Host names (lower case) a webhook URL may name with `http://`; every other URL must be `https://`. */
  httpHosts: string[];
  /**
   * Ranges that deliveries may connect to although they are loopback, private, link-local or otherwise internal
   * (checked on the resolved address at connect time). Empty: only public addresses.
   */
  allowedRanges: CidrRange[];
  /** One attempt (connect, send, response headers and excerpt) ends after this long. */
  timeoutMs: number;
  /** The first retry waits about this long; each next one twice as long (with jitter), at most `backoffMaxMs`. */
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** A delivery not answered with a 2xx within this long after its event is given up. */
  retryWindowMs: number;
  /** An endpoint is disabled after this many failed attempts in a row... */
  disableAfterFailures: number;
  /** ...that kept failing for at least this long. */
  disableAfterMs: number;
  /** Deliveries one instance makes to one endpoint at once. */
  concurrencyPerEndpoint: number;
  /** Deliveries one instance makes at once in all. */
  concurrencyTotal: number;
  /** How often an instance looks for due deliveries (new events also wake it at once). */
  pollMs: number;
  /** Events (and their delivery log) are deleted this many days after they happened. */
  retentionDays: number;
  /** After a rotation, the previous secret signs too for this long. */
  secretGraceMs: number;
  /**
   * `device.disconnected` is sent only when the device is still disconnected this long after it went (and
   * `device.connected` only when the last state sent was not connected): a flapping device sends at most one pair.
   */
  connectionDebounceMs: number;
  /**
   * Deliveries per second one instance starts to one endpoint (a token bucket holding one second's worth);
   * 0: no limit.
   */
  ratePerSecond: number;
  /** `certificate.expiring` is sent once for a certificate that expires within this many days. */
  certExpiryDays: number;
}

export interface BrowserSessionsConfig {
  /** A session unused for this long ends (precise to about a minute: last use is recorded once a minute). */
  idleMinutes: number;
  /** A session ends this long after sign-in, however much it is used. */
  maxHours: number;
}

export interface TelemetryConfig {
  /** Device log lines and health metrics older than this many days are dropped (whole daily partitions). */
  retentionDays: number;
  /** `health:check` is pushed on attach and then every this many minutes. */
  healthIntervalMinutes: number;
  /** `geo:location:request` is pushed on attach and, when above 0, every this many minutes. */
  geoIntervalMinutes: number;
}

export interface DeviceTlsConfig {
  /** 0: any free port (tests). */
  port: number;
  /**
   * The server's certificate (chain) and key, PEM files, checked at load (readable, the key matches the
   * certificate). Null: a private server CA and a certificate it signs are generated in `dataDir/device-tls` on
   * first start and reused afterwards.
   */
  certFile: string | null;
  keyFile: string | null;
}

export interface DeviceCertProxyConfig {
  /** Compared in constant time with the `x-fleethub-proxy-secret` header. */
  secret: string;
  /** Lower-case name of the header carrying the client certificate (URL-encoded PEM, PEM, or base64 DER). */
  header: string;
}

export interface SmtpConfig {
  /** `smtp://` or `smtps://`, with credentials when the server needs them (FLEETHUB_SMTP_URL). */
  url: string;
  /** The From header (FLEETHUB_SMTP_FROM; default `fleethub <no-reply@public host>`). */
  from: string;
}

export type StorageConfig = { kind: 'local' } | S3StorageConfig;

export interface S3StorageConfig {
  kind: 's3';
  bucket: string;
  /** Prepended to every object key; '' or ending in '/'. */
  prefix: string;
  /** A non-AWS endpoint (MinIO, R2, Ceph); null: AWS's endpoint for the region. */
  endpoint: string | null;
  /**
   * The endpoint devices reach the store at, for presigned links, when it differs from `endpoint` (e.g. a
   * container network name for fleethub, a public host name for devices); null: `endpoint`.
   */
  publicEndpoint: string | null;
  /** null: the SDK's own resolution (AWS_REGION, shared config files). */
  region: string | null;
  forcePathStyle: boolean;
  /** Lifetime of the presigned links devices download from. */
  urlLifetimeSec: number;
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
  const shutdownTimeoutMs = integer(env, 'FLEETHUB_SHUTDOWN_TIMEOUT_MS', 20_000, 0, 3_600_000, problems);

  const storage = storageConfig(env, problems);
  const telemetry: TelemetryConfig = {
    retentionDays: integer(env, 'FLEETHUB_DEVICE_LOG_RETENTION_DAYS', 3, 1, 365, problems),
    healthIntervalMinutes: integer(env, 'FLEETHUB_HEALTH_INTERVAL_MINUTES', 60, 1, 10_080, problems),
    geoIntervalMinutes: integer(env, 'FLEETHUB_GEO_INTERVAL_MINUTES', 0, 0, 10_080, problems),
  };
  const deviceTls = deviceTlsConfig(env, port, problems);
  const deviceCertProxy = deviceCertProxyConfig(env, problems);
  const smtp = smtpConfig(env, publicUrl, problems);
  const browserSessions: BrowserSessionsConfig = {
    idleMinutes: integer(env, 'FLEETHUB_SESSION_IDLE_MINUTES', 60, 1, 10_080, problems),
    maxHours: integer(env, 'FLEETHUB_SESSION_MAX_HOURS', 12, 1, 8_760, problems),
  };
  const eventStreamsPerUser = integer(env, 'FLEETHUB_EVENT_STREAMS_PER_USER', 10, 1, 1000, problems);
  const oidc = oidcConfig(env, problems);
  const webhooks = webhooksConfig(env, problems);

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
    shutdownTimeoutMs,
    storage,
    telemetry,
    deviceTls,
    deviceCertProxy,
    smtp,
    browserSessions,
    eventStreamsPerUser,
    oidc,
    webhooks,
  };
}

function oidcConfig(env: Env, problems: string[]): OidcConfig | null {
  const issuer = present(env, 'FLEETHUB_OIDC_ISSUER');
  const clientId = present(env, 'FLEETHUB_OIDC_CLIENT_ID');
  const clientSecret = present(env, 'FLEETHUB_OIDC_CLIENT_SECRET');
  if (issuer === undefined) {
    if (clientId !== undefined || clientSecret !== undefined) {
      problems.push(
        'FLEETHUB_OIDC_CLIENT_ID or _SECRET set but FLEETHUB_OIDC_ISSUER is not (it turns single sign-on on)',
      );
    }
    return null;
  }
  try {
    const protocol = new URL(issuer).protocol;
    if (protocol !== 'https:' && protocol !== 'http:')
      problems.push('FLEETHUB_OIDC_ISSUER must be an https:// URL');
  } catch {
    problems.push(`FLEETHUB_OIDC_ISSUER is not a valid URL (got "${issuer}")`);
  }
  if (clientId === undefined) problems.push('FLEETHUB_OIDC_CLIENT_ID is required with FLEETHUB_OIDC_ISSUER');
  if (clientSecret === undefined)
    problems.push('FLEETHUB_OIDC_CLIENT_SECRET is required with FLEETHUB_OIDC_ISSUER');
  const create = (present(env, 'FLEETHUB_OIDC_CREATE_USERS') ?? 'false').toLowerCase();
  if (create !== 'true' && create !== 'false')
    problems.push('FLEETHUB_OIDC_CREATE_USERS must be true or false');
  return {
    issuer,
    clientId: clientId ?? '',
    clientSecret: clientSecret ?? '',
    displayName: present(env, 'FLEETHUB_OIDC_NAME') ?? 'single sign-on',
    createUsers: create === 'true',
  };
}

/** Parses `a.b.c.d/n` or `x::y/n` (a bare address is a single host), or null when it is not one. */
export function parseCidr(text: string): CidrRange | null {
  const [address, prefixText, ...rest] = text.split('/');
  if (rest.length > 0) return null;
  const version = isIP(address);
  if (version === 0) return null;
  const max = version === 4 ? 32 : 128;
  if (prefixText !== undefined && !/^\d{1,3}$/.test(prefixText)) return null;
  const prefix = prefixText === undefined ? max : Number(prefixText);
  if (prefix > max) return null;
  return { address, prefix, family: version === 4 ? 'ipv4' : 'ipv6' };
}

function webhooksConfig(env: Env, problems: string[]): WebhooksConfig {
  const httpHosts = (present(env, 'FLEETHUB_WEBHOOK_HTTP_HOSTS') ?? '')
    .split(',')
    .map((host) => host.trim().toLowerCase())
    .filter((host) => host !== '');
  for (const host of httpHosts) {
    if (!isHostname(host.replace(/^\[(.*)\]$/, '$1'))) {
      problems.push(
        `FLEETHUB_WEBHOOK_HTTP_HOSTS must be a comma-separated list of host names (got "${host}")`,
      );
    }
  }
  const allowedRanges: CidrRange[] = [];
  for (const text of (present(env, 'FLEETHUB_WEBHOOK_ALLOW_CIDRS') ?? '').split(',')) {
    if (text.trim() === '') continue;
    const range = parseCidr(text.trim());
    if (range) allowedRanges.push(range);
    else
      problems.push(
        `FLEETHUB_WEBHOOK_ALLOW_CIDRS must be a comma-separated list of CIDR ranges such as 10.1.0.0/16 (got "${text.trim()}")`,
      );
  }
  const backoffBaseMs = integer(env, 'FLEETHUB_WEBHOOK_BACKOFF_BASE_MS', 5000, 1, 3_600_000, problems);
  const backoffMaxMs = integer(
    env,
    'FLEETHUB_WEBHOOK_BACKOFF_MAX_MS',
    4 * 3_600_000,
    1,
    86_400_000,
    problems,
  );
  if (backoffMaxMs < backoffBaseMs) {
    problems.push('FLEETHUB_WEBHOOK_BACKOFF_MAX_MS must be at least FLEETHUB_WEBHOOK_BACKOFF_BASE_MS');
  }
  return {
    httpHosts,
    allowedRanges,
    timeoutMs: integer(env, 'FLEETHUB_WEBHOOK_TIMEOUT_MS', 10_000, 100, 60_000, problems),
    backoffBaseMs,
    backoffMaxMs,
    retryWindowMs: integer(env, 'FLEETHUB_WEBHOOK_RETRY_HOURS', 24, 0, 72, problems) * 3_600_000,
    disableAfterFailures: integer(env, 'FLEETHUB_WEBHOOK_DISABLE_AFTER_FAILURES', 50, 1, 1_000_000, problems),
    disableAfterMs: integer(env, 'FLEETHUB_WEBHOOK_DISABLE_AFTER_HOURS', 24, 0, 720, problems) * 3_600_000,
    concurrencyPerEndpoint: integer(env, 'FLEETHUB_WEBHOOK_CONCURRENCY_PER_ENDPOINT', 4, 1, 100, problems),
    concurrencyTotal: integer(env, 'FLEETHUB_WEBHOOK_CONCURRENCY', 64, 1, 10_000, problems),
    pollMs: integer(env, 'FLEETHUB_WEBHOOK_POLL_MS', 1000, 10, 60_000, problems),
    retentionDays: integer(env, 'FLEETHUB_WEBHOOK_RETENTION_DAYS', 7, 1, 365, problems),
    secretGraceMs: integer(env, 'FLEETHUB_WEBHOOK_SECRET_GRACE_HOURS', 24, 0, 720, problems) * 3_600_000,
    connectionDebounceMs:
      integer(env, 'FLEETHUB_WEBHOOK_CONNECTION_DEBOUNCE_SEC', 30, 0, 86_400, problems) * 1000,
    ratePerSecond: integer(env, 'FLEETHUB_WEBHOOK_RATE_PER_SEC', 50, 0, 100_000, problems),
    certExpiryDays: integer(env, 'FLEETHUB_WEBHOOK_CERT_EXPIRY_DAYS', 30, 1, 3650, problems),
  };
}

function smtpConfig(env: Env, publicUrl: string, problems: string[]): SmtpConfig | null {
  const url = present(env, 'FLEETHUB_SMTP_URL');
  if (url === undefined) return null;
  try {
    const protocol = new URL(url).protocol;
    if (protocol !== 'smtp:' && protocol !== 'smtps:') {
      problems.push('FLEETHUB_SMTP_URL must be an smtp:// or smtps:// URL');
    }
  } catch {
    // Not echoed: the URL may hold the SMTP password.
    problems.push('FLEETHUB_SMTP_URL is not a valid URL');
  }
  let host = 'localhost';
  try {
    host = new URL(publicUrl).hostname || host;
  } catch {
    // FLEETHUB_PUBLIC_URL's own problem is reported already.
  }
  return { url, from: present(env, 'FLEETHUB_SMTP_FROM') ?? `fleethub <no-reply@${host}>` };
}

/** Reads a PEM file for the configuration, or says why it cannot. */
function readPem(name: string, path: string, problems: string[]): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    problems.push(`${name} cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)}: ${path})`);
    return null;
  }
}

function deviceTlsConfig(env: Env, httpPort: number, problems: string[]): DeviceTlsConfig | null {
  const certFile = present(env, 'FLEETHUB_DEVICE_TLS_CERT');
  const keyFile = present(env, 'FLEETHUB_DEVICE_TLS_KEY');
  if (present(env, 'FLEETHUB_DEVICE_TLS_PORT') === undefined) {
    const stray = [certFile && 'FLEETHUB_DEVICE_TLS_CERT', keyFile && 'FLEETHUB_DEVICE_TLS_KEY'].filter(
      Boolean,
    );
    if (stray.length > 0) {
      problems.push(
        `${stray.join(', ')} set but FLEETHUB_DEVICE_TLS_PORT is not (it turns the mTLS device socket on)`,
      );
    }
    return null;
  }
  const port = integer(env, 'FLEETHUB_DEVICE_TLS_PORT', 0, 0, 65535, problems);
  if (port !== 0 && port === httpPort) {
    problems.push(`FLEETHUB_DEVICE_TLS_PORT must differ from PORT (both are ${port})`);
  }
  if ((certFile === undefined) !== (keyFile === undefined)) {
    problems.push('FLEETHUB_DEVICE_TLS_CERT and FLEETHUB_DEVICE_TLS_KEY go together: set both, or neither');
    return { port, certFile: null, keyFile: null };
  }
  if (certFile === undefined || keyFile === undefined) return { port, certFile: null, keyFile: null };
  const certPath = resolve(certFile);
  const keyPath = resolve(keyFile);
  const certPem = readPem('FLEETHUB_DEVICE_TLS_CERT', certPath, problems);
  const keyPem = readPem('FLEETHUB_DEVICE_TLS_KEY', keyPath, problems);
  if (certPem !== null && keyPem !== null) {
    let cert: X509Certificate | null = null;
    try {
      // The first certificate of the file is the server's; any others are its chain.
      const first = /-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/.exec(certPem);
      cert = new X509Certificate(first ? first[0] : certPem);
    } catch {
      problems.push(`FLEETHUB_DEVICE_TLS_CERT does not hold a PEM certificate (${certPath})`);
    }
    let key: ReturnType<typeof createPrivateKey> | null = null;
    try {
      key = createPrivateKey(keyPem);
    } catch {
      problems.push(`FLEETHUB_DEVICE_TLS_KEY does not hold an unencrypted PEM private key (${keyPath})`);
    }
    if (cert && key && !cert.checkPrivateKey(key)) {
      problems.push(
        'FLEETHUB_DEVICE_TLS_KEY is not the private key of the certificate in FLEETHUB_DEVICE_TLS_CERT',
      );
    }
    if (cert && Date.parse(cert.validTo) < Date.now()) {
      problems.push(`FLEETHUB_DEVICE_TLS_CERT has expired (${cert.validTo})`);
    }
  }
  return { port, certFile: certPath, keyFile: keyPath };
}

/** A header name as HTTP allows it (a token), lower-cased. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$/;

function deviceCertProxyConfig(env: Env, problems: string[]): DeviceCertProxyConfig | null {
  const secret = present(env, 'FLEETHUB_DEVICE_CERT_PROXY_SECRET');
  const header = present(env, 'FLEETHUB_DEVICE_CERT_PROXY_HEADER');
  if (secret === undefined) {
    if (header !== undefined) {
      problems.push(
        'FLEETHUB_DEVICE_CERT_PROXY_HEADER set but FLEETHUB_DEVICE_CERT_PROXY_SECRET is not (the secret turns the proxy mode on)',
      );
    }
    return null;
  }
  if (secret.length < 32)
    problems.push('FLEETHUB_DEVICE_CERT_PROXY_SECRET must be at least 32 characters long');
  const name = (header ?? 'x-client-cert').toLowerCase();
  if (!HEADER_NAME.test(name) || name === 'x-fleethub-proxy-secret') {
    problems.push(
      `FLEETHUB_DEVICE_CERT_PROXY_HEADER must be an HTTP header name such as x-client-cert (got "${name}")`,
    );
  }
  return { secret, header: name };
}

const S3_VARIABLES = [
  'FLEETHUB_S3_BUCKET',
  'FLEETHUB_S3_PREFIX',
  'FLEETHUB_S3_ENDPOINT',
  'FLEETHUB_S3_PUBLIC_ENDPOINT',
  'FLEETHUB_S3_REGION',
  'FLEETHUB_S3_FORCE_PATH_STYLE',
  'FLEETHUB_S3_URL_LIFETIME_SEC',
];

function endpointSetting(env: Env, name: string, problems: string[]): string | null {
  const endpoint = present(env, name);
  if (endpoint === undefined) return null;
  try {
    const url = new URL(endpoint);
    if (url.protocol === 'http:' || url.protocol === 'https:') return endpoint.replace(/\/+$/, '');
  } catch {
    // reported below
  }
  problems.push(`${name} must be an http:// or https:// URL (got "${endpoint}")`);
  return null;
}

function storageConfig(env: Env, problems: string[]): StorageConfig {
  const kind = (present(env, 'FLEETHUB_STORAGE') ?? 'local').toLowerCase();
  if (kind !== 'local' && kind !== 's3') {
    problems.push(`FLEETHUB_STORAGE must be local or s3 (got "${kind}")`);
    return { kind: 'local' };
  }
  if (kind === 'local') {
    const stray = S3_VARIABLES.filter((name) => present(env, name) !== undefined);
    if (stray.length > 0) {
      problems.push(`${stray.join(', ')} set but FLEETHUB_STORAGE is not s3 (set FLEETHUB_STORAGE=s3)`);
    }
    return { kind: 'local' };
  }
  const bucket = present(env, 'FLEETHUB_S3_BUCKET');
  if (bucket === undefined) {
    problems.push('FLEETHUB_S3_BUCKET is required when FLEETHUB_STORAGE=s3');
  } else if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket)) {
    problems.push(
      `FLEETHUB_S3_BUCKET must be a bucket name: 3 to 63 lower-case letters, digits, dots and hyphens (got "${bucket}")`,
    );
  }
  let prefix = (present(env, 'FLEETHUB_S3_PREFIX') ?? '').replace(/^\/+/, '');
  if (prefix !== '' && !prefix.endsWith('/')) prefix += '/';
  if (
    prefix.length > 512 ||
    prefix.split('/').some((part, i, all) => part === '..' || (part === '' && i < all.length - 1))
  ) {
    problems.push(`FLEETHUB_S3_PREFIX must be a key prefix such as "fleethub/" (got "${prefix}")`);
  }
  const endpoint = endpointSetting(env, 'FLEETHUB_S3_ENDPOINT', problems);
  const publicEndpoint = endpointSetting(env, 'FLEETHUB_S3_PUBLIC_ENDPOINT', problems);
  if (publicEndpoint !== null && endpoint === null) {
    problems.push('FLEETHUB_S3_PUBLIC_ENDPOINT needs FLEETHUB_S3_ENDPOINT');
  }
  const region = present(env, 'FLEETHUB_S3_REGION') ?? null;
  if (region !== null && !/^[a-z0-9-]{1,64}$/.test(region)) {
    problems.push(`FLEETHUB_S3_REGION must be a region name such as eu-west-1 (got "${region}")`);
  }
  const rawPathStyle = (present(env, 'FLEETHUB_S3_FORCE_PATH_STYLE') ?? 'false').toLowerCase();
  if (rawPathStyle !== 'true' && rawPathStyle !== 'false') {
    problems.push(`FLEETHUB_S3_FORCE_PATH_STYLE must be true or false (got "${rawPathStyle}")`);
  }
  // S3 refuses presigned links that live longer than 7 days.
  const urlLifetimeSec = integer(
    env,
    'FLEETHUB_S3_URL_LIFETIME_SEC',
    24 * 60 * 60,
    60,
    7 * 24 * 60 * 60,
    problems,
  );
  return {
    kind: 's3',
    bucket: bucket ?? '',
    prefix,
    endpoint,
    publicEndpoint,
    region,
    forcePathStyle: rawPathStyle === 'true',
    urlLifetimeSec,
  };
}

/** Injection token for the validated AppConfig. */
export const APP_CONFIG = Symbol('APP_CONFIG');
