import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ca, keyPem, leaf } from '../../test/support/cert-builder';
import { ConfigError, loadConfig } from './config';

describe('loadConfig', () => {
  it('has the contract defaults', () => {
    const config = loadConfig({});
    expect(config).toEqual(
      expect.objectContaining({
        port: 4000,
        host: '127.0.0.1',
        databaseUrl: null,
        publicUrl: 'http://127.0.0.1:4000',
        secretKey: null,
        logLevel: 'info',
        firmwareMaxBytes: 256 * 1024 * 1024,
      }),
    );
    expect(config.dataDir).toMatch(/\.data$/);
  });

  it('reads every variable', () => {
    const config = loadConfig({
      PORT: '8080',
      HOST: '0.0.0.0',
      DATABASE_URL: 'postgres://u:p@db:5432/fleethub',
      FLEETHUB_DATA_DIR: '/var/lib/fleethub',
      FLEETHUB_PUBLIC_URL: 'https://fleet.example.com/',
      FLEETHUB_SECRET_KEY: 'k'.repeat(40),
      LOG_LEVEL: 'DEBUG',
    });
    expect(config).toEqual(
      expect.objectContaining({
        port: 8080,
        host: '0.0.0.0',
        databaseUrl: 'postgres://u:p@db:5432/fleethub',
        dataDir: '/var/lib/fleethub',
        publicUrl: 'https://fleet.example.com',
        logLevel: 'debug',
      }),
    );
  });

  it('telemetry: 3 days of device logs, health every 60 min, location once by default; bounded', () => {
    expect(loadConfig({}).telemetry).toEqual({
      retentionDays: 3,
      healthIntervalMinutes: 60,
      geoIntervalMinutes: 0,
    });
    expect(
      loadConfig({
        FLEETHUB_DEVICE_LOG_RETENTION_DAYS: '7',
        FLEETHUB_HEALTH_INTERVAL_MINUTES: '5',
        FLEETHUB_GEO_INTERVAL_MINUTES: '30',
      }).telemetry,
    ).toEqual({ retentionDays: 7, healthIntervalMinutes: 5, geoIntervalMinutes: 30 });
    expect(() => loadConfig({ FLEETHUB_DEVICE_LOG_RETENTION_DAYS: '0' })).toThrow(
      'FLEETHUB_DEVICE_LOG_RETENTION_DAYS must be an integer from 1 to 365 (got "0")',
    );
  });

  it('browser sessions: 60 idle minutes and 12 hours at most by default; bounded', () => {
    expect(loadConfig({}).browserSessions).toEqual({ idleMinutes: 60, maxHours: 12 });
    expect(
      loadConfig({ FLEETHUB_SESSION_IDLE_MINUTES: '15', FLEETHUB_SESSION_MAX_HOURS: '24' }).browserSessions,
    ).toEqual({ idleMinutes: 15, maxHours: 24 });
    expect(() => loadConfig({ FLEETHUB_SESSION_IDLE_MINUTES: '0', FLEETHUB_SESSION_MAX_HOURS: 'x' })).toThrow(
      'FLEETHUB_SESSION_IDLE_MINUTES must be an integer from 1 to 10080 (got "0")\n' +
        '  - FLEETHUB_SESSION_MAX_HOURS must be an integer from 1 to 8760 (got "x")',
    );
  });

  it('webhooks: https only, no internal address, 24 h of retries by default; lists validated', () => {
    expect(loadConfig({}).webhooks).toEqual({
      httpHosts: [],
      allowedRanges: [],
      timeoutMs: 10_000,
      backoffBaseMs: 5000,
      backoffMaxMs: 4 * 3_600_000,
      retryWindowMs: 24 * 3_600_000,
      disableAfterFailures: 50,
      disableAfterMs: 24 * 3_600_000,
      concurrencyPerEndpoint: 4,
      concurrencyTotal: 64,
      pollMs: 1000,
      retentionDays: 7,
      secretGraceMs: 24 * 3_600_000,
      connectionDebounceMs: 30_000,
      ratePerSecond: 50,
      certExpiryDays: 30,
    });
    const webhooks = loadConfig({
      FLEETHUB_WEBHOOK_HTTP_HOSTS: 'Receiver.Local, 127.0.0.1',
      FLEETHUB_WEBHOOK_ALLOW_CIDRS: '10.1.0.0/16, 127.0.0.1, fd00::/8',
    }).webhooks;
    expect(webhooks.httpHosts).toEqual(['receiver.local', '127.0.0.1']);
    expect(webhooks.allowedRanges).toEqual([
      { address: '10.1.0.0', prefix: 16, family: 'ipv4' },
      { address: '127.0.0.1', prefix: 32, family: 'ipv4' },
      { address: 'fd00::', prefix: 8, family: 'ipv6' },
    ]);
    expect(() =>
      loadConfig({
        FLEETHUB_WEBHOOK_ALLOW_CIDRS: '10.0.0.0/33,example.com',
        FLEETHUB_WEBHOOK_HTTP_HOSTS: 'a b',
        FLEETHUB_WEBHOOK_BACKOFF_BASE_MS: '5000',
        FLEETHUB_WEBHOOK_BACKOFF_MAX_MS: '10',
        FLEETHUB_WEBHOOK_CONNECTION_DEBOUNCE_SEC: '-1',
      }),
    ).toThrow(
      'FLEETHUB_WEBHOOK_HTTP_HOSTS must be a comma-separated list of host names (got "a b")\n' +
        '  - FLEETHUB_WEBHOOK_ALLOW_CIDRS must be a comma-separated list of CIDR ranges such as 10.1.0.0/16 (got "10.0.0.0/33")\n' +
        '  - FLEETHUB_WEBHOOK_ALLOW_CIDRS must be a comma-separated list of CIDR ranges such as 10.1.0.0/16 (got "example.com")\n' +
        '  - FLEETHUB_WEBHOOK_BACKOFF_MAX_MS must be at least FLEETHUB_WEBHOOK_BACKOFF_BASE_MS\n' +
        '  - FLEETHUB_WEBHOOK_CONNECTION_DEBOUNCE_SEC must be an integer from 0 to 86400 (got "-1")',
    );
    expect(
      loadConfig({ FLEETHUB_WEBHOOK_RATE_PER_SEC: '0', FLEETHUB_WEBHOOK_CERT_EXPIRY_DAYS: '7' }).webhooks,
    ).toMatchObject({ ratePerSecond: 0, certExpiryDays: 7 });
    expect(() => loadConfig({ FLEETHUB_WEBHOOK_CERT_EXPIRY_DAYS: '0' })).toThrow(
      'FLEETHUB_WEBHOOK_CERT_EXPIRY_DAYS must be an integer from 1 to 3650 (got "0")',
    );
    expect(() => loadConfig({ FLEETHUB_WEBHOOK_RATE_PER_SEC: '-1' })).toThrow(
      'FLEETHUB_WEBHOOK_RATE_PER_SEC must be an integer from 0 to 100000 (got "-1")',
    );
  });

  it('event streams: 10 per user by default; settable from 1 to 1000', () => {
    expect(loadConfig({}).eventStreamsPerUser).toBe(10);
    expect(loadConfig({ FLEETHUB_EVENT_STREAMS_PER_USER: '3' }).eventStreamsPerUser).toBe(3);
    expect(() => loadConfig({ FLEETHUB_EVENT_STREAMS_PER_USER: '0' })).toThrow(
      'FLEETHUB_EVENT_STREAMS_PER_USER must be an integer from 1 to 1000 (got "0")',
    );
  });

  it('shutdown: no drain and 20 s for requests in flight by default; both settable, bounded', () => {
    expect(loadConfig({})).toMatchObject({ shutdownDrainMs: 0, shutdownTimeoutMs: 20_000 });
    expect(
      loadConfig({ FLEETHUB_SHUTDOWN_DRAIN_MS: '5000', FLEETHUB_SHUTDOWN_TIMEOUT_MS: '0' }),
    ).toMatchObject({ shutdownDrainMs: 5000, shutdownTimeoutMs: 0 });
    expect(() => loadConfig({ FLEETHUB_SHUTDOWN_TIMEOUT_MS: '-1' })).toThrow(
      'FLEETHUB_SHUTDOWN_TIMEOUT_MS must be an integer from 0 to 3600000 (got "-1")',
    );
  });

  it('a container-wide HOST still gives a usable public URL', () => {
    expect(loadConfig({ HOST: '0.0.0.0', PORT: '4001' }).publicUrl).toBe('http://127.0.0.1:4001');
  });

  it('lists every problem at once', () => {
    let error: unknown;
    try {
      loadConfig({
        PORT: 'eighty',
        HOST: 'not a host!',
        DATABASE_URL: 'mysql://x',
        FLEETHUB_PUBLIC_URL: 'ftp://x',
        FLEETHUB_SECRET_KEY: 'short',
        LOG_LEVEL: 'loud',
      });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const problems = (error as ConfigError).problems;
    expect(problems).toHaveLength(6);
    for (const name of [
      'PORT',
      'HOST',
      'DATABASE_URL',
      'FLEETHUB_PUBLIC_URL',
      'FLEETHUB_SECRET_KEY',
      'LOG_LEVEL',
    ]) {
      expect(problems.some((p) => p.startsWith(name))).toBe(true);
    }
    expect((error as ConfigError).message).toContain('Invalid configuration');
  });

  describe('firmware storage', () => {
    function problemsOf(env: Record<string, string>): string[] {
      try {
        loadConfig(env);
      } catch (err) {
        if (err instanceof ConfigError) return err.problems;
        throw err;
      }
      return [];
    }

    it('is the local disk by default', () => {
      expect(loadConfig({}).storage).toEqual({ kind: 'local' });
      expect(loadConfig({ FLEETHUB_STORAGE: 'LOCAL' }).storage).toEqual({ kind: 'local' });
    });

    it('reads every S3 variable', () => {
      const config = loadConfig({
        FLEETHUB_STORAGE: 's3',
        FLEETHUB_S3_BUCKET: 'fleet-firmware',
        FLEETHUB_S3_PREFIX: '/prod/fleethub',
        FLEETHUB_S3_ENDPOINT: 'http://minio:9000/',
        FLEETHUB_S3_PUBLIC_ENDPOINT: 'https://s3.fleet.example.com',
        FLEETHUB_S3_REGION: 'eu-west-1',
        FLEETHUB_S3_FORCE_PATH_STYLE: 'TRUE',
        FLEETHUB_S3_URL_LIFETIME_SEC: '3600',
      });
      expect(config.storage).toEqual({
        kind: 's3',
        bucket: 'fleet-firmware',
        prefix: 'prod/fleethub/',
        endpoint: 'http://minio:9000',
        publicEndpoint: 'https://s3.fleet.example.com',
        region: 'eu-west-1',
        forcePathStyle: true,
        urlLifetimeSec: 3600,
      });
    });

    it('has S3 defaults: no prefix, AWS endpoint, SDK region, virtual-host style, 24 h links', () => {
      expect(loadConfig({ FLEETHUB_STORAGE: 's3', FLEETHUB_S3_BUCKET: 'firmware' }).storage).toEqual({
        kind: 's3',
        bucket: 'firmware',
        prefix: '',
        endpoint: null,
        publicEndpoint: null,
        region: null,
        forcePathStyle: false,
        urlLifetimeSec: 86400,
      });
    });

    it('refuses s3 without a bucket', () => {
      expect(problemsOf({ FLEETHUB_STORAGE: 's3' })).toEqual([
        'FLEETHUB_S3_BUCKET is required when FLEETHUB_STORAGE=s3',
      ]);
    });

    it('refuses a public endpoint without an endpoint', () => {
      expect(
        problemsOf({
          FLEETHUB_STORAGE: 's3',
          FLEETHUB_S3_BUCKET: 'firmware',
          FLEETHUB_S3_PUBLIC_ENDPOINT: 'https://s3.example.com',
        }),
      ).toEqual(['FLEETHUB_S3_PUBLIC_ENDPOINT needs FLEETHUB_S3_ENDPOINT']);
    });

    it('refuses an unknown storage', () => {
      expect(problemsOf({ FLEETHUB_STORAGE: 'nfs' })).toEqual([
        'FLEETHUB_STORAGE must be local or s3 (got "nfs")',
      ]);
    });

    it('refuses S3 settings that would be ignored', () => {
      expect(problemsOf({ FLEETHUB_S3_BUCKET: 'fw', FLEETHUB_S3_REGION: 'eu-west-1' })).toEqual([
        'FLEETHUB_S3_BUCKET, FLEETHUB_S3_REGION set but FLEETHUB_STORAGE is not s3 (set FLEETHUB_STORAGE=s3)',
      ]);
    });

    it('lists every bad S3 value at once', () => {
      const problems = problemsOf({
        FLEETHUB_STORAGE: 's3',
        FLEETHUB_S3_BUCKET: 'Not_A_Bucket',
        FLEETHUB_S3_PREFIX: 'a/../b',
        FLEETHUB_S3_ENDPOINT: 'minio:9000',
        FLEETHUB_S3_PUBLIC_ENDPOINT: 'ftp://x',
        FLEETHUB_S3_REGION: 'EU West',
        FLEETHUB_S3_FORCE_PATH_STYLE: 'yes',
        FLEETHUB_S3_URL_LIFETIME_SEC: '604801',
      });
      expect(problems).toHaveLength(7);
      for (const name of [
        'FLEETHUB_S3_BUCKET',
        'FLEETHUB_S3_PREFIX',
        'FLEETHUB_S3_ENDPOINT',
        'FLEETHUB_S3_PUBLIC_ENDPOINT',
        'FLEETHUB_S3_REGION',
        'FLEETHUB_S3_FORCE_PATH_STYLE',
        'FLEETHUB_S3_URL_LIFETIME_SEC',
      ]) {
        expect(problems.some((p) => p.startsWith(name))).toBe(true);
      }
    });
  });

  describe('mTLS device socket and certificate proxy', () => {
    function problemsOf(env: Record<string, string>): string[] {
      try {
        loadConfig(env);
      } catch (err) {
        if (err instanceof ConfigError) return err.problems;
        throw err;
      }
      return [];
    }
    let dir: string;
    const files: Record<string, string> = {};

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'fleethub-config-'));
      const authority = await ca();
      const server = await leaf(authority, { cn: 'localhost' });
      const other = await leaf(authority, { cn: 'other' });
      const write = (name: string, text: string) => {
        files[name] = join(dir, name);
        writeFileSync(files[name], text);
      };
      write('server.pem', `${server.pem}\n${authority.pem}\n`);
      write('server-key.pem', await keyPem(server));
      write('other-key.pem', await keyPem(other));
      write('garbage.pem', 'not a certificate');
    });
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it('off unless FLEETHUB_DEVICE_TLS_PORT is set; then a generated server certificate unless one is configured', () => {
      expect(loadConfig({})).toMatchObject({ deviceTls: null, deviceCertProxy: null });
      expect(loadConfig({ FLEETHUB_DEVICE_TLS_PORT: '4443' }).deviceTls).toEqual({
        port: 4443,
        certFile: null,
        keyFile: null,
      });
      expect(
        loadConfig({
          FLEETHUB_DEVICE_TLS_PORT: '4443',
          FLEETHUB_DEVICE_TLS_CERT: files['server.pem'],
          FLEETHUB_DEVICE_TLS_KEY: files['server-key.pem'],
        }).deviceTls,
      ).toEqual({ port: 4443, certFile: files['server.pem'], keyFile: files['server-key.pem'] });
    });

    it('checks the certificate and key once, at load', () => {
      const tls = (cert: string | undefined, key: string | undefined, extra: object = {}) =>
        problemsOf({
          FLEETHUB_DEVICE_TLS_PORT: '4443',
          ...(cert ? { FLEETHUB_DEVICE_TLS_CERT: cert } : {}),
          ...(key ? { FLEETHUB_DEVICE_TLS_KEY: key } : {}),
          ...extra,
        });
      expect(tls(files['server.pem'], undefined)).toEqual([
        'FLEETHUB_DEVICE_TLS_CERT and FLEETHUB_DEVICE_TLS_KEY go together: set both, or neither',
      ]);
      expect(tls(files['server.pem'], files['other-key.pem'])).toEqual([
        'FLEETHUB_DEVICE_TLS_KEY is not the private key of the certificate in FLEETHUB_DEVICE_TLS_CERT',
      ]);
      expect(tls(files['garbage.pem'], files['garbage.pem'])).toEqual([
        `FLEETHUB_DEVICE_TLS_CERT does not hold a PEM certificate (${files['garbage.pem']})`,
        `FLEETHUB_DEVICE_TLS_KEY does not hold an unencrypted PEM private key (${files['garbage.pem']})`,
      ]);
      expect(tls(join(dir, 'missing.pem'), files['server-key.pem'])).toEqual([
        `FLEETHUB_DEVICE_TLS_CERT cannot be read (ENOENT: ${join(dir, 'missing.pem')})`,
      ]);
      expect(tls(undefined, undefined, { PORT: '4443' })).toEqual([
        'FLEETHUB_DEVICE_TLS_PORT must differ from PORT (both are 4443)',
      ]);
      expect(problemsOf({ FLEETHUB_DEVICE_TLS_CERT: files['server.pem'] })).toEqual([
        'FLEETHUB_DEVICE_TLS_CERT set but FLEETHUB_DEVICE_TLS_PORT is not (it turns the mTLS device socket on)',
      ]);
    });

    it('the proxy mode: a secret of 32 characters or more turns it on; the header name can change', () => {
      expect(loadConfig({ FLEETHUB_DEVICE_CERT_PROXY_SECRET: 's'.repeat(32) }).deviceCertProxy).toEqual({
        secret: 's'.repeat(32),
        header: 'x-client-cert',
      });
      expect(
        loadConfig({
          FLEETHUB_DEVICE_CERT_PROXY_SECRET: 's'.repeat(32),
          FLEETHUB_DEVICE_CERT_PROXY_HEADER: 'X-SSL-Client-Cert',
        }).deviceCertProxy?.header,
      ).toBe('x-ssl-client-cert');
      expect(problemsOf({ FLEETHUB_DEVICE_CERT_PROXY_SECRET: 'short' })).toEqual([
        'FLEETHUB_DEVICE_CERT_PROXY_SECRET must be at least 32 characters long',
      ]);
      expect(problemsOf({ FLEETHUB_DEVICE_CERT_PROXY_HEADER: 'x-client-cert' })).toHaveLength(1);
    });
  });
});
