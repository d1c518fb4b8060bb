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
});
