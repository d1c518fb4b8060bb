import { ORCHESTRATOR_TIMING } from '../src/deployments/orchestrator/deployment-orchestrator.service';
import { DeviceAuthenticator } from '../src/device-auth/device-authenticator';
import { DeviceSocketClient, type Frame } from './support/device-socket-client';
import { eventually } from './support/eventually';
import { FakeAuthenticator } from './support/fake-authenticator';
import { type TestUser, unique } from './support/fixtures';
import { listenOnLoopback } from './support/listening-app';
import { createTestApp, type TestApp } from './support/test-app';
import { type ReceivedWebhook, WebhookReceiver } from './support/webhook-receiver';

/** Receivers listen on 127.0.0.1, allowed (over http) by this configuration; a 1 s connection debounce. */
const ENV = {
  FLEETHUB_WEBHOOK_HTTP_HOSTS: '127.0.0.1',
  FLEETHUB_WEBHOOK_ALLOW_CIDRS: '127.0.0.1/32',
  FLEETHUB_WEBHOOK_POLL_MS: '50',
  FLEETHUB_WEBHOOK_BACKOFF_BASE_MS: '40',
  FLEETHUB_WEBHOOK_BACKOFF_MAX_MS: '160',
  FLEETHUB_WEBHOOK_CONNECTION_DEBOUNCE_SEC: '1',
  FLEETHUB_RATE_LIMIT_API_PER_MIN: '0',
};
const DEBOUNCE_MS = 1000;
const TIMING = { sweepMs: 300, debounceMs: 20, onlineBatchMs: 20 };
const OLD_UUID = '11111111-2222-5333-8444-555555555555';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A simulated device over the gateway: its socket and the `update` frames it received. */
class Device {
  updates: Record<string, unknown>[] = [];
  client: DeviceSocketClient | null = null;

  constructor(readonly identifier: string) {}

  async connect(
    url: string,
    uuid = OLD_UUID,
    version = uuid === OLD_UUID ? '1.0.0' : '2.0.0',
  ): Promise<void> {
    const client = await DeviceSocketClient.connect(url, { 'x-test-device': this.identifier });
    this.client = client;
    client.ws.on('message', (data: Buffer) => {
      const frame = JSON.parse(data.toString('utf8')) as Frame;
      if (frame[2] === 'device' && frame[3] === 'update')
        this.updates.push(frame[4] as Record<string, unknown>);
    });
    const reply = await client.join('device', {
      nerves_fw_uuid: uuid,
      nerves_fw_product: 'p',
      nerves_fw_version: version,
      nerves_fw_platform: 'rpi4',
      nerves_fw_architecture: 'aarch64',
      device_api_version: '2.0.0',
      currently_downloading_uuid: null,
    });
    expect(reply[4]).toEqual({ status: 'ok', response: {} });
  }

  async disconnect(): Promise<void> {
    await this.client?.close();
    this.client = null;
  }

  async progress(value: number): Promise<void> {
    this.client!.push('device', 'fwup_progress', { value });
    await this.client!.heartbeat();
  }
}

