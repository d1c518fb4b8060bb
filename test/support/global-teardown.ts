import { Client } from 'pg';

export default async function globalTeardown(): Promise<void> {
  const adminUrl = process.env.FLEETHUB_TEST_ADMIN_URL;
  const template = process.env.FLEETHUB_TEST_TEMPLATE;
  // Each jest project runs the global teardown: the first one does it for the run.
  delete process.env.FLEETHUB_TEST_TEMPLATE;
  if (adminUrl && template) {
    const admin = new Client({ connectionString: adminUrl });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`).finally(() => admin.end());
  }
  const embedded = globalThis.__fleethubTestPostgres;
  globalThis.__fleethubTestPostgres = undefined;
  await embedded?.stop();
}
