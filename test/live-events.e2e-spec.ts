import { randomBytes } from 'node:crypto';
import { DeviceAuthenticator } from '../src/device-auth/device-authenticator';
import { EventStreamsService } from '../src/live/event-streams.service';
import { LiveEvents } from '../src/live/live-events';
import { LIVE_TIMING, type LiveTiming } from '../src/live/live-timing';
import { ShutdownState } from '../src/health/shutdown-state';
import { detail, fieldError, NOT_FOUND, UNAUTHORIZED } from './support/contract-bodies';
import { DeviceSocketClient } from './support/device-socket-client';
import { eventually } from './support/eventually';
import { EventStreamClient } from './support/event-stream-client';
import { FakeAuthenticator } from './support/fake-authenticator';
import type { TestUser } from './support/fixtures';
import { listenOnLoopback } from './support/listening-app';
import { createTestApp, type TestApp } from './support/test-app';

const PASSWORD = 'live events password';
const TIMING: LiveTiming = {
  keepaliveMs: 300,
  revalidateMs: 400,
  stallMs: 60_000,
  countsMinMs: 100,
  countsRefreshMs: 1000,
  overviewMinMs: 100,
  overviewRefreshMs: 1000,
};
const OLD_UUID = '00000000-0000-4000-8000-000000000001';

function joinParams(uuid = OLD_UUID, platform = 'rpi4', architecture = 'aarch64'): Record<string, unknown> {
  return {
    nerves_fw_uuid: uuid,
    nerves_fw_product: 'live',
    nerves_fw_version: '1.0.0',
    nerves_fw_platform: platform,
    nerves_fw_architecture: architecture,
    device_api_version: '2.3.0',
    fwup_public_keys: 'on_connect',
  };
}

/**
 * The console's live events (`GET .../products/{product}/events`) on two instances sharing one database: the
 * streams are opened on A, the devices connect to B, so every event crosses the instance bus.
 */