describe('webhooks: live events (connections, update lifecycle, rollout end)', () => {
  const auth = new FakeAuthenticator();
  const authB = new FakeAuthenticator();
  let t: TestApp;
  let b: TestApp | null = null;
  let url: string;
  let urlB: string;
  let admin: TestUser;
  let org: string;
  let product: string;
  let newUuid: string;
  const receivers: WebhookReceiver[] = [];
  const devices: Device[] = [];

  beforeAll(async () => {
    t = await createTestApp(ENV, {
      overrides: [
        { provide: DeviceAuthenticator, useValue: auth },
        { provide: ORCHESTRATOR_TIMING, useValue: TIMING },
      ],
    });
    auth.db = t.db;
    url = (await listenOnLoopback(t)).url;
    admin = await t.fixtures.user();
    org = await t.fixtures.org(admin);
    product = await t.fixtures.product(admin, org);
    newUuid = (await t.fixtures.firmware(admin, org, product, { version: '2.0.0' })).uuid;
    // A second instance on the same database: devices move between the two.
    b = await createTestApp(ENV, {
      databaseUrl: t.databaseUrl,
      overrides: [
        { provide: DeviceAuthenticator, useValue: authB },
        { provide: ORCHESTRATOR_TIMING, useValue: TIMING },
      ],
    });
    authB.db = b.db;
    urlB = (await listenOnLoopback(b)).url;
  }, 60_000);

  afterAll(async () => {
    for (const device of devices) await device.disconnect().catch(() => undefined);
    await b?.close();
    await t?.close();
    await Promise.all(receivers.map((r) => r.close()));
  });

  async function receiver(eventTypes: string[]): Promise<WebhookReceiver> {
    const r = await new WebhookReceiver().start();
    receivers.push(r);
    await t
      .http()
      .post(`/api/orgs/${org}/webhooks`)
      .set(admin.auth)
      .send({ url: r.url(), event_types: eventTypes, product })
      .expect(201);
    return r;
  }

  const about = (r: WebhookReceiver, identifier: string): ReceivedWebhook[] =>
    r.received.filter((w) => w.json.subject === `device:${identifier}`);
  const typesAbout = (r: WebhookReceiver, identifier: string) => about(r, identifier).map((w) => w.json.type);

  describe('device.connected / device.disconnected (debounced)', () => {
    let r: WebhookReceiver;
    beforeAll(async () => {
      r = await receiver(['device.connected', 'device.disconnected']);
    });

    async function newDevice(): Promise<Device> {
      const device = new Device(await t.fixtures.device(admin, org, product, unique('conn-')));
      devices.push(device);
      return device;
    }

    /** Closes and opens the device's socket `times` times, as fast as it can (well inside the window). */
    async function flap(device: Device, times: number, endConnected: boolean): Promise<void> {
      for (let i = 0; i < times; i++) {
        await device.disconnect();
        if (i < times - 1 || endConnected) await device.connect(url);
      }
    }

    it('a connection is sent at once, a disconnection once the device stayed away for the window', async () => {
      const device = await newDevice();
      await device.connect(url);
      const connected = await eventually(
        async () => about(r, device.identifier),
        (list) => list.length >= 1,
      );
      expect(connected[0].json).toMatchObject({
        type: 'device.connected',
        version: 1,
        product,
        subject: `device:${device.identifier}`,
        data: {
          identifier: device.identifier,
          product,
          firmware_uuid: OLD_UUID,
          firmware_version: '1.0.0',
          connected_at: expect.stringMatching(/Z$/),
          actor: { type: 'system' },
        },
      });
      const wentAt = Date.now();
      await device.disconnect();
      const both = await eventually(
        async () => about(r, device.identifier),
        (list) => list.length >= 2,
      );
      expect(both[1].at - wentAt).toBeGreaterThanOrEqual(DEBOUNCE_MS - 100);
      expect(both[1].json).toMatchObject({
        type: 'device.disconnected',
        data: { identifier: device.identifier, disconnected_at: expect.stringMatching(/Z$/) },
      });
      await sleep(DEBOUNCE_MS + 300);
      expect(typesAbout(r, device.identifier)).toEqual(['device.connected', 'device.disconnected']);
    });

    it('20 reconnections inside the window send nothing when the device ends connected as it started', async () => {
      const device = await newDevice();
      await device.connect(url);
      await eventually(
        async () => about(r, device.identifier),
        (list) => list.length === 1,
      );
      await flap(device, 20, true);
      await sleep(DEBOUNCE_MS + 500);
      expect(typesAbout(r, device.identifier)).toEqual(['device.connected']);
    });

    it('20 reconnections ending disconnected send one disconnection (after one connection at most)', async () => {
      const device = await newDevice();
      await device.connect(url);
      await flap(device, 20, false);
      await eventually(
        async () =>
          r.ofType('device.disconnected').filter((w) => w.json.subject === `device:${device.identifier}`),
        (list) => list.length === 1,
      );
      await sleep(DEBOUNCE_MS + 500);
      expect(typesAbout(r, device.identifier)).toEqual(['device.connected', 'device.disconnected']);

      // It comes back: one connection, at once; it flaps and goes: one disconnection.
      await device.connect(url);
      await flap(device, 20, false);
      await sleep(DEBOUNCE_MS + 500);
      await eventually(
        async () => typesAbout(r, device.identifier),
        (types) => types.length === 4,
      );
      expect(typesAbout(r, device.identifier)).toEqual([
        'device.connected',
        'device.disconnected',
        'device.connected',
        'device.disconnected',
      ]);
    });

    it('a device moving between instances inside the window sends nothing; its disconnection is sent once', async () => {
      const device = await newDevice();
      await device.connect(url);
      await eventually(
        async () => about(r, device.identifier),
        (list) => list.length === 1,
      );
      for (let i = 0; i < 10; i++) {
        await device.disconnect();
        await device.connect(i % 2 === 0 ? urlB : url);
      }
      await sleep(DEBOUNCE_MS + 500);
      expect(typesAbout(r, device.identifier)).toEqual(['device.connected']);
      // Both instances sweep: the disconnection is judged by one of them, once.
      await device.disconnect();
      await eventually(
        async () => about(r, device.identifier),
        (list) => list.length === 2,
      );
      await sleep(DEBOUNCE_MS + 500);
      expect(typesAbout(r, device.identifier)).toEqual(['device.connected', 'device.disconnected']);
    });

    it('a disconnection pending when its instance stops is sent by another one (no timer in memory)', async () => {
      const device = await newDevice();
      await device.connect(urlB);
      await eventually(
        async () => about(r, device.identifier),
        (list) => list.length === 1,
      );
      await device.disconnect();
      await b!.close();
      b = null;
      await eventually(
        async () => about(r, device.identifier),
        (list) => list.length === 2,
      );
      await sleep(DEBOUNCE_MS + 300);
      expect(typesAbout(r, device.identifier)).toEqual(['device.connected', 'device.disconnected']);
    });

    it('the state sent is a row in PostgreSQL, judged and no longer pending', async () => {
      const device = await newDevice();
      await device.connect(url);
      await eventually(
        async () => about(r, device.identifier),
        (list) => list.length === 1,
      );
      const [row] = await t.db.query<{ sent_status: string; pending: boolean }[]>(
        `SELECT c.sent_status, c.pending FROM webhook_device_connections c JOIN devices d ON d.id = c.device_id
          WHERE d.identifier = $1`,
        [device.identifier],
      );
      expect(row).toEqual({ sent_status: 'connected', pending: false });
    });
  });

  describe('update lifecycle and deployment_group.finished', () => {
    it('started, 25/50/75 % once each, completed per device; finished once per release', async () => {
      const r = await receiver(['update.*', 'deployment_group.finished']);
      const tag = unique('live-');
      const ids = [unique('upd-'), unique('upd-')];
      await t.fixtures.devices(admin, org, product, ids, { tags: [tag] });
      const group = unique('group-');
      await t
        .http()
        .post(`/api/orgs/${org}/products/${product}/deployments`)
        .set(admin.auth)
        .send({ name: group, firmware: newUuid, is_active: false, conditions: { version: '', tags: [tag] } })
        .expect(201);
      const fleet = ids.map((id) => new Device(id));
      devices.push(...fleet);
      for (const device of fleet) await device.connect(url);
      await t
        .http()
        .patch(`/api/orgs/${org}/products/${product}/deployments/${group}`)
        .set(admin.auth)
        .send({ state: 'on' })
        .expect(200);
      await eventually(
        async () => fleet.filter((d) => d.updates.length > 0).length,
        (n) => n === fleet.length,
      );
      for (const device of fleet) {
        await eventually(
          async () => typesAbout(r, device.identifier),
          (types) => types.includes('update.started'),
        );
      }
      const [started] = about(r, fleet[0].identifier);
      expect(started.json).toMatchObject({
        type: 'update.started',
        version: 1,
        product,
        data: {
          identifier: fleet[0].identifier,
          product,
          firmware_uuid: newUuid,
          firmware_version: '2.0.0',
          deployment_group: group,
          release: 1,
          via: 'deployment_group',
          actor: { type: 'system' },
        },
      });

      // Reports that go back and forth and jump: each milestone is sent once, in order.
      for (const device of fleet) {
        for (const value of [10, 30, 20, 30, 55, 40, 60, 80, 100, 100]) await device.progress(value);
      }
      for (const device of fleet) {
        await eventually(
          async () => about(r, device.identifier).filter((w) => w.json.type === 'update.progress'),
          (list) => list.length >= 3,
          10_000,
        );
      }

      // The devices come back running the release: completed, then the rollout finished (once).
      for (const device of fleet) {
        await device.disconnect();
        await device.connect(url, newUuid);
      }
      await eventually(
        async () => r.ofType('deployment_group.finished'),
        (list) => list.length === 1,
        10_000,
      );
      // A rejoin or a sweep later checks again: still once for this release.
      await fleet[0].disconnect();
      await fleet[0].connect(url, newUuid);
      await sleep(1000);

      for (const device of fleet) {
        const lifecycle = about(r, device.identifier).map((w) =>
          w.json.type === 'update.progress' ? `progress ${String(w.json.data.percent)}` : w.json.type,
        );
        expect(lifecycle).toEqual([
          'update.started',
          'progress 25',
          'progress 50',
          'progress 75',
          'update.completed',
        ]);
      }
      const finished = r.ofType('deployment_group.finished');
      expect(finished).toHaveLength(1);
      await expectRelease2(r, group, fleet);
      expect(finished[0].json).toMatchObject({
        subject: `deployment_group:${product}/${group}`,
        product,
        data: {
          name: group,
          product,
          release: 1,
          firmware_uuid: newUuid,
          firmware_version: '2.0.0',
          devices: 2,
          actor: { type: 'system' },
        },
      });
    }, 60_000);

    /** A new release of the group: the devices update again, and the rollout finishes once more (release 2). */
    async function expectRelease2(r: WebhookReceiver, group: string, fleet: Device[]): Promise<void> {
      const v3 = (await t.fixtures.firmware(admin, org, product, { version: '3.0.0' })).uuid;
      for (const device of fleet) device.updates = [];
      await t
        .http()
        .patch(`/api/orgs/${org}/products/${product}/deployments/${group}`)
        .set(admin.auth)
        .send({ firmware: v3 })
        .expect(200);
      const sent = await eventually(
        async () => fleet.filter((d) => d.updates.length > 0).length,
        (n) => n === fleet.length,
        20_000,
      );
      expect(sent).toBe(fleet.length);
      for (const device of fleet) {
        await device.disconnect();
        await device.connect(url, v3, '3.0.0');
      }
      const finished = await eventually(
        async () => r.ofType('deployment_group.finished'),
        (list) => list.length === 2,
      );
      await sleep(500);
      expect(r.ofType('deployment_group.finished')).toHaveLength(2);
      expect(finished[1].json.data).toMatchObject({
        release: 2,
        firmware_uuid: v3,
        firmware_version: '3.0.0',
      });
      for (const device of fleet) {
        expect(typesAbout(r, device.identifier).slice(5)).toEqual(['update.started', 'update.completed']);
        expect(about(r, device.identifier)[5].json.data).toMatchObject({ release: 2, firmware_uuid: v3 });
      }
    }

    it('a manual upgrade: started and completed, via manual', async () => {
      const r = await receiver(['update.started', 'update.completed']);
      const device = new Device(await t.fixtures.device(admin, org, product, unique('man-')));
      devices.push(device);
      await device.connect(url);
      await t
        .http()
        .post(`/api/orgs/${org}/products/${product}/devices/${device.identifier}/upgrade`)
        .set(admin.auth)
        .send({ uuid: newUuid })
        .expect(204);
      await eventually(
        async () => typesAbout(r, device.identifier),
        (types) => types.length === 1,
      );
      await device.disconnect();
      await device.connect(url, newUuid);
      await eventually(
        async () => typesAbout(r, device.identifier),
        (types) => types.length === 2,
      );
      const events = about(r, device.identifier);
      expect(events.map((w) => w.json.type)).toEqual(['update.started', 'update.completed']);
      expect(events[1].json.data).toMatchObject({
        identifier: device.identifier,
        firmware_uuid: newUuid,
        firmware_version: '2.0.0',
        deployment_group: null,
        release: null,
        via: 'manual',
      });
    });
  });
});
