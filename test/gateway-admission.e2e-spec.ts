import { randomBytes } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { type AuthenticatedDevice, DeviceAuthenticator } from '../src/device-auth/device-authenticator';
import { Admission } from '../src/gateway/admission';
import { CONNECT_CONCURRENCY, HANDSHAKE_MAX_WAIT_MS } from '../src/gateway/device-gateway';
import { DeviceLinkService } from '../src/gateway/device-link.service';
import { DeviceSocketClient } from './support/device-socket-client';
import type { TestUser } from './support/fixtures';
import { listenOnLoopback } from './support/listening-app';
import type { TestApp } from './support/test-app';
import { orgScenario } from './support/scenario';

/**
 * Authenticates `x-test-device: <identifier>` against the database. Identifiers in `held` wait inside
 * `authenticate` (holding their admission slot) until released.
 */
class GatedAuthenticator extends DeviceAuthenticator {
  t: TestApp | null = null;
  readonly held = new Set<string>();
  readonly waiting = new Map<string, () => void>();
  readonly authenticated: string[] = [];

  async authenticate(headers: IncomingHttpHeaders): Promise<AuthenticatedDevice | null> {
    const identifier = headers['x-test-device'];
    if (typeof identifier !== 'string' || !this.t) return null;
    this.authenticated.push(identifier);
    if (this.held.has(identifier))
      await new Promise<void>((resolve) => this.waiting.set(identifier, resolve));
    const [row] = await this.t.db.query<{ id: string; product_id: string; org_id: string }[]>(
      `SELECT id, product_id, org_id FROM devices WHERE identifier = $1`,
      [identifier],
    );
    if (!row) return null;
    return { deviceId: row.id, identifier, productId: row.product_id, orgId: row.org_id, registered: false };
  }

