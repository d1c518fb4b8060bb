import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { eventually } from './support/eventually';
import { unique, type TestUser } from './support/fixtures';
import { type ServerProcess, startServerProcess } from './support/server-process';
import { createTestApp } from './support/test-app';
import { createTestDatabase } from './support/test-database';
import { WebhookReceiver } from './support/webhook-receiver';

const SECRET_KEY = 'webhooks-two-instances-secret-key-0123456789';
const WEBHOOK_ENV = {
  FLEETHUB_WEBHOOK_HTTP_HOSTS: '127.0.0.1',
  FLEETHUB_WEBHOOK_ALLOW_CIDRS: '127.0.0.1/32',
  FLEETHUB_WEBHOOK_BACKOFF_BASE_MS: '50',
  FLEETHUB_WEBHOOK_BACKOFF_MAX_MS: '200',
  FLEETHUB_WEBHOOK_POLL_MS: '100',
  FLEETHUB_WEBHOOK_TIMEOUT_MS: '1000',
  FLEETHUB_RATE_LIMIT_API_PER_MIN: '0',
};
const DEVICES = 40;

describe('webhooks on two instances', () => {
  let database: { url: string; drop(): Promise<void> };
  let dataDir: string;
  const servers: ServerProcess[] = [];
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    database = await createTestDatabase();
    dataDir = await mkdtemp(join(tmpdir(), 'fleethub-webhooks-'));
    receiver = await new WebhookReceiver().start();
  });
  afterAll(async () => {
    for (const server of servers) server.kill();
    await Promise.all(servers.map((s) => s.exited));
    await receiver.close();
    await database.drop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('share deliveries, and one killed mid-batch (kill -9) loses no event', async () => {
    // The organization, product and webhook, made in-process on the shared database, which is then closed.
    const setup = await createTestApp(
      { ...WEBHOOK_ENV, FLEETHUB_SECRET_KEY: SECRET_KEY },
      { databaseUrl: database.url },
    );
    const { admin, org, product } = await (async (): Promise<{
      admin: TestUser;
      org: string;
      product: string;
    }> => {
      try {
        const user = await setup.fixtures.user();
        const name = await setup.fixtures.org(user);
        const made = await setup.fixtures.product(user, name, unique('two-'));
        await setup
          .http()
          .post(`/api/orgs/${name}/webhooks`)
          .set(user.auth)
          .send({ url: receiver.url(), event_types: ['device.created'] })
          .expect(201);
        return { admin: user, org: name, product: made };
      } finally {
        await setup.close();
      }
    })();
    // Slow answers: both instances have attempts in flight when one is killed.
    receiver.answer = () => ({ status: 200, delayMs: 150 });
    const start = (name: string) =>
      startServerProcess({
        ...WEBHOOK_ENV,
        DATABASE_URL: database.url,
        FLEETHUB_DATA_DIR: join(dataDir, name),
        FLEETHUB_SECRET_KEY: SECRET_KEY,
        LOG_LEVEL: 'warn',
      }).then((server) => {
        servers.push(server);
        return server;
      });
    const [a, b] = await Promise.all([start('a'), start('b')]);

    const identifiers = Array.from({ length: DEVICES }, () => unique('k9-'));
    for (let i = 0; i < identifiers.length; i += 8) {
      await Promise.all(
        identifiers.slice(i, i + 8).map((identifier) =>
          request(i % 16 === 0 ? a.url : b.url)
            .post(`/api/orgs/${org}/products/${product}/devices`)
            .set(admin.auth)
            .send({ identifier })
            .expect(201),
        ),
      );
    }
    await eventually(
      () => receiver.received.length,
      (n) => n >= 6,
    );
    a.child.kill('SIGKILL');
    await a.exited;

    const subjects = () => new Set(receiver.received.map((r) => r.json.subject));
    await eventually(subjects, (seen) => seen.size >= DEVICES, 30_000);
    expect([...subjects()].sort()).toEqual(identifiers.map((id) => `device:${id}`).sort());
    // At least once: only attempts in flight on the killed instance may have come twice (same webhook-id).
    const ids = receiver.received.map((r) => String(r.headers['webhook-id']));
    expect(ids.length - new Set(ids).size).toBeLessThanOrEqual(4);
    // Both instances delivered: the survivor's deliveries after the kill, the killed one's before it.
    expect(b.child.exitCode).toBeNull();
  }, 90_000);
});
