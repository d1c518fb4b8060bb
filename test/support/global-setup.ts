import { join } from 'node:path';
import { Client } from 'pg';
import { EmbeddedPostgres } from '../../src/database/embedded-postgres';
import { runMigrations } from '../../src/database/migrate';

declare global {
  var __fleethubTestPostgres: EmbeddedPostgres | undefined;
}

/**
 * One PostgreSQL for the whole run: TEST_DATABASE_URL or DATABASE_URL when set, else an embedded server
 * under .data/test (or FLEETHUB_TEST_PG_DIR). A template database is migrated once; every test file clones its own from it.
 */
export default async function globalSetup(): Promise<void> {
  // Each jest project runs the global setup: the first one does it for the run.
  if (process.env.FLEETHUB_TEST_TEMPLATE !== undefined) return;
  let baseUrl = process.env.TEST_DATABASE_URL || process.env.DATABASE_URL;
  if (!baseUrl) {
    const embedded = new EmbeddedPostgres({
      dataDir: process.env.FLEETHUB_TEST_PG_DIR ?? join(__dirname, '..', '..', '.data', 'test', 'postgres'),
      database: 'postgres',
      settings: { fsync: 'off', synchronous_commit: 'off', full_page_writes: 'off' },
    });
    baseUrl = await embedded.start();
    globalThis.__fleethubTestPostgres = embedded;
  }
  // A template per run, so that several runs can share one server (e.g. TEST_DATABASE_URL).
  const template = `fleethub_tmpl_${process.pid}`;
  const adminUrl = new URL(baseUrl);
  adminUrl.pathname = '/postgres';
  const admin = new Client({ connectionString: adminUrl.toString() });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${template}`);
  } finally {
    await admin.end();
  }
  const templateUrl = new URL(adminUrl);
  templateUrl.pathname = `/${template}`;
  await runMigrations(templateUrl.toString());
  process.env.FLEETHUB_TEST_ADMIN_URL = adminUrl.toString();
  process.env.FLEETHUB_TEST_TEMPLATE = template;
}
