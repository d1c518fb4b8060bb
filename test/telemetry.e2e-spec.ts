import {
  DEVICE_EXTENSION_DEFAULTS,
  PRODUCT_EXTENSION_DEFAULTS,
} from '../src/common/extensions/extension-settings';
import { Logger } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { DeviceAuthenticator } from '../src/device-auth/device-authenticator';
import { DeviceReportsService } from '../src/telemetry/device-reports.service';
import { startOfUtcDay, TelemetryPartitions } from '../src/telemetry/telemetry-partitions';
import { partitionName } from '../src/telemetry/telemetry-partitions.repository';
import { DeviceSocketClient, type Frame } from './support/device-socket-client';
import { fieldError, NOT_FOUND } from './support/contract-bodies';
import { FakeAuthenticator } from './support/fake-authenticator';
import type { TestUser } from './support/fixtures';
import { orgScenario } from './support/scenario';
import type { TestApp } from './support/test-app';

const JOIN = {
  nerves_fw_uuid: '11111111-2222-5333-8444-555555555555',
  nerves_fw_product: 'gadget',
  nerves_fw_version: '1.0.0',
  nerves_fw_platform: 'rpi4',
  nerves_fw_architecture: 'aarch64',
  device_api_version: '2.3.0',
};
const ALL = {
  health: '0.0.1',
  geo: '0.0.1',
  logging: '0.0.1',
  network_identity: '0.0.1',
  local_shell: '0.0.1',
};
const DAY_MS = 86_400_000;

