import { randomBytes } from 'node:crypto';
import { Client } from 'pg';

function adminUrl(): string {
  const url = process.env.FLEETHUB_TEST_ADMIN_URL;
  if (!url) throw new Error('FLEETHUB_TEST_ADMIN_URL is not set: run the tests through jest (globalSetup)');
  return url;
}

function template(): string {
  const name = process.env.FLEETHUB_TEST_TEMPLATE;
  if (!name) throw new Error('FLEETHUB_TEST_TEMPLATE is not set: run the tests through jest (globalSetup)');
  return name;
}

async function withAdmin<T>(fn: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: adminUrl() });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** A fresh, migrated database of its own for one test file; `drop()` removes it. */
export async function createTestDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `fleethub_t_${process.pid}_${randomBytes(4).toString('hex')}`;
  await withAdmin(async (client) => {
    for (let attempt = 0; ; attempt++) {
      try {
        await client.query(`CREATE DATABASE ${name} TEMPLATE ${template()}`);
        return;
      } catch (err) {
        // Two clones starting together can briefly see each other on the template.
        if (attempt >= 20 || !/being accessed by other users/.test(String(err))) throw err;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  });
  const url = new URL(adminUrl());
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: () =>
      withAdmin((client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(
        () => undefined,
      ),
  };
}
