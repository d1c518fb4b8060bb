import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import request from 'supertest';
import { loadConfig } from '../src/config/config';
import { Simulator, simulatedIrohKey } from '../src/cli/simulator';
import { type RunningServer, startServer } from '../src/server';
import { CapturedLog, type LogLine } from './support/captured-log';
import { INTERNAL_ERROR } from './support/contract-bodies';
import { Fixtures, type TestUser } from './support/fixtures';
import { createTestDatabase } from './support/test-database';
import { eventually } from './support/eventually';

/**
 * The server as `npm start` runs it (startServer: Nest application, HTTP setup, services), its pino output
 * captured: lines services log through Nest's Logger reach it, from start-up on, and a 500 leaves one line
 * with its cause.
 */
describe('log output of the real server', () => {
  const log = new CapturedLog();
  let database: { url: string; drop(): Promise<void> };
  let dataDir: string;
  let server: RunningServer;
  let fixtures: Fixtures;
  let admin: TestUser;
  let org: string;
  const http = () => request(server.url);
  const withMessage = (msg: string) => log.lines.filter((line) => line.msg === msg);

  beforeAll(async () => {
    database = await createTestDatabase();
    // No FLEETHUB_SECRET_KEY: the server generates one while its modules start, and says so.
    dataDir = await mkdtemp(join(tmpdir(), 'fleethub-logging-'));
    const config = loadConfig({
      DATABASE_URL: database.url,
      FLEETHUB_DATA_DIR: dataDir,
      PORT: '0',
      LOG_LEVEL: 'info',
      FLEETHUB_RATE_LIMIT_API_PER_MIN: '0',
    });
    server = await startServer(config, { logger: log.logger('info') });
    fixtures = new Fixtures(server.app);
    admin = await fixtures.user();
    org = await fixtures.org(admin);
  });

  afterAll(async () => {
    await server?.close();
    await database?.drop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('a service’s line logged while the server starts is in the output (not left in a buffer)', () => {
    expect(withMessage('generated a new server secret key')).toEqual([
      expect.objectContaining({ level: 30, context: 'ServerKeyService', path: join(dataDir, 'secret_key') }),
    ]);
    // Nest's own start-up lines (a line per module and route) are debug, below this level.
    expect(log.lines.filter((line) => line.context === 'RouterExplorer')).toEqual([]);
  });

  it('a device’s refused iroh claim is logged by the iroh service (contract section 7)', async () => {
    const product = 'loggers';
    await http().post(`/api/orgs/${org}/products`).set(admin.auth).send({ name: product }).expect(201);
    const secret = await http()
      .post(`/api/orgs/${org}/products/${product}/shared_secrets`)
      .set(admin.auth)
      .send({})
      .expect(201);
    // The key the simulated device will report already belongs to a member.
    const endpoint = simulatedIrohKey('logtest-0001');
    await http()
      .post(`/api/orgs/${org}/iroh_endpoints`)
      .set(admin.auth)
      .send({ identifier: endpoint, user_email: admin.user.email })
      .expect(201);
    const simulator = new Simulator({
      url: server.url,
      key: secret.body.data.key,
      secret: secret.body.data.secret,
      devices: 1,
      prefix: 'logtest-',
    });
    simulator.start(0);
    try {
      const refused = await eventually(
        () => withMessage('iroh endpoint report refused'),
        (lines) => lines.length > 0,
      );
      expect(refused).toEqual([
        expect.objectContaining({
          level: 40,
          context: 'IrohService',
          device: 'logtest-0001',
          endpointId: endpoint,
        }),
      ]);
    } finally {
      await simulator.stop();
    }
  });

  describe('a 500', () => {
    const productName = 'refused-by-a-check-constraint';
    let response: request.Response;
    let lines: LogLine[];

    beforeAll(async () => {
      // A constraint the service knows nothing about: the insert fails as an unexpected database error.
      const client = new Client({ connectionString: database.url });
      await client.connect();
      try {
        await client.query(
          `ALTER TABLE products ADD CONSTRAINT logging_test_refusal CHECK (name <> '${productName}')`,
        );
      } finally {
        await client.end();
      }
      response = await http()
        .post(`/api/orgs/${org}/products?note=query-parameter-value`)
        .set(admin.auth)
        .send({ name: productName });
      const requestId = response.headers['x-request-id'];
      // The completion line (if any) is written when the response finishes: give it the time to show up.
      await new Promise((r) => setTimeout(r, 100));
      lines = log.lines.filter((line) => line.requestId === requestId);
    });

    it('answers the generic body with a request id', () => {
      expect(response.status).toBe(500);
      expect(response.body).toEqual(INTERNAL_ERROR);
      expect(response.headers['x-request-id']).toEqual(expect.any(String));
    });

    it('leaves one error line: message, stack, request id, route, status, duration and SQLSTATE', () => {
      expect(lines).toEqual([
        expect.objectContaining({
          level: 50,
          msg: 'request failed',
          requestId: response.headers['x-request-id'],
          req: {
            method: 'POST',
            route: '/api/orgs/:org_name/products',
            path: `/api/orgs/${org}/products`,
          },
          res: { status: 500 },
          durationMs: expect.any(Number),
          err: expect.objectContaining({
            type: 'QueryFailedError',
            message: expect.stringContaining('violates check constraint "logging_test_refusal"'),
            code: '23514',
            constraint: 'logging_test_refusal',
            stack: expect.stringMatching(/^QueryFailedError: .*\n\s+at [^]*ProductsService\.create/),
          }),
        }),
      ]);
    });

    it('logs neither the SQL, its parameters, the body, the token nor the query string', () => {
      expect(lines).toEqual([expect.objectContaining({ err: expect.objectContaining({ code: '23514' }) })]);
      const failure = JSON.stringify(lines);
      for (const leak of [productName, admin.token, 'query-parameter-value', 'INSERT', 'Failing row']) {
        expect(failure).not.toContain(leak);
      }
      expect(log.text).not.toContain(admin.token);
    });
  });
});
