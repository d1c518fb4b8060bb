import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeviceAuthenticator } from '../src/device-auth/device-authenticator';
import { DeviceGateway, SHUTDOWN_CLOSE_CODE } from '../src/gateway/device-gateway';
import { ShutdownState } from '../src/health/shutdown-state';
import { DeviceSocketClient } from './support/device-socket-client';
import { eventually } from './support/eventually';
import { FakeAuthenticator } from './support/fake-authenticator';
import type { TestUser } from './support/fixtures';
import { listenOnLoopback } from './support/listening-app';
import { type ServerProcess, startServerProcess } from './support/server-process';
import { createTestApp, type TestApp } from './support/test-app';
import { createTestDatabase } from './support/test-database';

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** What one request got: its status and `Connection` header, or the error that cut it. */
interface Answer {
  sentAt: number;
  status: number;
  connection: string | undefined;
  error?: string;
}

function send(agent: Agent, url: string, method: string, path: string, token: string, body?: object) {
  const sentAt = Date.now();
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise<Answer>((resolve) => {
    const req = request(
      new URL(path, url),
      {
        method,
        agent,
        headers: {
          Authorization: `Bearer ${token}`,
          ...(payload === undefined
            ? {}
            : { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(payload)) }),
        },
      },
      (res) => {
        res.resume();
        res.once('end', () =>
          resolve({ sentAt, status: res.statusCode ?? 0, connection: res.headers.connection }),
        );
        res.once('error', (err) => resolve({ sentAt, status: 0, connection: undefined, error: String(err) }));
      },
    );
    req.once('error', (err) => resolve({ sentAt, status: 0, connection: undefined, error: String(err) }));
    req.end(payload);
  });
}

/** A raw HTTP/1.1 connection: for an idle keep-alive connection, or a request body sent in pieces. */
class RawConnection {
  received = '';
  readonly closedAt: Promise<number>;

  private constructor(readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => (this.received += chunk.toString()));
    socket.on('error', () => undefined);
    this.closedAt = new Promise((resolve) => socket.once('close', () => resolve(Date.now())));
  }

  static open(port: number): Promise<RawConnection> {
    const socket = connect(port, '127.0.0.1');
    return new Promise((resolve, reject) => {
      socket.once('connect', () => resolve(new RawConnection(socket)));
      socket.once('error', reject);
    });
  }

  /** The first response's status and headers, once it has arrived in full (or whatever came before the close). */
  async response(): Promise<{ status: number; headers: Record<string, string> }> {
    const parsed = () => {
      const end = this.received.indexOf('\r\n\r\n');
      if (end < 0) return null;
      const [statusLine, ...lines] = this.received.slice(0, end).split('\r\n');
      const headers = Object.fromEntries(
        lines.map((line) => [
          line.slice(0, line.indexOf(':')).toLowerCase(),
          line.slice(line.indexOf(':') + 1).trim(),
        ]),
      );
      const complete = this.received.length - end - 4 >= Number(headers['content-length'] ?? 0);
      return complete ? { status: Number(statusLine.split(' ')[1]), headers } : null;
    };
    const closed = this.closedAt.then(() => null);
    for (;;) {
      const response = parsed();
      if (response) return response;
      const done = await Promise.race([closed, sleep(10).then(() => 'waiting' as const)]);
      if (done === null) return parsed() ?? { status: 0, headers: {} };
    }
  }
}

// Each test starts processes from the TypeScript sources (compiled on the fly).
jest.setTimeout(90_000);