describe('device telemetry (extensions channel)', () => {
  const auth = new FakeAuthenticator();
  let t: TestApp;
  let admin: TestUser;
  let viewer: TestUser;
  let outsider: TestUser;
  let org: string;
  let url: string;
  const product = 'sensors';
  const plain = 'plain';
  const clients: DeviceSocketClient[] = [];

  beforeAll(async () => {
    ({ t, admin, org } = await orgScenario({
      env: { FLEETHUB_RATE_LIMIT_API_PER_MIN: '0' },
      app: { overrides: [{ provide: DeviceAuthenticator, useValue: auth }] },
    }));
    auth.db = t.db;
    viewer = await t.fixtures.user();
    await t.fixtures.addMember(org, viewer, 'view');
    outsider = await t.fixtures.user();
    await t.fixtures.org(outsider);
    await t.fixtures.product(admin, org, product);
    await t.fixtures.product(admin, org, plain);
    await t
      .http()
      .patch(`/api/orgs/${org}/products/${product}/extensions`)
      .set(admin.auth)
      .send({ health: true, geo: true, logging: 'true', local_shell: true })
      .expect(200);
    await t.app.listen(0, '127.0.0.1');
    url = `http://127.0.0.1:${(t.app.getHttpServer().address() as { port: number }).port}`;
  });

  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
  });

  afterAll(() => t.close());

  const devicePath = (identifier: string, p = product, o = org) =>
    `/api/orgs/${o}/products/${p}/devices/${identifier}`;

  /** The device's `GET .../health`, read as a viewer (200 expected). */
  const healthOf = (identifier: string) =>
    t
      .http()
      .get(`${devicePath(identifier)}/health`)
      .set(viewer.auth)
      .expect(200);

  async function newDevice(p = product): Promise<string> {
    const identifier = `tele-${randomBytes(4).toString('hex')}`;
    await t
      .http()
      .post(`/api/orgs/${org}/products/${p}/devices`)
      .set(admin.auth)
      .send({ identifier })
      .expect(201);
    return identifier;
  }

  /** A device joined on `device` and `extensions` (offering `versions`); the join reply's list. */
  async function joined(
    identifier: string,
    versions: Record<string, string> = ALL,
  ): Promise<{ client: DeviceSocketClient; offered: unknown }> {
    const client = await DeviceSocketClient.connect(url, { 'x-test-device': identifier });
    clients.push(client);
    expect((await client.join('device', JOIN))[4]).toEqual({ status: 'ok', response: {} });
    await client.next((f) => f[3] === 'extensions:get');
    const reply = await client.join('extensions', versions);
    expect((reply[4] as { status: string }).status).toBe('ok');
    return { client, offered: (reply[4] as { response: unknown }).response };
  }

  async function attach(client: DeviceSocketClient, key: string): Promise<void> {
    client.push('extensions', `${key}:attached`, {});
    await client.heartbeat();
  }

  /** Every frame sent is handled and every write queued is done. */
  async function settle(client: DeviceSocketClient): Promise<Frame> {
    const beat = await client.heartbeat();
    await t.app.get(DeviceReportsService).flush();
    return beat;
  }

  describe('negotiation', () => {
    it('attaches what the product enables, the device allows and the version supports; never local_shell', async () => {
      const { offered } = await joined(await newDevice());
      expect(offered).toEqual(['health', 'geo', 'logging', 'network_identity']);

      const { offered: versions } = await joined(await newDevice(), {
        health: '0.1.0',
        geo: 'not-a-version',
        logging: '0.0.9',
        network_identity: 42 as unknown as string,
      });
      expect(versions).toEqual(['logging']);
    });

    it("offers only network_identity on a product that kept NervesHub's defaults otherwise", async () => {
      const { offered } = await joined(await newDevice(plain));
      expect(offered).toEqual(['network_identity']);
      const res = await t
        .http()
        .get(`/api/orgs/${org}/products/${plain}/extensions`)
        .set(viewer.auth)
        .expect(200);
      expect(res.body.data).toEqual(PRODUCT_EXTENSION_DEFAULTS);
    });

    it('leaves out what the device opts out of, and answers its messages with the detach error', async () => {
      const identifier = await newDevice();
      const extensionsPath = `${devicePath(identifier)}/extensions`;
      const everything = {
        health: true,
        geo: true,
        local_shell: true,
        logging: true,
        network_identity: true,
      };
      await t.http().get(extensionsPath).set(viewer.auth).expect(200, { data: everything });
      const res = await t
        .http()
        .patch(extensionsPath)
        .set(admin.auth)
        .send({ logging: false, geo: 'false' })
        .expect(200);
      expect(res.body).toEqual({ data: { ...everything, logging: false, geo: false } });
      await t.http().get(extensionsPath).set(viewer.auth).expect(200, res.body);
      const device = await t.http().get(devicePath(identifier)).set(viewer.auth).expect(200);
      expect(device.body.data).not.toHaveProperty('extensions');
      const { client, offered } = await joined(identifier);
      expect(offered).toEqual(['health', 'network_identity']);
      const ref = client.push('extensions', 'logging:send', { level: 'info', message: 'hi' });
      expect((await client.next((f) => f[1] === ref))[4]).toEqual({ status: 'error', response: 'detach' });

      await t
        .http()
        .patch(extensionsPath)
        .set(admin.auth)
        .send({ extensions: { logging: true } })
        .expect(200, { data: { ...everything, geo: false } });
      const again = await joined(identifier);
      expect(again.offered).toEqual(['health', 'logging', 'network_identity']);
    });

    it('refuses extension settings that are not booleans of known extensions (422), changing nothing', async () => {
      const productPath = `/api/orgs/${org}/products/${plain}/extensions`;
      const identifier = await newDevice(plain);
      const extensionsPath = `${devicePath(identifier, plain)}/extensions`;
      const before = await Promise.all(
        [productPath, extensionsPath].map(async (path) => (await t.http().get(path).set(admin.auth)).body),
      );
      const bad: [object, string][] = [
        [{ shell: true }, 'shell'],
        [{ health: 'yes' }, 'health'],
        [{ extensions: ['health'] }, 'extensions'],
        [{ extensions: 'health' }, 'extensions'],
        [{ geo: true, nope: false }, 'nope'],
      ];
      for (const path of [productPath, extensionsPath]) {
        for (const [body, field] of bad) {
          const res = await t.http().patch(path).set(admin.auth).send(body).expect(422);
          expect(Object.keys(res.body.errors)).toEqual([field]);
        }
      }
      const after = await Promise.all(
        [productPath, extensionsPath].map(async (path) => (await t.http().get(path).set(admin.auth)).body),
      );
      expect(after).toEqual(before);
      await t.http().patch(productPath).set(viewer.auth).send({ health: true }).expect(403);
      await t.http().patch(extensionsPath).set(viewer.auth).send({ health: false }).expect(403);
      await t.http().get(extensionsPath).set(outsider.auth).expect(404);
      await t
        .http()
        .get(`${devicePath('no-such-device', plain)}/extensions`)
        .set(admin.auth)
        .expect(404);
      await t
        .http()
        .patch(`${devicePath('no-such-device', plain)}/extensions`)
        .set(admin.auth)
        .send({ health: false })
        .expect(404);
    });

    it('the device update takes no extension settings: a 422 pointing to the extensions route', async () => {
      const identifier = await newDevice(plain);
      for (const method of ['patch', 'put'] as const) {
        const http = t.http();
        const res = await http[method](devicePath(identifier, plain))
          .set(admin.auth)
          .send({ description: 'changed', extensions: { logging: false } })
          .expect(422);
        expect(res.body).toEqual({
          errors: { extensions: ['is not a device field: use PATCH .../devices/{identifier}/extensions'] },
        });
      }
      const device = await t.http().get(devicePath(identifier, plain)).set(admin.auth).expect(200);
      expect(device.body.data.description).not.toBe('changed');
      const [row] = await t.db.query(`SELECT extensions FROM devices WHERE identifier = $1`, [identifier]);
      expect(row.extensions).toEqual({});
    });

    it('concurrent opt-outs of different extensions all stay', async () => {
      const identifier = await newDevice(plain);
      const extensionsPath = `${devicePath(identifier, plain)}/extensions`;
      await Promise.all(
        ['health', 'geo', 'logging', 'local_shell'].map((key) =>
          t
            .http()
            .patch(extensionsPath)
            .set(admin.auth)
            .send({ [key]: false })
            .expect(200),
        ),
      );
      const res = await t.http().get(extensionsPath).set(admin.auth).expect(200);
      expect(res.body.data).toEqual({
        ...DEVICE_EXTENSION_DEFAULTS,
        health: false,
        geo: false,
        logging: false,
        local_shell: false,
      });
    });
  });

  describe('health and geo', () => {
    it('asks for a report on attach, stores the latest with its status and the metric history', async () => {
      const identifier = await newDevice();
      const { client } = await joined(identifier);
      const empty = await healthOf(identifier);
      expect(empty.body.data).toEqual({
        status: 'unknown',
        status_reasons: null,
        reported_at: null,
        report: null,
        location: null,
        location_updated_at: null,
      });
      client.push('extensions', 'health:attached', {});
      expect(await client.next((f) => f[3] === 'health:check')).toEqual([
        client.joinRefs.get('extensions'),
        null,
        'extensions',
        'health:check',
        {},
      ]);
      const value = {
        timestamp: '2026-11-27T08:00:00Z',
        metadata: { firmware: '1.0.0' },
        alarms: { 'Elixir.DiskFull': 'disk is full' },
        metrics: { cpu_temp: 51.5, mem_used_percent: 75, disk_used_percentage: 20, label: 'x' },
        checks: {},
        connectivity: {},
      };
      client.push('extensions', 'health:report', { value });
      client.push('extensions', 'health:report', { value: 'nope' });
      client.push('extensions', 'health:report', {});
      await settle(client);
      const res = await healthOf(identifier);
      expect(res.body.data).toMatchObject({
        status: 'warning',
        status_reasons: { warning: { mem_used_percent: { value: 75, threshold: 70 } }, unhealthy: {} },
        report: value,
        location: null,
      });
      expect(Date.now() - Date.parse(res.body.data.reported_at)).toBeLessThan(60_000);
      const history = await t
        .http()
        .get(`${devicePath(identifier)}/health/metrics`)
        .set(viewer.auth)
        .expect(200);
      expect(history.body.data.map((m: { key: string }) => m.key).sort()).toEqual([
        'cpu_temp',
        'disk_used_percentage',
        'mem_used_percent',
      ]);
      const temp = await t
        .http()
        .get(`${devicePath(identifier)}/health/metrics?key=cpu_temp&limit=1`)
        .set(viewer.auth)
        .expect(200);
      expect(temp.body.data).toEqual([{ reported_at: expect.any(String), key: 'cpu_temp', value: 51.5 }]);
    });

    it('asks for the location on attach and keeps the latest update (a location or an error)', async () => {
      const identifier = await newDevice();
      const { client } = await joined(identifier);
      client.push('extensions', 'geo:attached', {});
      await client.next((f) => f[3] === 'geo:location:request');
      client.push('extensions', 'geo:location:update', { source: 'geoip', latitude: 48.85, longitude: 2.35 });
      client.push('extensions', 'geo:location:update', { latitude: 'north' });
      client.push('extensions', 'geo:location:update', [1, 2]);
      await settle(client);
      let res = await healthOf(identifier);
      expect(res.body.data).toMatchObject({
        status: 'unknown',
        location: { source: 'geoip', latitude: 48.85, longitude: 2.35 },
      });
      client.push('extensions', 'geo:location:update', {
        error_code: 'timeout',
        error_description: 'no answer',
      });
      await settle(client);
      res = await healthOf(identifier);
      expect(res.body.data.location).toEqual({ error_code: 'timeout', error_description: 'no answer' });
    });

    it('ignores reports before `attached`', async () => {
      const identifier = await newDevice();
      const { client } = await joined(identifier);
      client.push('extensions', 'health:report', { value: { metrics: { cpu_temp: 1 } } });
      await settle(client);
      const res = await healthOf(identifier);
      expect(res.body.data.report).toBeNull();
      expect(client.pending()).toEqual([]);
    });
  });

  describe('fleet filters on the device list', () => {
    it('finds devices with an active alarm, a health status, a metric above or below a threshold', async () => {
      const fleet = 'fleet';
      await t.fixtures.product(admin, org, fleet);
      await t
        .http()
        .patch(`/api/orgs/${org}/products/${fleet}/extensions`)
        .set(admin.auth)
        .send({ health: true })
        .expect(200);
      const [hot, calm, silent] = [await newDevice(fleet), await newDevice(fleet), await newDevice(fleet)];
      const reports: [string, object][] = [
        [
          hot,
          { alarms: { 'Elixir.Overheat': 'too hot' }, metrics: { cpu_temp: 85, disk_used_percentage: 95 } },
        ],
        [calm, { alarms: {}, metrics: { cpu_temp: 40, disk_used_percentage: 10 } }],
      ];
      for (const [identifier, value] of reports) {
        const { client } = await joined(identifier);
        await attach(client, 'health');
        client.push('extensions', 'health:report', { value });
        await settle(client);
      }
      const list = async (filters: string) => {
        const res = await t
          .http()
          .get(`/api/orgs/${org}/products/${fleet}/devices?${filters}`)
          .set(viewer.auth)
          .expect(200);
        // The alarm filters' totals come from the counter rows, the others' from the rows: the same number.
        expect(res.body.pagination.total_entries).toBe(res.body.data.length);
        return (res.body.data as { identifier: string }[]).map((d) => d.identifier).sort();
      };
      expect(await list('filters[alarm_status]=with')).toEqual([hot]);
      expect(await list('filters[alarm_status]=without')).toEqual([calm, silent].sort());
      expect(await list('filters[health_status]=unhealthy')).toEqual([hot]);
      expect(await list('filters[health_status]=healthy')).toEqual([calm]);
      expect(await list('filters[health_status]=unknown')).toEqual([silent]);
      expect(await list('filters[metrics_key]=cpu_temp&filters[metrics_value]=70')).toEqual([hot]);
      expect(
        await list('filters[metrics_key]=cpu_temp&filters[metrics_operator]=lt&filters[metrics_value]=70'),
      ).toEqual([calm]);
      const bad: [string, string][] = [
        ['filters[alarm_status]=maybe', 'filters[alarm_status]'],
        ['filters[metrics_key]=label&filters[metrics_value]=1', 'filters[metrics_key]'],
        ['filters[metrics_key]=cpu_temp&filters[metrics_value]=hot', 'filters[metrics_value]'],
        ['filters[metrics_value]=1', 'filters[metrics_key]'],
        [
          'filters[metrics_key]=cpu_temp&filters[metrics_operator]=eq&filters[metrics_value]=1',
          'filters[metrics_operator]',
        ],
      ];
      for (const [query, field] of bad) {
        const res = await t
          .http()
          .get(`/api/orgs/${org}/products/${fleet}/devices?${query}`)
          .set(viewer.auth)
          .expect(422);
        expect(Object.keys(res.body.errors)).toEqual([field]);
      }
    });
  });

  describe('logs', () => {
    it('stores lines with level, time, message and metadata; newest first, filtered, by cursor', async () => {
      const identifier = await newDevice();
      const { client } = await joined(identifier);
      await attach(client, 'logging');
      const base = Date.now() - 60_000;
      const lines = [
        {
          level: 'info',
          message: 'boot complete',
          meta: { app: 'init' },
          timestamp: new Date(base).toISOString(),
        },
        { level: 'warn', message: 'wifi weak', meta: {}, timestamp: new Date(base + 1000).toISOString() },
        {
          level: 'error',
          message: 'WiFi association failed',
          timestamp: new Date(base + 2000).toISOString(),
        },
        // NervesHub's form: the time in meta, in microseconds, as a string.
        { level: 'debug', message: [104, 105], meta: { time: String((base + 3000) * 1000) } },
      ];
      for (const line of lines) client.push('extensions', 'logging:send', line);
      // Malformed: logged, ignored, never answered.
      const warned = jest.spyOn(Logger.prototype, 'warn');
      try {
        client.push('extensions', 'logging:send', { level: 'loud', message: 'x' });
        client.push('extensions', 'logging:send', { level: 'info', message: { a: 1 } });
        client.push('extensions', 'logging:send', 'text');
        await settle(client);
        expect(client.pending()).toEqual([]);
        const malformed = warned.mock.calls.filter(([, message]) => message === 'malformed report ignored');
        expect(malformed.map(([fields]) => fields)).toEqual([
          { device: identifier, extension: 'logging', problem: 'level' },
          { device: identifier, extension: 'logging', problem: 'message' },
          // A payload that is not an object reaches the channel as {} (phoenix-frames.ts).
          { device: identifier, extension: 'logging', problem: 'level' },
        ]);
      } finally {
        warned.mockRestore();
      }

      const logs = (query = '', user = viewer) =>
        t
          .http()
          .get(`${devicePath(identifier)}/logs${query}`)
          .set(user.auth)
          .expect(200);
      const all = await logs();
      expect(all.body).toEqual({
        data: [
          {
            timestamp: new Date(base + 3000).toISOString().replace('Z', '000Z'),
            level: 'debug',
            message: 'hi',
            meta: { time: String((base + 3000) * 1000) },
          },
          {
            timestamp: new Date(base + 2000).toISOString().replace('Z', '000Z'),
            level: 'error',
            message: 'WiFi association failed',
            meta: {},
          },
          {
            timestamp: new Date(base + 1000).toISOString().replace('Z', '000Z'),
            level: 'warning',
            message: 'wifi weak',
            meta: {},
          },
          {
            timestamp: new Date(base).toISOString().replace('Z', '000Z'),
            level: 'info',
            message: 'boot complete',
            meta: { app: 'init' },
          },
        ],
        pagination: { next_cursor: null },
      });
      const messages = (res: { body: { data: { message: string }[] } }) =>
        res.body.data.map((l) => l.message);
      expect(messages(await logs('?level=warning'))).toEqual(['WiFi association failed', 'wifi weak']);
      expect(messages(await logs('?search=WIFI'))).toEqual(['WiFi association failed', 'wifi weak']);
      expect(messages(await logs('?search=%25'))).toEqual([]);
      const from = encodeURIComponent(new Date(base + 1000).toISOString());
      const to = encodeURIComponent(new Date(base + 2000).toISOString());
      expect(messages(await logs(`?from=${from}&to=${to}`))).toEqual([
        'WiFi association failed',
        'wifi weak',
      ]);

      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page = await logs(`?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
        seen.push(...messages(page));
        cursor = page.body.pagination.next_cursor as string | null;
      } while (cursor);
      expect(seen).toEqual(['hi', 'WiFi association failed', 'wifi weak', 'boot complete']);
    });

    it('drops lines beyond the per-device rate limit (bursts of 10), and keeps the connection', async () => {
      const identifier = await newDevice();
      const { client } = await joined(identifier);
      await attach(client, 'logging');
      for (let i = 0; i < 30; i++)
        client.push('extensions', 'logging:send', { level: 'info', message: `line ${i}` });
      await settle(client);
      const res = await t
        .http()
        .get(`${devicePath(identifier)}/logs?limit=100`)
        .set(viewer.auth)
        .expect(200);
      expect(res.body.data.length).toBeGreaterThanOrEqual(10);
      expect(res.body.data.length).toBeLessThan(15);
      expect(res.body.data.at(-1).message).toBe('line 0');
      const metrics = await t.http().get('/metrics').expect(200);
      expect(metrics.text).toMatch(
        /fleethub_device_reports_dropped_total\{extension="logging",reason="rate_limited"\} \d+/,
      );
      expect(metrics.text).toMatch(/fleethub_device_reports_received_total\{extension="logging"\} \d+/);
    });

    it('answers 422 naming a bad parameter', async () => {
      const identifier = await newDevice();
      const cases: [string, string][] = [
        ['?level=loud', 'level'],
        ['?from=yesterday', 'from'],
        ['?limit=0', 'limit'],
        ['?limit=1001', 'limit'],
        ['?cursor=nope', 'cursor'],
        ['?color=red', 'color'],
        ['?from=2026-01-02&to=2026-01-01', 'to'],
      ];
      for (const [query, field] of cases) {
        const res = await t
          .http()
          .get(`${devicePath(identifier)}/logs${query}`)
          .set(viewer.auth)
          .expect(422);
        expect(Object.keys(res.body.errors)).toEqual([field]);
      }
    });

    it('drops whole partitions past retention; never deletes rows', async () => {
      const partitions = t.app.get(TelemetryPartitions);
      const old = await partitions.maintain(new Date(Date.now() - 10 * DAY_MS));
      expect(old.created.length).toBeGreaterThan(0);
      const identifier = await newDevice();
      const [{ id }] = await t.db.query<{ id: string }[]>(`SELECT id FROM devices WHERE identifier = $1`, [
        identifier,
      ]);
      await t.db.query(
        `INSERT INTO device_log_lines (device_id, logged_at, level, message) VALUES ($1, $2, 'info', 'old')`,
        [id, new Date(Date.now() - 9 * DAY_MS).toISOString()],
      );
      const now = await partitions.maintain();
      const nineDaysAgo = startOfUtcDay(new Date(Date.now() - 9 * DAY_MS));
      expect(now.dropped).toContain(partitionName('device_log_lines', nineDaysAgo));
      expect(now.dropped).toContain(partitionName('device_health_metrics', nineDaysAgo));
      expect(now.dropped).not.toContain(partitionName('device_log_lines', startOfUtcDay(new Date())));
      const [{ n }] = await t.db.query<{ n: string }[]>(
        `SELECT count(*) AS n FROM device_log_lines WHERE device_id = $1`,
        [id],
      );
      expect(n).toBe('0');
      // Today's and the next days' partitions are still there.
      expect((await partitions.maintain()).created).toEqual([]);
    });
  });

  describe('network identities', () => {
    it("lists every service's identities as NervesHub's JSON; iroh claims keep working", async () => {
      const identifier = await newDevice();
      const { client } = await joined(identifier);
      await attach(client, 'network_identity');
      await client.next((f) => f[3] === 'network_identity:request');
      const iroh = randomBytes(32).toString('hex');
      const wg = randomBytes(32).toString('base64');
      client.push('extensions', 'network_identity:report', {
        identities: [
          { service: 'iroh', identifier: iroh, details: { relay: 'https://relay.example' } },
          { service: 'wireguard', identifier: wg, instance: ' wg0 ', details: { ip: '10.0.0.2' } },
          { service: 'tailscale', identifier: 'nodekey:abc' },
          { service: 'zerotier', identifier: 'zt-1' },
          { service: 'netbird', identifier: '' },
          { service: 'netbird', identifier: 'nb', details: 'no' },
        ],
      });
      client.push('extensions', 'network_identity:report', { identities: 'nope' });
      await settle(client);
      await client.heartbeat();
      const list = (query = '', user = viewer) =>
        t
          .http()
          .get(`${devicePath(identifier)}/network_identities${query}`)
          .set(user.auth);
      const res = await list().expect(200);
      const stamp = expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/);
      expect(res.body.data).toEqual([
        {
          identifier: iroh,
          service: 'iroh',
          instance: 'default',
          source: 'device_reported',
          details: { relay: 'https://relay.example' },
          last_reported_at: stamp,
          inserted_at: stamp,
          updated_at: stamp,
        },
        {
          identifier: 'nodekey:abc',
          service: 'tailscale',
          instance: 'default',
          source: 'device_reported',
          details: {},
          last_reported_at: stamp,
          inserted_at: stamp,
          updated_at: stamp,
        },
        {
          identifier: wg,
          service: 'wireguard',
          instance: 'wg0',
          source: 'device_reported',
          details: { ip: '10.0.0.2' },
          last_reported_at: stamp,
          inserted_at: stamp,
          updated_at: stamp,
        },
      ]);
      expect(
        (await list('?service=wireguard').expect(200)).body.data.map((i: { service: string }) => i.service),
      ).toEqual(['wireguard']);
      expect((await list('?service=iroh&instance=other').expect(200)).body.data).toEqual([]);
      expect((await list('?service=zerotier').expect(422)).body).toEqual(
        fieldError('service', 'is invalid (one of: iroh, netbird, tailscale, wireguard)'),
      );

      // Another device reporting the same wireguard key is refused; this device's row is untouched.
      const other = await newDevice();
      const second = await joined(other);
      await attach(second.client, 'network_identity');
      second.client.push('extensions', 'network_identity:report', {
        identities: [{ service: 'wireguard', identifier: wg, instance: 'wg0' }],
      });
      await settle(second.client);
      expect(
        (
          await t
            .http()
            .get(`${devicePath(other)}/network_identities`)
            .set(viewer.auth)
            .expect(200)
        ).body.data,
      ).toEqual([]);

      // A rotated key moves the device's row for that instance.
      client.push('extensions', 'network_identity:report', {
        identities: [{ service: 'wireguard', identifier: 'rotated', instance: 'wg0' }],
      });
      await settle(client);
      const rotated = await list('?service=wireguard').expect(200);
      expect(rotated.body.data.map((i: { identifier: string }) => i.identifier)).toEqual(['rotated']);
    });
  });

  describe('access', () => {
    const routes = ['network_identities', 'logs', 'health', 'health/metrics'];

    it('answers the same 404 for an outsider, an unknown device or product, and a device of another product', async () => {
      const identifier = await newDevice();
      const elsewhere = await newDevice(plain);
      for (const route of routes) {
        await t
          .http()
          .get(`${devicePath(identifier)}/${route}`)
          .set(viewer.auth)
          .expect(200);
        const notFound = [
          t
            .http()
            .get(`${devicePath(identifier)}/${route}`)
            .set(outsider.auth),
          t
            .http()
            .get(`${devicePath('no-such-device')}/${route}`)
            .set(admin.auth),
          t
            .http()
            .get(`${devicePath(identifier, 'no-such-product')}/${route}`)
            .set(admin.auth),
          t
            .http()
            .get(`${devicePath(elsewhere)}/${route}`)
            .set(admin.auth),
        ];
        for (const request of notFound) expect((await request.expect(404)).body).toEqual(NOT_FOUND);
        await t
          .http()
          .get(`${devicePath(identifier)}/${route}`)
          .expect(401);
      }
    });
  });
});