  release(identifier: string): void {
    this.held.delete(identifier);
    this.waiting.get(identifier)?.();
    this.waiting.delete(identifier);
  }
}

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('device gateway under load: connection admission', () => {
  const auth = new GatedAuthenticator();
  /** The admission's clock: moved by hand, so that a wait past the deadline takes no real time. */
  let clock = 0;
  const admission = new Admission(CONNECT_CONCURRENCY, {
    maxHandshakeWaitMs: HANDSHAKE_MAX_WAIT_MS,
    now: () => clock,
  });
  let t: TestApp;
  let url: string;
  let admin: TestUser;
  let org: string;
  const clients: DeviceSocketClient[] = [];

  beforeAll(async () => {
    ({ t, admin, org } = await orgScenario({
      app: {
        overrides: [
          { provide: DeviceAuthenticator, useValue: auth },
          { provide: Admission, useValue: admission },
        ],
      },
      product: 'gadget',
    }));
    auth.t = t;
    ({ url } = await listenOnLoopback(t));
  });

  afterEach(async () => {
    for (const identifier of [...auth.waiting.keys()]) auth.release(identifier);
    await Promise.all(clients.splice(0).map((c) => c.close()));
  });

  afterAll(async () => {
    await t?.close();
  });

  async function newDevice(): Promise<string> {
    const identifier = `adm-${randomBytes(4).toString('hex')}`;
    await t
      .http()
      .post(`/api/orgs/${org}/products/gadget/devices`)
      .set(admin.auth)
      .send({ identifier })
      .expect(201);
    return identifier;
  }

  const connect = (identifier: string) =>
    DeviceSocketClient.connect(url, { 'x-test-device': identifier }).then((client) => {
      clients.push(client);
      return client;
    });

  /** Every admission slot taken by a handshake held in `authenticate`; resolves to their sockets, once released. */
  async function fillSlots(): Promise<{ identifiers: string[]; sockets: Promise<DeviceSocketClient>[] }> {
    const identifiers = await Promise.all(Array.from({ length: CONNECT_CONCURRENCY }, newDevice));
    for (const identifier of identifiers) auth.held.add(identifier);
    const sockets = identifiers.map(connect);
    await until(() => auth.waiting.size === CONNECT_CONCURRENCY, 'the held handshakes');
    expect(admission.active).toBe(CONNECT_CONCURRENCY);
    return { identifiers, sockets };
  }

  it('opens a pool connection per admission slot at start, not under the first storm', async () => {
    const metrics = await t.http().get('/metrics').expect(200);
    const open = Number(/^fleethub_db_pool_connections_total (\d+)$/m.exec(metrics.text)?.[1]);
    expect(open).toBeGreaterThanOrEqual(CONNECT_CONCURRENCY);
  });

  it('answers a handshake whose deadline passed while it waited 503 with Retry-After, without serving it', async () => {
    const held = await fillSlots();
    const late = await newDevice();
    const answer = DeviceSocketClient.refused(url, { 'x-test-device': late });
    await until(() => admission.queued('handshake') === 1, 'the queued handshake');
    clock += HANDSHAKE_MAX_WAIT_MS + 1;
    for (const identifier of held.identifiers) auth.release(identifier);

    const res = await answer;
    expect(res.status).toBe(503);
    expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(res.headers['nh-connection-error-reason']).toBe('the server is busy; retry later');
    expect(res.body).toBe('the server is busy; retry later');
    expect(new Date(res.headers.date!).getTime()).toBeGreaterThan(Date.now() - 60_000);
    expect(auth.authenticated).not.toContain(late);
    // The handshakes that got their turn in time were served.
    for (const socket of held.sockets)
      expect((await (await socket).heartbeat())[4]).toMatchObject({ status: 'ok' });

    // The device's next attempt (a new handshake, with a new deadline) gets in.
    const client = await connect(late);
    expect((await client.join('device', {}))[4]).toEqual({ status: 'ok', response: {} });
    const metrics = await t.http().get('/metrics').expect(200);
    expect(metrics.text).toMatch(/^fleethub_device_handshakes_refused_total\{reason="late"\} 1$/m);
  });

  it('serves a handshake that waited within its deadline', async () => {
    const held = await fillSlots();
    const patient = await newDevice();
    const socket = connect(patient);
    await until(() => admission.queued('handshake') === 1, 'the queued handshake');
    clock += HANDSHAKE_MAX_WAIT_MS - 1;
    for (const identifier of held.identifiers) auth.release(identifier);
    expect((await (await socket).heartbeat())[4]).toMatchObject({ status: 'ok' });
    expect(auth.authenticated).toContain(patient);
  });

  it('gives a freed slot to the join of a connected device before the handshakes waiting for one', async () => {
    const device = await connect(await newDevice());
    const held = await fillSlots();
    const waiting = await Promise.all(Array.from({ length: 3 }, newDevice));
    for (const identifier of waiting) auth.held.add(identifier);
    const queued = waiting.map(connect);
    await until(() => admission.queued('handshake') === 3, 'the queued handshakes');
    const reply = device.join('device', {});
    await until(() => admission.queued('connected') === 1, 'the queued join');

    // One slot frees: the join gets it (the handshakes queued before it would hold it in `authenticate`).
    auth.release(held.identifiers[0]);
    expect((await reply)[4]).toEqual({ status: 'ok', response: {} });
    await until(() => auth.waiting.has(waiting[0]), 'the first queued handshake');
    expect(admission.queued('handshake')).toBe(2);

    for (const identifier of [...held.identifiers, ...waiting]) auth.release(identifier);
    await Promise.all([...held.sockets, ...queued]);
  });

  it('defers an identity report while connection work waits, answering the frames behind it meanwhile', async () => {
    const identifier = await newDevice();
    const device = await connect(identifier);
    await device.join('device', {});
    await device.join('extensions', { network_identity: '0.0.1' });
    device.push('extensions', 'network_identity:attached', {});
    await device.next((f) => f[3] === 'network_identity:request');
    const held = await fillSlots();
    const queued = await newDevice();
    const waiting = connect(queued);
    await until(() => admission.queued('handshake') === 1, 'the queued handshake');

    const endpoint = randomBytes(32).toString('hex');
    device.push('extensions', 'network_identity:report', {
      identities: [{ service: 'iroh', identifier: endpoint, details: {} }],
    });
    expect((await device.heartbeat())[4]).toEqual({ status: 'ok', response: {} });
    expect(admission.queued('background')).toBe(1);
    const endpointStatus = async () =>
      (await t.http().get(`/api/orgs/${org}/iroh_endpoints/${endpoint}`).set(admin.auth)).status;
    expect(await endpointStatus()).toBe(404);

    for (const identifier of held.identifiers) auth.release(identifier);
    await Promise.all([...held.sockets, waiting]);
    await until(() => admission.queued() === 0 && admission.active === 0, 'the background work');
    expect(await endpointStatus()).toBe(200);
  });

  it('answers a join whose statement failed with an error, so that the device joins again', async () => {
    const device = await connect(await newDevice());
    const failing = jest
      .spyOn(t.app.get(DeviceLinkService), 'joinDevice')
      .mockRejectedValueOnce(new Error('timeout exceeded when trying to connect'));
    try {
      expect((await device.join('device', {}))[4]).toEqual({
        status: 'error',
        response: { error: 'could not connect' },
      });
      expect((await device.join('device', {}))[4]).toEqual({ status: 'ok', response: {} });
    } finally {
      failing.mockRestore();
    }
  });
});
