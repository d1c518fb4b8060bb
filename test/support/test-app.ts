import type { INestApplication } from '@nestjs/common';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Test } from '@nestjs/testing';
import type { NestExpressApplication } from '@nestjs/platform-express';
import request from 'supertest';
import type TestAgent from 'supertest/lib/agent';
import { DataSource } from 'typeorm';
import { AppModule } from '../../src/app.module';
import { ExpressHttpAdapter } from '../../src/common/http/express-adapter';
import { AppLogger } from '../../src/common/http/logger';
import { type AppConfig, loadConfig } from '../../src/config/config';
import { configureHttpApp } from '../../src/http-app';
import { WEBHOOK_RESOLVER, type WebhookResolver } from '../../src/webhooks/webhook-sender';
import { createTestDatabase } from './test-database';
import { Fixtures } from './fixtures';

export interface TestApp {
  app: INestApplication;
  db: DataSource;
  config: AppConfig;
  /** The app's database (pass it as `options.databaseUrl` to run a second instance on it). */
  databaseUrl: string;
  http: () => TestAgent;
  fixtures: Fixtures;
  close(): Promise<void>;
}

export interface TestAppOptions {
  /** Providers to replace, e.g. `{ provide: DeviceAuthenticator, useValue: fake }`. */
  overrides?: { provide: unknown; useValue: unknown }[];
  /** Run on this existing database (another test app's) instead of a fresh one; it is not dropped on close. */
  databaseUrl?: string;
  /** The app's logger (e.g. one writing to a captured stream); by default one at `LOG_LEVEL` on stdout. */
  logger?: AppLogger;
}

/**
 * Webhook deliveries in tests resolve no host name unless a test gives its own resolver: tests never send
 * traffic beyond loopback (receivers are `http://127.0.0.1:<port>` under an allow-list the test configures).
 */
const NO_HOST_NAMES: WebhookResolver = { resolve: () => Promise.resolve([]) };

/** The real application on its own fresh database (cloned from the migrated template). */
export async function createTestApp(
  env: Record<string, string> = {},
  options: TestAppOptions = {},
): Promise<TestApp> {
  const database = options.databaseUrl
    ? { url: options.databaseUrl, drop: async () => undefined }
    : await createTestDatabase();
  const dataDir = await mkdtemp(join(tmpdir(), 'fleethub-test-'));
  const config = loadConfig({
    FLEETHUB_DATA_DIR: dataDir,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    FLEETHUB_SECRET_KEY: 'test-secret-key-test-secret-key-0123456789',
    ...env,
    DATABASE_URL: database.url,
  });
  const logger = options.logger ?? new AppLogger(config.logLevel);
  const builder = Test.createTestingModule({
    imports: [AppModule.register(config, database.url, logger)],
  });
  for (const { provide, useValue } of options.overrides ?? []) {
    builder.overrideProvider(provide).useValue(useValue);
  }
  if (!(options.overrides ?? []).some((o) => o.provide === WEBHOOK_RESOLVER)) {
    builder.overrideProvider(WEBHOOK_RESOLVER).useValue(NO_HOST_NAMES);
  }
  const moduleRef = await builder.compile();
  const app = moduleRef.createNestApplication<NestExpressApplication>(new ExpressHttpAdapter(), {
    bodyParser: false,
    logger,
  });
  configureHttpApp(app);
  await app.init();
  const db = app.get(DataSource);
  return {
    app,
    db,
    config,
    databaseUrl: database.url,
    http: () => request(app.getHttpServer()),
    fixtures: new Fixtures(app),
    close: async () => {
      await app.close();
      await database.drop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