describe('shutdown', () => {
  let database: { url: string; drop(): Promise<void> };
  let dataDir: string;
  let user: TestUser;
  let org: string;
  let product: string;
  const servers: ServerProcess[] = [];

  beforeAll(async () => {
    database = await createTestDatabase();
    dataDir = await mkdtemp(join(tmpdir(), 'fleethub-shutdown-'));
    const t = await createTestApp({}, { databaseUrl: database.url });
    try {
      user = await t.fixtures.user();
      org = await t.fixtures.org(user);
      product = await t.fixtures.product(user, org);
    } finally {
      await t.close();
    }
  });

  afterEach(() => {
    for (const server of servers.splice(0)) server.kill();
  });

  afterAll(async () => {
    await database?.drop();
    await rm(dataDir, { recursive: true, force: true });
  });

  async function start(env: Record<string, string>): Promise<ServerProcess> {
    const server = await startServerProcess({
      DATABASE_URL: database.url,
      FLEETHUB_DATA_DIR: dataDir,
      FLEETHUB_SECRET_KEY: 'shutdown-test-secret-key-0123456789abcdef',
      FLEETHUB_RATE_LIMIT_API_PER_MIN: '0',
      LOG_LEVEL: 'info',
      ...env,
    });
    servers.push(server);
    return server;
  }

  const logged = (server: ServerProcess, msg: string) => server.logLines().filter((line) => line.msg === msg);

  /** A product create whose body is sent in two pieces: the first now, the rest by `finish()`. */
  async function slowUpload(server: ServerProcess) {
    const body = JSON.stringify({ name: `late-${randomBytes(4).toString('hex')}` });
    const connection = await RawConnection.open(server.port);
    connection.socket.write(
      `POST /api/orgs/${org}/products HTTP/1.1\r\nHost: fleethub\r\nAuthorization: Bearer ${user.token}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 5)}`,
    );
    // Long enough for its headers to be read: a request in flight, waiting for the rest of its body.
    await sleep(200);
    return { connection, finish: () => connection.socket.write(body.slice(5)) };
  }

  it('answers every keep-alive request with Connection: close, closes idle connections, finishes an upload in flight, exits within drain + 2 s', async () => {
    const drainMs = 1500;
    const server = await start({ FLEETHUB_SHUTDOWN_DRAIN_MS: String(drainMs) });
    const idle = await Promise.all(
      [0, 1].map(async () => {
        const connection = await RawConnection.open(server.port);
        connection.socket.write('GET /healthz HTTP/1.1\r\nHost: fleethub\r\n\r\n');
        expect((await connection.response()).headers.connection).toBe('keep-alive');
        return { connection, received: connection.received };
      }),
    );
    const upload = await slowUpload(server);

    // Keep-alive clients, each on one connection, alternating a device list and a device create, half of them
    // pausing 40 ms between requests (so that the drain finds some between two); told to close, a client moves to
    // another instance (here: stops).
    let answered = 0;
    let stopAt = Number.POSITIVE_INFINITY;
    const clients = Array.from({ length: 8 }, async (_, c) => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      const answers: Answer[] = [];
      try {
        for (let n = 0; Date.now() < stopAt; n++) {
          const devices = `/api/orgs/${org}/products/${product}/devices`;
          const answer =
            n % 2 === 0
              ? await send(agent, server.url, 'GET', `${devices}?pagination[page_size]=50`, user.token)
              : await send(agent, server.url, 'POST', devices, user.token, { identifier: `d-${c}-${n}` });
          answers.push(answer);
          answered++;
          if (answer.error !== undefined || answer.connection === 'close') break;
          if (c % 2 === 1) await sleep(40);
        }
      } finally {
        agent.destroy();
      }
      return answers;
    });
    await eventually(
      () => answered,
      (count) => count >= 40,
    );
    const signalledAt = Date.now();
    server.child.kill('SIGTERM');
    // Today's server never tells them to close: they would hammer on past its exit bound.
    stopAt = signalledAt + drainMs + 4000;
    await sleep(drainMs + 300);
    upload.finish();
    const uploaded = await upload.connection.response();
    const exit = await server.exited;
    const answers = await Promise.all(clients);

    const all = answers.flat();
    expect(all.filter((a) => a.error !== undefined || a.status >= 500)).toEqual([]);
    expect(exit.code).toBe(0);
    expect(exit.at - signalledAt).toBeLessThan(drainMs + 2000);
    const [draining] = logged(server, 'shutting down: draining');
    const drainStartedAt = Number(draining.time);
    // Each client was told to close, and nothing sent after the drain started was answered keep-alive.
    expect(answers.map((own) => own[own.length - 1].connection)).toEqual(answers.map(() => 'close'));
    expect(all.filter((a) => a.sentAt >= drainStartedAt && a.connection !== 'close')).toEqual([]);
    // The idle connections closed during the drain, before the listener did, without a byte more.
    for (const { connection, received } of idle) {
      expect((await connection.closedAt) - drainStartedAt).toBeLessThan(drainMs);
      expect(connection.received).toBe(received);
    }
    // The upload finished after the listener had closed.
    expect(uploaded).toMatchObject({ status: 201, headers: { connection: 'close' } });
  });

  it('past FLEETHUB_SHUTDOWN_TIMEOUT_MS cuts what is still in flight, says so and exits 1', async () => {
    const server = await start({ FLEETHUB_SHUTDOWN_DRAIN_MS: '200', FLEETHUB_SHUTDOWN_TIMEOUT_MS: '500' });
    const upload = await slowUpload(server);
    const signalledAt = Date.now();
    server.child.kill('SIGTERM');
    const exit = await server.exited;
    expect(exit.code).toBe(1);
    expect(exit.at - signalledAt).toBeGreaterThanOrEqual(700);
    expect(exit.at - signalledAt).toBeLessThan(700 + 2000);
    expect(logged(server, 'shutdown limit reached: cutting the requests still in flight')).toEqual([
      expect.objectContaining({ level: 40, limitMs: 500, cut: 1 }),
    ]);
    expect((await upload.connection.response()).status).toBe(0);
  });

  it('a second SIGTERM cuts what is in flight and exits at once, and says so', async () => {
    const server = await start({ FLEETHUB_SHUTDOWN_DRAIN_MS: '10000' });
    await slowUpload(server);
    server.child.kill('SIGTERM');
    await eventually(
      () => logged(server, 'shutting down: draining').length,
      (count) => count === 1,
    );
    const secondAt = Date.now();
    server.child.kill('SIGTERM');
    const exit = await server.exited;
    expect(exit.code).toBe(1);
    expect(exit.at - secondAt).toBeLessThan(2000);
    expect(logged(server, 'second signal: exiting now, cutting the requests still in flight')).toEqual([
      expect.objectContaining({ level: 40, signal: 'SIGTERM', cut: 1 }),
    ]);
  });

  /** An in-process app on loopback whose device sockets authenticate by `x-test-device`; closed after `run`. */
  async function withDeviceApp(run: (t: TestApp, url: string) => Promise<void>): Promise<void> {
    const authenticator = new FakeAuthenticator();
    const t = await createTestApp(
      {},
      { databaseUrl: database.url, overrides: [{ provide: DeviceAuthenticator, useValue: authenticator }] },
    );
    authenticator.db = t.db;
    try {
      await run(t, (await listenOnLoopback(t)).url);
    } finally {
      await t.close();
    }
  }

  it('closes device sockets one after another over the drain and refuses new ones meanwhile', async () => {
    await withDeviceApp(async (t, url) => {
      const identifiers = Array.from(
        { length: 5 },
        (_, i) => `drained-${i}-${randomBytes(3).toString('hex')}`,
      );
      await t.fixtures.devices(user, org, product, identifiers);
      const devices = await Promise.all(
        identifiers.map((identifier) => DeviceSocketClient.connect(url, { 'x-test-device': identifier })),
      );
      const drainMs = 1000;
      const startedAt = Date.now();
      t.app.get(ShutdownState).startDraining(drainMs);
      const refused = await DeviceSocketClient.refused(url, { 'x-test-device': identifiers[0] });
      const closes = await Promise.all(
        devices.map(async (device) => ({ code: await device.closed, afterMs: Date.now() - startedAt })),
      );
      expect(refused.status).toBe(503);
      expect(closes.map((close) => close.code)).toEqual(identifiers.map(() => SHUTDOWN_CLOSE_CODE));
      const offsets = closes.map((close) => close.afterMs).sort((x, y) => x - y);
      // Evenly over the drain: one at once, the last after about four fifths of it, none at the same instant.
      expect(offsets[0]).toBeLessThan(drainMs / 5);
      expect(offsets[offsets.length - 1]).toBeGreaterThanOrEqual((drainMs * 4) / 5 - 100);
      expect(offsets[offsets.length - 1]).toBeLessThan(drainMs + 1000);
    });
  });

  it('cuts a device socket whose device does not answer the close frame 1 s after the drain closed it', async () => {
    await withDeviceApp(async (t, url) => {
      const identifier = `silent-${randomBytes(3).toString('hex')}`;
      await t.fixtures.devices(user, org, product, [identifier]);
      const device = await DeviceSocketClient.connect(url, { 'x-test-device': identifier });
      const gateway = t.app.get(DeviceGateway);
      expect(gateway.connectionCount).toBe(1);
      // It reads nothing more: the close frame stays unanswered.
      device.ws.pause();
      const startedAt = Date.now();
      t.app.get(ShutdownState).startDraining(0);
      await sleep(500);
      expect(gateway.connectionCount).toBe(1);
      await eventually(
        () => gateway.connectionCount,
        (count) => count === 0,
      );
      const cutAfterMs = Date.now() - startedAt;
      expect(cutAfterMs).toBeGreaterThanOrEqual(900);
      expect(cutAfterMs).toBeLessThan(1800);
      device.ws.resume();
    });
  });
});
