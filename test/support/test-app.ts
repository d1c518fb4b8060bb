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
import { type AppConfig, loadConfig } from '../../src/config/config';
import { configureHttpApp } from '../../src/http-app';
import { createTestDatabase } from './test-database';
import { Fixtures } from './fixtures';

export interface TestApp {
  app: INestApplication;
  db: DataSource;
  config: AppConfig;
  http: () => TestAgent;
  fixtures: Fixtures;
  close(): Promise<void>;
}

/** The real application on its own fresh database (cloned from the migrated template). */
export async function createTestApp(env: Record<string, string> = {}): Promise<TestApp> {
  const database = await createTestDatabase();
  const dataDir = await mkdtemp(join(tmpdir(), 'fleethub-test-'));
  const config = loadConfig({
    FLEETHUB_DATA_DIR: dataDir,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    FLEETHUB_SECRET_KEY: 'test-secret-key-test-secret-key-0123456789',
    ...env,
    DATABASE_URL: database.url,
  });
  const moduleRef = await Test.createTestingModule({
    imports: [AppModule.register(config, database.url)],
  }).compile();
  const app = moduleRef.createNestApplication<NestExpressApplication>({
    bodyParser: false,
    bufferLogs: true,
  });
  configureHttpApp(app);
  await app.init();
  const db = app.get(DataSource);
  return {
    app,
    db,
    config,
    http: () => request(app.getHttpServer()),
    fixtures: new Fixtures(app),
    close: async () => {
      await app.close();
      await database.drop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