describe('live events (Server-Sent Events) across two instances', () => {
  const authA = new FakeAuthenticator();
  const authB = new FakeAuthenticator();
  let a: TestApp;
  let b: TestApp;
  let urlA: string;
  let urlB: string;
  let admin: TestUser;
  let viewer: TestUser;
  let outsider: TestUser;
  let org: string;
  const product = 'live';
  const clients: DeviceSocketClient[] = [];
  const streams: EventStreamClient[] = [];

  beforeAll(async () => {
    const overrides = (auth: FakeAuthenticator) => [
      { provide: DeviceAuthenticator, useValue: auth },
      { provide: LIVE_TIMING, useValue: TIMING },
    ];
    // A request timeout short enough for a stream to outlive it in a test, long enough for a sign-in on a loaded machine.
    const env = { FLEETHUB_EVENT_STREAMS_PER_USER: '3', FLEETHUB_REQUEST_TIMEOUT_SEC: '3' };
    a = await createTestApp(env, { overrides: overrides(authA) });
    authA.db = a.db;
    ({ url: urlA } = await listenOnLoopback(a));
    b = await createTestApp(env, { databaseUrl: a.databaseUrl, overrides: overrides(authB) });
    authB.db = b.db;
    ({ url: urlB } = await listenOnLoopback(b));
    admin = await a.fixtures.user({ password: PASSWORD });
    viewer = await a.fixtures.user({ password: PASSWORD });
    outsider = await a.fixtures.user();
    org = await a.fixtures.org(admin);
    await a.fixtures.addMember(org, viewer, 'view');
    await a.fixtures.product(admin, org, product);
    await a
      .http()
      .patch(`/api/orgs/${org}/products/${product}/extensions`)
      .set(admin.auth)
      .send({ logging: true })
      .expect(200);
  });

  afterEach(async () => {
    for (const stream of streams.splice(0)) stream.close();
    await Promise.all(clients.splice(0).map((c) => c.close()));
    // Each test starts with no stream open (their rows count against the per-user limit until they are gone).
    const open = async () =>
      (await a.db.query<{ n: number }[]>(`SELECT count(*)::int AS n FROM event_streams`))[0].n +
      a.app.get(EventStreamsService).openStreams.length +
      b.app.get(EventStreamsService).openStreams.length;
    expect(await eventually(open, (n) => n === 0)).toBe(0);
  });

  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  const eventsPath = (query = '') => `/api/orgs/${org}/products/${product}/events${query}`;

  async function open(
    who: { auth: Record<string, string> } | Record<string, string>,
    query = '',
    url = urlA,
  ): Promise<EventStreamClient> {
    const headers = 'auth' in who ? (who.auth as Record<string, string>) : who;
    const stream = await EventStreamClient.open(`${url}${eventsPath(query)}`, headers);
    streams.push(stream);
    return stream;
  }

  async function newDevice(): Promise<string> {
    const identifier = `live-${randomBytes(4).toString('hex')}`;
    await a.fixtures.device(admin, org, product, identifier);
    return identifier;
  }

  async function connectToB(identifier: string, params = joinParams()): Promise<DeviceSocketClient> {
    const client = await DeviceSocketClient.connect(urlB, { 'x-test-device': identifier });
    clients.push(client);
    const reply = await client.join('device', params);
    expect(reply[4]).toEqual({ status: 'ok', response: {} });
    return client;
  }

  it('a view member sees a device on the other instance connect and disconnect', async () => {
    const stream = await open(viewer);
    expect(stream.status).toBe(200);
    expect(stream.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(stream.headers['cache-control']).toBe('no-cache, no-transform');
    const identifier = await newDevice();
    const client = await connectToB(identifier);
    const connected = await stream.nextOf('device.connection', (d) => d.identifier === identifier);
    expect(connected.data).toEqual({
      identifier,
      connection_status: 'connected',
      at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
    });
    await client.close();
    const disconnected = await stream.nextOf('device.connection', (d) => d.identifier === identifier);
    expect(disconnected.data).toMatchObject({ identifier, connection_status: 'disconnected' });
    // Other products' streams hear nothing of it; the device's product stream is the one that was told.
    expect(stream.events.filter((e) => e.event === 'device.console')).toEqual([]);
  });

  it('carries console output and log lines of the device named by `device=`, and only to that stream', async () => {
    const identifier = await newDevice();
    const other = await newDevice();
    const withDevice = await open(admin, `?device=${identifier}`);
    const productOnly = await open(admin);
    const client = await connectToB(identifier);
    await client.join('console', { console_version: '2.0.0' });
    const extensions = await client.join('extensions', { logging: '0.0.1' });
    expect((extensions[4] as { response: string[] }).response).toContain('logging');
    client.push('extensions', 'logging:attached', {});
    await client.heartbeat();

    // Console code typed on instance A reaches the device on B; its answer comes back as events.
    await a.http().post(`/api/devices/${identifier}/code`).set(admin.auth).send({ code: '1+1' }).expect(204);
    const typed = await client.many('console', 'dn', 4);
    expect(typed.map((f) => (f[4] as { data: string }).data).join('')).toBe('1+1\r');
    client.push('console', 'up', { data: '1+1\r\n2\r\niex(2)> ' });
    const output = await withDevice.nextOf('device.console');
    expect(output.data).toEqual({ identifier, data: '1+1\r\n2\r\niex(2)> ' });

    client.push('extensions', 'logging:send', { level: 'warning', message: 'disk nearly full' });
    const log = await withDevice.nextOf('device.log');
    expect(log.data).toEqual({
      identifier,
      level: 'warning',
      message: 'disk nearly full',
      timestamp: expect.stringMatching(/Z$/),
    });
    // Another device's output never reaches the stream.
    const otherClient = await connectToB(other);
    await otherClient.join('console', { console_version: '2.0.0' });
    otherClient.push('console', 'up', { data: 'not yours' });
    client.push('console', 'up', { data: 'mine' });
    expect((await withDevice.nextOf('device.console')).data).toEqual({ identifier, data: 'mine' });
    await productOnly.nextOf('device.connection', (d) => d.identifier === other);
    expect(productOnly.events.filter((e) => e.event.startsWith('device.console'))).toEqual([]);
    expect(withDevice.events.some((e) => (e.data as { data?: string }).data === 'not yours')).toBe(false);
  });

  it('follows an update from the request to the device running it', async () => {
    const fw = await a.fixtures.firmware(admin, org, product, {
      version: '2.0.0',
      meta: { platform: 'rpi4', architecture: 'aarch64' },
    });
    const identifier = await newDevice();
    const stream = await open(admin);
    const client = await connectToB(identifier);
    await a
      .http()
      .post(`/api/orgs/${org}/products/${product}/devices/${identifier}/upgrade`)
      .set(admin.auth)
      .send({ uuid: fw.uuid })
      .expect(204);
    const pending = await stream.nextOf('device.update', (d) => d.identifier === identifier);
    expect(pending.data).toEqual({ identifier, status: 'pending', progress: null, firmware_uuid: fw.uuid });
    await client.next((f) => f[3] === 'update');
    client.push('device', 'status_update', { status: 'received' });
    client.push('device', 'fwup_progress', { stage: 'updating', value: 40 });
    client.push('device', 'fwup_progress', { stage: 'updating', value: 80 });
    const eighty = await stream.nextOf('device.update', (d) => d.progress === 80);
    expect(eighty.data).toEqual({ identifier, status: 'updating', progress: 80, firmware_uuid: fw.uuid });
    await client.close();
    // The device comes back running the new firmware: the update is complete.
    const again = await DeviceSocketClient.connect(urlB, { 'x-test-device': identifier });
    clients.push(again);
    await again.join('device', joinParams(fw.uuid));
    const updated = await stream.nextOf('device.update', (d) => d.status === 'updated');
    expect(updated.data).toEqual({ identifier, status: 'updated', progress: 100, firmware_uuid: fw.uuid });

    // A failure the device reports is `failed`.
    const failing = await newDevice();
    const failer = await connectToB(failing);
    await a
      .http()
      .post(`/api/orgs/${org}/products/${product}/devices/${failing}/upgrade`)
      .set(admin.auth)
      .send({ uuid: fw.uuid })
      .expect(204);
    await failer.next((f) => f[3] === 'update');
    failer.push('device', 'status_update', { status: 'fwup error', reason: 'bad' });
    const failed = await stream.nextOf(
      'device.update',
      (d) => d.identifier === failing && d.status === 'failed',
    );
    expect(failed.data).toMatchObject({ status: 'failed', firmware_uuid: fw.uuid });
  });

  it("gives a group's counts when the stream opens and when they change", async () => {
    // A platform of its own: the devices of the other tests are not the group's.
    const fw = await a.fixtures.firmware(admin, org, product, {
      version: '3.0.0',
      meta: { platform: 'bbb', architecture: 'arm' },
    });
    const name = `group-${randomBytes(3).toString('hex')}`;
    await a
      .http()
      .post(`/api/orgs/${org}/products/${product}/deployments`)
      .set(admin.auth)
      .send({ name, firmware: fw.uuid, conditions: { version: '', tags: [] }, is_active: true })
      .expect(201);
    const stream = await open(admin);
    const first = await stream.nextOf('deployment_group.counts', (d) => d.name === name);
    expect(first.data).toEqual({
      name,
      counts: { devices: 0, updating: 0, updated: 0, failed: 0, blocked: 0 },
    });
    // A device running the group's platform joins on B: it becomes a member (a poke on the bus) and its update
    // starts; the counts follow, in one event or in two (membership first), depending on when they are counted.
    const identifier = await newDevice();
    await connectToB(identifier, joinParams(OLD_UUID, 'bbb', 'arm'));
    const updating = await stream.nextOf(
      'deployment_group.counts',
      (d) => d.name === name && (d.counts as { updating: number }).updating === 1,
      15_000,
    );
    expect(updating.data).toEqual({
      name,
      counts: { devices: 1, updating: 1, updated: 0, failed: 0, blocked: 0 },
    });
  });

  it('gives a slow reader a stream.skipped marker instead of growing without bound', async () => {
    const identifier = await newDevice();
    const stream = await open(admin, `?device=${identifier}`);
    const client = await connectToB(identifier);
    await client.join('console', { console_version: '2.0.0' });
    stream.pause();
    const piece = 'x'.repeat(8000);
    const sent = 2500;
    for (let i = 0; i < sent; i++) {
      client.push('console', 'up', { data: `${i}:${piece}\n` });
      if (i % 200 === 199) await client.heartbeat();
    }
    client.push('console', 'up', { data: 'last line' });
    await client.heartbeat();
    const served = () => a.app.get(EventStreamsService).openStreams.find((s) => s.deviceId !== null);
    // Everything reached A (the last piece is queued behind what the reader has not taken).
    await eventually(
      () => served()?.queuedBytes ?? 0,
      (bytes) => bytes > 200 * 1024,
    );
    const held = served()!.queuedBytes;
    expect(held).toBeLessThanOrEqual(256 * 1024 + 16 * 1024);
    stream.resume();
    const skipped = await stream.nextOf('stream.skipped', () => true, 20_000);
    expect((skipped.data as { lines: number }).lines).toBeGreaterThan(0);
    const last = await stream.nextOf('device.console', (d) => d.data === 'last line', 20_000);
    expect(last.data).toEqual({ identifier, data: 'last line' });
    // Far less than was sent reached the reader, and the stream is still open.
    expect(stream.received).toBeLessThan((sent * 8000) / 2);
    expect(stream.isEnded).toBe(false);
  }, 60_000);

  it('limits the open streams of a user across instances (429), and counts a closed one out', async () => {
    const first = await open(admin);
    const second = await open(admin, '', urlB);
    const third = await open(admin);
    for (const s of [first, second, third]) expect(s.status).toBe(200);
    const refused = await open(admin, '', urlB);
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBe('5');
    expect(await refused.json()).toEqual(
      detail('too many event streams open (at most 3 per user); close one and try again'),
    );
    // Another user is not affected.
    expect((await open(viewer)).status).toBe(200);
    second.close();
    const again = await eventually(
      async () => {
        const next = await open(admin);
        if (next.status !== 200) next.close();
        return next;
      },
      (next) => next.status === 200,
    );
    expect(again.status).toBe(200);
  });

  it("answers the contract's errors before any stream opens", async () => {
    const identifier = await newDevice();
    const cases: [EventStreamClient, number, unknown][] = [
      [await open({}), 401, UNAUTHORIZED],
      [await open(outsider), 404, NOT_FOUND],
      [
        await EventStreamClient.open(`${urlA}/api/orgs/${org}/products/nope/events`, admin.auth),
        404,
        NOT_FOUND,
      ],
      [await open(admin, '?device=no-such-device'), 404, NOT_FOUND],
      [
        await open(admin, '?device='),
        422,
        fieldError('device', 'must be a device identifier (1 to 255 characters)'),
      ],
      [
        await open(admin, `?device=${identifier}&device=x`),
        422,
        fieldError('device', 'must be a single string'),
      ],
      [await open(admin, '?since=1'), 422, fieldError('since', 'is not a known parameter')],
    ];
    for (const [stream, status, body] of cases) {
      expect(stream.status).toBe(status);
      expect(stream.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(await stream.json()).toEqual(body);
    }
    // A device of another product of the same organization is not this product's.
    const otherProduct = await a.fixtures.product(admin, org);
    const elsewhere = `elsewhere-${randomBytes(3).toString('hex')}`;
    await a.fixtures.device(admin, org, otherProduct, elsewhere);
    const wrong = await open(admin, `?device=${elsewhere}`);
    expect([wrong.status, await wrong.json()]).toEqual([404, NOT_FOUND]);
  });

  it('ends the stream when its browser session is signed out, on every instance', async () => {
    const signIn = await a
      .http()
      .post('/api/session')
      .send({ email: viewer.user.email, password: PASSWORD })
      .expect(201);
    const secret = /fleethub_session=([^;]*);/.exec(
      (signIn.headers['set-cookie'] as unknown as string[])[0],
    )![1];
    const cookie = { Cookie: `fleethub_session=${secret}` };
    const onA = await open(cookie);
    const onB = await open(cookie, '', urlB);
    expect([onA.status, onB.status]).toEqual([200, 200]);
    await a
      .http()
      .delete('/api/session')
      .set(cookie)
      .set('X-CSRF-Token', signIn.body.data.csrf_token as string)
      .expect(204);
    await Promise.all([onA.ended, onB.ended]);
    expect((await open(cookie)).status).toBe(401);
  });

  it('ends the stream when its token is revoked, or when its user leaves the organization', async () => {
    const member = await a.fixtures.user();
    await a.fixtures.addMember(org, member, 'view');
    const token = await a.http().post('/api/users/me/tokens').set(member.auth).send({}).expect(201);
    const byToken = await open({ Authorization: `Bearer ${token.body.data.token as string}` }, '', urlB);
    const byMembership = await open(member);
    expect([byToken.status, byMembership.status]).toEqual([200, 200]);
    await a
      .http()
      .delete(`/api/users/me/tokens/${token.body.data.id as string}`)
      .set(member.auth)
      .expect(204);
    await byToken.ended;
    expect(byMembership.isEnded).toBe(false);
    await a.http().delete(`/api/orgs/${org}/users/${member.user.email}`).set(admin.auth).expect(204);
    // Checked every `revalidateMs` (400 ms here).
    await byMembership.ended;
  });

  it('is not cut by the request timeout, and keeps itself alive with comments', async () => {
    const stream = await open(admin);
    await new Promise((resolve) => setTimeout(resolve, 3600));
    expect(stream.isEnded).toBe(false);
    expect(stream.comments).toBeGreaterThanOrEqual(3);
  });

  it('ends every stream when the instance starts its shutdown drain, without waiting for the readers', async () => {
    const c = await createTestApp({}, { databaseUrl: a.databaseUrl });
    try {
      const { url } = await listenOnLoopback(c);
      const reading = await open(admin, '', url);
      const stalled = await open(viewer, '', url);
      stalled.pause();
      expect([reading.status, stalled.status]).toEqual([200, 200]);
      const started = Date.now();
      c.app.get(ShutdownState).startDraining(0);
      await reading.ended;
      expect(Date.now() - started).toBeLessThan(1000);
      const refused = await open(admin, '', url);
      expect(refused.status).toBe(503);
      await eventually(
        () => c.app.get(EventStreamsService).openStreams.length,
        (n) => n === 0,
        3000,
      );
    } finally {
      await c.close();
    }
  });

  it('publishes nothing on the bus for a product nobody listens to', async () => {
    const quiet = await a.fixtures.product(admin, org);
    const identifier = `quiet-${randomBytes(3).toString('hex')}`;
    await a.fixtures.device(admin, org, quiet, identifier);
    const liveB = b.app.get(LiveEvents);
    const [{ id }] = await b.db.query<{ id: string }[]>(`SELECT id FROM products WHERE name = $1`, [quiet]);
    expect(liveB.wantsProduct(id)).toBe(false);
    const stream = await open(admin);
    // The listened product is known on B at once (the stream opens once its interest is published).
    const [{ id: listened }] = await b.db.query<{ id: string }[]>(`SELECT id FROM products WHERE name = $1`, [
      product,
    ]);
    await eventually(
      () => liveB.wantsProduct(listened),
      (wanted) => wanted,
      2000,
    );
    expect(liveB.wantsProduct(id)).toBe(false);
    stream.close();
    await eventually(
      () => liveB.wantsProduct(listened),
      (wanted) => !wanted,
      3000,
    );
  });
});
