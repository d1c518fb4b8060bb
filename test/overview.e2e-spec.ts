import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Simulator } from '../src/cli/simulator';
import { ConnectionSampler } from '../src/overview/connection-sampler';
import { DeviceReportsService } from '../src/telemetry/device-reports.service';
import { EventStreamClient } from './support/event-stream-client';
import { eventually } from './support/eventually';
import type { TestUser } from './support/fixtures';
import { createTestApp, type TestApp } from './support/test-app';

type Overview = {
  devices: { total: number; connected: number; disconnected: number; not_seen: number };
  connected_history: {
    from: string;
    interval_seconds: number;
    points: { at: string; connected: number; total: number }[];
  };
  firmware: {
    versions: { version: string; devices: number }[];
    other_devices: number;
    other_versions: number;
    unknown: number;
  };
  rollouts: { deployment_group: string; updating: number; firmware_version: string | null }[];
  manual_updates: number;
  health_alarms: { devices: number; first: { identifier: string; alarm_count: number; status: string }[] };
};

const FIRMWARE = { platform: 'rpi4', architecture: 'aarch64' };

describe('GET .../products/{product}/overview (fleet overview)', () => {
  let t: TestApp;
  let url: string;
  let admin: TestUser;
  let viewer: TestUser;
  let org: string;
  const product = 'fleet';
  const simulators: Simulator[] = [];

  beforeAll(async () => {
    // Firmware links point at FLEETHUB_PUBLIC_URL: pick the port first (the simulated devices download).
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port: free } = probe.address() as AddressInfo;
        probe.close(() => resolve(free));
      });
    });
    url = `http://127.0.0.1:${port}`;
    t = await createTestApp({ FLEETHUB_RATE_LIMIT_API_PER_MIN: '0', FLEETHUB_PUBLIC_URL: url });
    await t.app.listen(port, '127.0.0.1');
    admin = await t.fixtures.user();
    viewer = await t.fixtures.user();
    org = await t.fixtures.org(admin);
    await t.fixtures.addMember(org, viewer, 'view');
    await t.fixtures.product(admin, org, product);
    await t.fixtures.product(admin, org, 'other');
  });
  afterAll(async () => {
    for (const simulator of simulators) await simulator.stop();
    await t?.close();
  });

  const overview = async (query = '') =>
    (await t.http().get(`/api/orgs/${org}/products/${product}/overview${query}`).set(viewer.auth).expect(200))
      .body.data as Overview;

  /** `total_entries` of the device list with these filters: what the overview must agree with. */
  const listed = async (filters: Record<string, string> = {}, p = product) => {
    const query = Object.entries(filters)
      .map(([name, value]) => `filters[${name}]=${encodeURIComponent(value)}`)
      .join('&');
    const res = await t
      .http()
      .get(`/api/orgs/${org}/products/${p}/devices?page_size=1&${query}`)
      .set(viewer.auth)
      .expect(200);
    return res.body.pagination.total_entries as number;
  };

  /** The counter rows against a count of the devices themselves, for every product. */
  const countersMatchDevices = async () => {
    const rows = await t.db.query<{ product_id: string; key: string; counted: string; kept: string }[]>(
      `WITH counted AS (
         SELECT product_id, 'c:' || connection_status AS key, count(*) AS n FROM devices GROUP BY 1, 2
         UNION ALL
         SELECT product_id, 'v:' || firmware_version, count(*) FROM devices
          WHERE firmware_version IS NOT NULL GROUP BY 1, 2
       ), kept AS (
         SELECT product_id, 'c:' || connection_status AS key, sum(total) AS n FROM product_connection_counts
          GROUP BY 1, 2 HAVING sum(total) <> 0
         UNION ALL
         SELECT product_id, 'v:' || firmware_version, sum(total) FROM product_firmware_counts
          GROUP BY 1, 2 HAVING sum(total) <> 0
       )
       SELECT COALESCE(c.product_id, k.product_id) AS product_id, COALESCE(c.key, k.key) AS key,
              c.n::text AS counted, k.n::text AS kept
         FROM counted c FULL JOIN kept k ON k.product_id = c.product_id AND k.key = c.key
        WHERE c.n IS DISTINCT FROM k.n`,
    );
    expect(rows).toEqual([]);
  };

  it('agrees with the device list as devices register, connect, report, update and leave', async () => {
    const registered = ['ov-api-1', 'ov-api-2', 'ov-api-3', 'ov-api-4'];
    await t.fixtures.devices(admin, org, product, registered, { tags: 'lab' });
    const firmware = await t.fixtures.firmware(admin, org, product, {
      version: '2.0.0',
      meta: { product, version: '2.0.0', ...FIRMWARE },
    });
    const secret = await t
      .http()
      .post(`/api/orgs/${org}/products/${product}/shared_secrets`)
      .set(admin.auth)
      .send({})
      .expect(201);
    const simulator = new Simulator({
      url,
      key: secret.body.data.key,
      secret: secret.body.data.secret,
      devices: 6,
      prefix: 'ov-sim-',
      // Updates stay in flight for the test's length.
      applyMs: 120_000,
      applyJitter: 0,
      firmware: { version: '1.0.0', ...FIRMWARE },
    });
    simulators.push(simulator);
    simulator.start(0);

    const connected = await eventually(overview, (o) => o.devices.connected === 6, 15_000);
    expect(connected.devices).toEqual({ total: 10, connected: 6, disconnected: 0, not_seen: 4 });
    expect(connected.devices.total).toBe(await listed());
    expect(connected.devices.connected).toBe(await listed({ connection: 'connected' }));
    expect(connected.devices.not_seen).toBe(await listed({ connection: 'not_seen' }));
    expect(connected.firmware).toEqual({
      versions: [{ version: '1.0.0', devices: 6 }],
      other_devices: 0,
      other_versions: 0,
      unknown: 4,
    });
    expect(connected.firmware.versions[0].devices).toBe(await listed({ firmware_version: '1.0.0' }));
    expect(connected.rollouts).toEqual([]);
    expect(connected.manual_updates).toBe(0);
    expect(connected.health_alarms).toEqual({ devices: 0, first: [] });

    // Health: two devices report alarms, one reports none.
    const ids = await t.db.query<{ id: string; org_id: string; identifier: string }[]>(
      `SELECT id, org_id, identifier FROM devices WHERE identifier = ANY($1) ORDER BY identifier`,
      [registered.slice(0, 3)],
    );
    const reports = t.app.get(DeviceReportsService);
    const alarms = [
      { 'Elixir.Overheat': 'hot' },
      { 'Elixir.Overheat': 'hot', 'Elixir.DiskFull': 'full' },
      {},
    ];
    ids.forEach((row, i) =>
      reports.healthReport(
        { deviceId: row.id, orgId: row.org_id, identifier: row.identifier },
        { value: { alarms: alarms[i], metrics: { cpu_temp: 50 } } },
      ),
    );
    await reports.flush();
    const reported = await overview();
    expect(reported.health_alarms.devices).toBe(2);
    expect(reported.health_alarms.devices).toBe(await listed({ alarm_status: 'with' }));
    expect(reported.health_alarms.first.map((a) => [a.identifier, a.alarm_count])).toEqual([
      ['ov-api-2', 2],
      ['ov-api-1', 1],
    ]);

    // A deployment group rolling out to two devices at a time; then a manual upgrade of another device.
    await t
      .http()
      .post(`/api/orgs/${org}/products/${product}/deployments`)
      .set(admin.auth)
      .send({
        name: 'stable',
        firmware: firmware.uuid,
        is_active: true,
        concurrent_updates: 2,
        conditions: { version: '', tags: [] },
      })
      .expect(201);
    const rolling = await eventually(
      overview,
      (o) => o.rollouts.length === 1 && o.rollouts[0].updating === 2,
      20_000,
    );
    expect(rolling.rollouts).toEqual([
      {
        deployment_group: 'stable',
        firmware_version: '2.0.0',
        release_number: 1,
        is_active: true,
        updating: 2,
        concurrent_updates: 2,
        paused_reason: null,
        paused_at: null,
      },
    ]);
    expect(rolling.manual_updates).toBe(0);
    const [idle] = await t.db.query<{ identifier: string }[]>(
      `SELECT identifier FROM devices d WHERE identifier LIKE 'ov-sim-%'
          AND NOT EXISTS (SELECT 1 FROM pending_updates pu WHERE pu.device_id = d.id)
        ORDER BY identifier LIMIT 1`,
    );
    await t
      .http()
      .post(`/api/devices/${idle.identifier}/upgrade`)
      .set(admin.auth)
      .send({ uuid: firmware.uuid })
      .expect(204);
    const both = await overview();
    expect(both.manual_updates).toBe(1);
    expect(both.rollouts[0].updating).toBe(2);

    // Devices leave, are moved, deleted and retagged: the counters stay exact.
    await simulator.stop();
    const gone = await eventually(overview, (o) => o.devices.connected === 0, 15_000);
    expect(gone.devices).toEqual({ total: 10, connected: 0, disconnected: 6, not_seen: 4 });
    expect(gone.devices.disconnected).toBe(await listed({ connection: 'disconnected' }));
    await t
      .http()
      .post(`/api/orgs/${org}/products/${product}/devices/ov-sim-0006/move`)
      .set(admin.auth)
      .send({ new_org_name: org, new_product_name: 'other' })
      .expect(200);
    await t
      .http()
      .delete(`/api/orgs/${org}/products/${product}/devices/ov-api-4`)
      .set(admin.auth)
      .expect(204);
    await t
      .http()
      .put(`/api/orgs/${org}/products/${product}/devices/ov-api-3`)
      .set(admin.auth)
      .send({ tags: 'lab,roof' })
      .expect(201); // NervesHub's PUT answers 201
    const after = await overview();
    expect(after.devices).toEqual({ total: 8, connected: 0, disconnected: 5, not_seen: 3 });
    expect(after.firmware.versions).toEqual([{ version: '1.0.0', devices: 5 }]);
    expect(await listed({}, 'other')).toBe(1);
    await countersMatchDevices();
  }, 90_000);

  it('samples connected devices once a minute, whichever instance asks, and answers the history', async () => {
    const sampler = t.app.get(ConnectionSampler);
    await t.db.query(`DELETE FROM product_connection_samples`);
    const written = await sampler.sample();
    expect(written).toBeGreaterThanOrEqual(1);
    // The same minute again (another instance, or this one): nothing more.
    expect(await sampler.sample()).toBe(0);
    const { total, connected } = (await overview()).devices;
    // Older samples (as if taken over the last two days): the range asked bounds the answer.
    await t.db.query(
      `INSERT INTO product_connection_samples (product_id, sampled_at, connected, total)
       SELECT p.id, date_trunc('minute', now()) - make_interval(mins => m), m % 7, 100
         FROM products p, generate_series(1, 2880) m WHERE p.name = $1`,
      [product],
    );
    const day = await overview();
    expect(day.connected_history.interval_seconds).toBe(240);
    expect(day.connected_history.points.length).toBeGreaterThan(350);
    expect(day.connected_history.points.length).toBeLessThanOrEqual(361);
    const hour = await overview('?hours=1');
    expect(hour.connected_history.interval_seconds).toBe(60);
    expect(hour.connected_history.points.length).toBeGreaterThanOrEqual(60);
    expect(hour.connected_history.points.length).toBeLessThanOrEqual(61);
    // The minute sampled just now is the last point (a minute of its own at this range).
    expect(hour.connected_history.points.at(-1)).toMatchObject({ connected, total });
    const times = hour.connected_history.points.map((p) => Date.parse(p.at));
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect(Date.parse(hour.connected_history.from)).toBeLessThanOrEqual(times[0]);
    // Past retention (7 days): deleted by the next sampling.
    await t.db.query(
      `INSERT INTO product_connection_samples (product_id, sampled_at, connected, total)
       SELECT id, now() - interval '8 days', 1, 1 FROM products WHERE name = $1`,
      [product],
    );
    await t.db.query(
      `DELETE FROM product_connection_samples WHERE sampled_at >= date_trunc('minute', now())`,
    );
    await sampler.sample();
    const [old] = await t.db.query<{ n: string }[]>(
      `SELECT count(*) AS n FROM product_connection_samples WHERE sampled_at < now() - interval '7 days'`,
    );
    expect(Number(old.n)).toBe(0);
  });

  it('follows the counters live: `product.overview` on streams that ask for it, at once and on changes', async () => {
    const watched = 'watched';
    await t.fixtures.product(admin, org, watched);
    await t.fixtures.devices(admin, org, watched, ['w-api-1']);
    const events = (query: string) =>
      EventStreamClient.open(`${url}/api/orgs/${org}/products/${watched}/events${query}`, viewer.auth);
    const plain = await events('');
    const live = await events('?overview=true');
    try {
      expect(live.status).toBe(200);
      const first = await live.nextOf('product.overview');
      const read = (
        await t.http().get(`/api/orgs/${org}/products/${watched}/overview`).set(viewer.auth).expect(200)
      ).body.data as Overview;
      expect(first.data).toEqual({
        devices: read.devices,
        firmware: read.firmware,
        rollouts: read.rollouts,
        manual_updates: read.manual_updates,
        health_alarms: { devices: read.health_alarms.devices },
      });
      expect(read.devices).toEqual({ total: 1, connected: 0, disconnected: 0, not_seen: 1 });

      const secret = await t
        .http()
        .post(`/api/orgs/${org}/products/${watched}/shared_secrets`)
        .set(admin.auth)
        .send({})
        .expect(201);
      const simulator = new Simulator({
        url,
        key: secret.body.data.key,
        secret: secret.body.data.secret,
        devices: 2,
        prefix: 'w-sim-',
        firmware: { version: '3.1.0', ...FIRMWARE },
      });
      simulators.push(simulator);
      simulator.start(0);
      const joined = await live.nextOf(
        'product.overview',
        (data) => (data.devices as Overview['devices']).connected === 2,
        15_000,
      );
      expect(joined.data).toMatchObject({
        devices: { total: 3, connected: 2, disconnected: 0, not_seen: 1 },
        firmware: { versions: [{ version: '3.1.0', devices: 2 }], unknown: 1 },
      });
      await simulator.stop();
      const left = await live.nextOf(
        'product.overview',
        (data) => (data.devices as Overview['devices']).connected === 0,
        15_000,
      );
      expect(left.data).toMatchObject({ devices: { total: 3, connected: 0, disconnected: 2, not_seen: 1 } });
      // The stream that did not ask carried the devices' events, and no overview.
      await plain.nextOf('device.connection', (data) => data.connection_status === 'disconnected');
      expect(plain.events.some((e) => e.event === 'product.overview')).toBe(false);

      const bad = await events('?overview=yes');
      expect(bad.status).toBe(422);
      expect(Object.keys(((await bad.json()) as { errors: object }).errors)).toEqual(['overview']);
    } finally {
      plain.close();
      live.close();
    }
  }, 60_000);

  it('keeps the count of devices with health alarms as counter rows, exact through reports, moves and bulk changes', async () => {
    const [home, away] = ['alarms', 'alarms-away'];
    await t.fixtures.product(admin, org, home);
    await t.fixtures.product(admin, org, away);
    await t.fixtures.devices(admin, org, home, ['al-1', 'al-2', 'al-5', 'al-6']);
    await t.fixtures.devices(admin, org, home, ['al-3', 'al-4'], { tags: 'go' });
    const reports = t.app.get(DeviceReportsService);
    const report = async (alarmsOf: Record<string, Record<string, string>>) => {
      const rows = await t.db.query<{ id: string; org_id: string; identifier: string }[]>(
        `SELECT id, org_id, identifier FROM devices WHERE identifier = ANY($1)`,
        [Object.keys(alarmsOf)],
      );
      for (const row of rows) {
        reports.healthReport(
          { deviceId: row.id, orgId: row.org_id, identifier: row.identifier },
          { value: { alarms: alarmsOf[row.identifier], metrics: { cpu_temp: 40 } } },
        );
      }
      await reports.flush();
    };
    /** The counter rows against a count over the devices' health, for every product; answers home's and away's. */
    const alarmCountersExact = async () => {
      const differ = await t.db.query<{ product_id: string; counted: string | null; kept: string | null }[]>(
        `WITH counted AS (
           SELECT d.product_id, count(*) AS n FROM device_health h JOIN devices d ON d.id = h.device_id
            WHERE h.alarm_count > 0 GROUP BY 1
         ), kept AS (
           SELECT product_id, sum(total) AS n FROM product_alarm_counts GROUP BY 1 HAVING sum(total) <> 0
         )
         SELECT COALESCE(c.product_id, k.product_id) AS product_id, c.n::text AS counted, k.n::text AS kept
           FROM counted c FULL JOIN kept k ON k.product_id = c.product_id
          WHERE c.n IS DISTINCT FROM k.n`,
      );
      expect(differ).toEqual([]);
      const shown = async (p: string) =>
        (await t.http().get(`/api/orgs/${org}/products/${p}/overview`).set(viewer.auth).expect(200)).body.data
          .health_alarms.devices as number;
      const counts = [await shown(home), await shown(away)];
      expect(counts).toEqual([
        await listed({ alarm_status: 'with' }, home),
        await listed({ alarm_status: 'with' }, away),
      ]);
      return counts;
    };

    // Raised (first reports: inserts), then cleared and raised again (updates), in one batch each.
    await report({ 'al-1': { 'Elixir.Hot': 'hot' }, 'al-2': { 'Elixir.Hot': 'hot' }, 'al-5': {} });
    expect(await alarmCountersExact()).toEqual([2, 0]);
    await report({
      'al-1': {},
      'al-3': { 'Elixir.Full': 'full' },
      'al-4': { 'Elixir.Full': 'full', 'Elixir.Hot': 'hot' },
      'al-5': { 'Elixir.Hot': 'hot' },
    });
    expect(await alarmCountersExact()).toEqual([4, 0]);
    // Another report that keeps the alarms on changes nothing.
    await report({ 'al-2': { 'Elixir.Hot': 'still hot' } });
    expect(await alarmCountersExact()).toEqual([4, 0]);

    // A device moved alone, then a filter's devices in bulk: their alarms go with them.
    await t
      .http()
      .post(`/api/orgs/${org}/products/${home}/devices/al-2/move`)
      .set(admin.auth)
      .send({ new_org_name: org, new_product_name: away })
      .expect(200);
    expect(await alarmCountersExact()).toEqual([3, 1]);
    const bulk = (p: string, body: object) =>
      t.http().post(`/api/orgs/${org}/products/${p}/devices/bulk`).set(admin.auth).send(body).expect(200);
    await bulk(home, { action: 'move', filters: { tags: 'go' }, new_org_name: org, new_product_name: away });
    expect(await alarmCountersExact()).toEqual([1, 3]);
    // Bulk changes that move nothing leave the alarms where they are.
    await bulk(away, { action: 'add_tags', filters: {}, tags: 'checked' });
    await bulk(away, { action: 'disable_updates', identifiers: ['al-2', 'al-3'] });
    expect(await alarmCountersExact()).toEqual([1, 3]);
    // Back in bulk by identifiers.
    await bulk(away, { action: 'move', identifiers: ['al-4'], new_org_name: org, new_product_name: home });
    expect(await alarmCountersExact()).toEqual([2, 2]);

    // A deleted device takes its alarm (its health row goes by cascade); a cleared report, its own.
    await t.http().delete(`/api/orgs/${org}/products/${away}/devices/al-3`).set(admin.auth).expect(204);
    expect(await alarmCountersExact()).toEqual([2, 1]);
    await t.http().delete(`/api/orgs/${org}/products/${home}/devices/al-6`).set(admin.auth).expect(204);
    await report({ 'al-4': {} });
    expect(await alarmCountersExact()).toEqual([1, 1]);
    // A health row deleted on its own (the device stays) takes its alarm too.
    await t.db.query(
      `DELETE FROM device_health WHERE device_id = (SELECT id FROM devices WHERE identifier = 'al-5')`,
    );
    expect(await alarmCountersExact()).toEqual([0, 1]);
  });

  it('refuses a bad range or an unknown parameter with a 422 naming it', async () => {
    const path = `/api/orgs/${org}/products/${product}/overview`;
    for (const [query, field] of [
      ['hours=0', 'hours'],
      ['hours=169', 'hours'],
      ['hours=1.5', 'hours'],
      ['hours=abc', 'hours'],
      ['hours=1&hours=2', 'hours'],
      ['days=2', 'days'],
    ]) {
      const res = await t.http().get(`${path}?${query}`).set(viewer.auth).expect(422);
      expect(Object.keys(res.body.errors)).toEqual([field]);
    }
    await t.http().get(`/api/orgs/${org}/products/nope/overview`).set(viewer.auth).expect(404);
  });
});
