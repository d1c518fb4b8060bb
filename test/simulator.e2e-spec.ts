import { mkdtemp, rm } from 'node:fs/promises';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { computeMetaUuid } from '../src/firmware/fwup';
import { type SimulatedDevice, Simulator, simulatedIrohKey, type UpdateOutcome } from '../src/cli/simulator';
import { failsUpdate } from '../src/cli/simulated-update';
import { buildFw } from './support/fw-builder';
import { DeviceSocketClient } from './support/device-socket-client';
import type { TestUser } from './support/fixtures';
import { createTestApp, type TestApp } from './support/test-app';
import { orgScenario } from './support/scenario';
import { eventually } from './support/eventually';

/** The next `count` update outcomes of a device, in order. */
function outcomes(device: SimulatedDevice, count = 1): Promise<UpdateOutcome[]> {
  const seen: UpdateOutcome[] = [];
  return new Promise((resolve) => {
    device.onUpdateEnd = (outcome) => {
      seen.push(outcome);
      if (seen.length === count) {
        device.onUpdateEnd = null;
        resolve(seen);
      }
    };
  });
}

/** The whole device path with the real NH1 authenticator: the simulator against a listening server. */
describe('simulator against the gateway (real NH1 authentication)', () => {
  let t: TestApp;
  let url: string;
  let admin: TestUser;
  let org: string;
  let dir: string;
  let simulator: Simulator | null = null;
  const product = 'simulated';

  beforeAll(async () => {
    // Firmware links point at FLEETHUB_PUBLIC_URL: pick the port first.
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port: free } = probe.address() as AddressInfo;
        probe.close(() => resolve(free));
      });
    });
    url = `http://127.0.0.1:${port}`;
    ({ t, admin, org } = await orgScenario({ env: { FLEETHUB_PUBLIC_URL: url }, product }));
    await t.app.listen(port, '127.0.0.1');
    dir = await mkdtemp(join(tmpdir(), 'fleethub-sim-'));
  });

  afterEach(async () => {
    await simulator?.stop();
    simulator = null;
  });

  afterAll(async () => {
    await t.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('registers devices, delivers console code and an update, claims iroh endpoints', async () => {
    const key = await t.fixtures.signingKey(org, 'k');
    const built = await buildFw(join(dir, 'fw.fw'), {
      signWith: key.privateKey,
      meta: { product, version: '3.1.4' },
    });
    const uuid = computeMetaUuid(built.metaConf);
    await t
      .http()
      .post(`/api/orgs/${org}/products/${product}/firmwares`)
      .set(admin.auth)
      .attach('firmware', built.path)
      .expect(201);
    const secret = await t
      .http()
      .post(`/api/orgs/${org}/products/${product}/shared_secrets`)
      .set(admin.auth)
      .send({})
      .expect(201);
    simulator = new Simulator({
      url,
      key: secret.body.data.key,
      secret: secret.body.data.secret,
      devices: 3,
      prefix: 'simtest-',
    });
    simulator.start(0);
    const sim = simulator;
    await eventually(
      async () => sim.connected,
      (n) => n === 3,
    );
    expect(sim.connected).toBe(3);
    const list = await t
      .http()
      .get(`/api/orgs/${org}/products/${product}/devices`)
      .set(admin.auth)
      .expect(200);
    expect(list.body.data.map((d: { identifier: string }) => d.identifier)).toEqual([
      'simtest-0001',
      'simtest-0002',
      'simtest-0003',
    ]);
    expect(list.body.data.every((d: { online: boolean }) => d.online)).toBe(true);

    // Console: the simulator's remote IEx prompts, echoes what it is typed and evaluates the line.
    await eventually(
      () =>
        t
          .http()
          .post(`/api/devices/simtest-0002/code`)
          .set(admin.auth)
          .send({ code: 'Nerves.Runtime.serial_number()' }),
      (res) => res.status === 204,
    );
    const expected = 'iex(1)> Nerves.Runtime.serial_number()\r\n"simtest-0002"\r\niex(2)> ';
    const output = await eventually(
      async () => (await t.http().get(`/api/devices/simtest-0002/console`).set(admin.auth)).body.data.output,
      (text: string) => text === expected,
    );
    expect(output).toBe(expected);

    // Reboot: the device says `rebooting`, its socket closes, and it joins again at once.
    const rebooted = sim.devices[0];
    const connectsBefore = rebooted.connects;
    await t.http().post(`/api/devices/simtest-0001/reboot`).set(admin.auth).expect(204);
    await eventually(
      () => rebooted.connects,
      (n) => n > connectsBefore,
    );
    expect(rebooted.reboots).toBe(1);
    expect(rebooted.connects).toBe(connectsBefore + 1);
    await eventually(
      () => t.http().post(`/api/devices/simtest-0001/reboot`).set(admin.auth),
      (res) => res.status === 204,
    );
    await eventually(
      () => rebooted.reboots,
      (n) => n === 2,
    );
    expect(rebooted.reboots).toBe(2);

    // Iroh: each device reports its endpoint id when asked.
    const endpoint = simulatedIrohKey('simtest-0001');
    await eventually(
      async () => (await t.http().get(`/api/orgs/${org}/iroh_endpoints/${endpoint}`).set(admin.auth)).status,
      (status) => status === 200,
    );
    await t.http().get(`/api/orgs/${org}/iroh_endpoints/${endpoint}`).set(admin.auth).expect(200);

    // Update: download, progress, "reboot", rejoin with the new firmware: complete.
    await t.http().post(`/api/devices/simtest-0003/upgrade`).set(admin.auth).send({ uuid }).expect(204);
    type Shown = { version: string; online: boolean; firmware_metadata: { uuid: string } };
    const device = await eventually(
      async () => (await t.http().get(`/api/devices/simtest-0003`).set(admin.auth)).body.data as Shown,
      (d) => d.version === '3.1.4' && d.online,
    );
    expect(device.firmware_metadata.uuid).toBe(uuid);
    const pending = await eventually(
      () => t.db.query(`SELECT 1 FROM pending_updates`),
      (rows: unknown[]) => rows.length === 0,
    );
    expect(pending).toEqual([]);
    expect(sim.devices[2].installed).toBe(1);
  });

  /** Uploads a signed firmware of `version` (rpi4/aarch64) and creates a shared secret. */
  async function firmwareAndSecret(keyName: string, version: string) {
    const key = await t.fixtures.signingKey(org, keyName);
    const built = await buildFw(join(dir, `${version}.fw`), {
      signWith: key.privateKey,
      meta: { product, version, platform: 'rpi4', architecture: 'aarch64' },
    });
    await t
      .http()
      .post(`/api/orgs/${org}/products/${product}/firmwares`)
      .set(admin.auth)
      .attach('firmware', built.path)
      .expect(201);
    const secret = await t
      .http()
      .post(`/api/orgs/${org}/products/${product}/shared_secrets`)
      .set(admin.auth)
      .send({})
      .expect(201);
    return {
      uuid: computeMetaUuid(built.metaConf),
      key: secret.body.data.key as string,
      secret: secret.body.data.secret as string,
    };
  }

  type Shown = {
    version: string;
    online: boolean;
    firmware_metadata: { uuid: string; platform: string; architecture: string; version: string };
  };

  it('applies an update: download, checks, apply time, rejoin with the new firmware; the server completes it', async () => {
    const fw = await firmwareAndSecret('k-apply', '2.0.0');
    simulator = new Simulator({
      url,
      key: fw.key,
      secret: fw.secret,
      devices: 1,
      prefix: 'apply-',
      applyMs: 400,
      applyJitter: 0,
      firmware: { platform: 'rpi4', architecture: 'aarch64', version: '1.0.0' },
    });
    const sim = simulator;
    const [device] = sim.devices;
    simulator.start(0);
    await eventually(
      async () => sim.connected,
      (n) => n === 1,
    );
    const before = (await t.http().get(`/api/devices/apply-0001`).set(admin.auth).expect(200)).body
      .data as Shown;
    expect(before.firmware_metadata).toMatchObject({
      platform: 'rpi4',
      architecture: 'aarch64',
      version: '1.0.0',
    });

    let frameAt = 0;
    device.onReceive = (topic, event) => {
      if (topic === 'device' && event === 'update') frameAt = Date.now();
    };
    const ended = outcomes(device);
    await t
      .http()
      .post(`/api/devices/apply-0001/upgrade`)
      .set(admin.auth)
      .send({ uuid: fw.uuid })
      .expect(204);
    expect(await ended).toEqual([{ result: 'installed', uuid: fw.uuid }]);
    // The apply time passed between the frame and the reboot.
    expect(Date.now() - frameAt).toBeGreaterThanOrEqual(400);

    const after = await eventually(
      async () => (await t.http().get(`/api/devices/apply-0001`).set(admin.auth)).body.data as Shown,
      (d) => d.firmware_metadata.uuid === fw.uuid && d.online,
    );
    expect(after.version).toBe('2.0.0');
    expect(after.firmware_metadata).toMatchObject({
      uuid: fw.uuid,
      platform: 'rpi4',
      architecture: 'aarch64',
      version: '2.0.0',
    });
    const pending = await eventually(
      () => t.db.query(`SELECT 1 FROM pending_updates`),
      (rows: unknown[]) => rows.length === 0,
    );
    expect(pending).toEqual([]);
    expect(device.connects).toBe(2);
    const stats = sim.updateStats();
    expect(stats).toMatchObject({
      devices: 1,
      update_frames: 1,
      frames_per_device: { '1': 1 },
      max_frames_per_device: 1,
      downloads: 1,
      completions: 1,
      failures: 0,
      applying_now: 0,
      max_applying: 1,
    });
    const [row] = await t.db.query(`SELECT size FROM firmwares WHERE uuid = $1`, [fw.uuid]);
    expect(stats.bytes).toBe(Number(row.size));
  });

  it('fails the share of devices the seed picks: fwup error reported, old firmware kept, update ended', async () => {
    const fw = await firmwareAndSecret('k-fail', '2.1.0');
    const identifiers = ['fail-0001', 'fail-0002', 'fail-0003', 'fail-0004'];
    // A seed that fails some of the four devices and not all of them.
    const seed = Array.from({ length: 100 }, (_, i) => `seed-${i}`).find((candidate) => {
      const n = identifiers.filter((id) => failsUpdate(candidate, id, fw.uuid, 0.5)).length;
      return n > 0 && n < identifiers.length;
    })!;
    const failing = identifiers.filter((id) => failsUpdate(seed, id, fw.uuid, 0.5));
    simulator = new Simulator({
      url,
      key: fw.key,
      secret: fw.secret,
      devices: 4,
      prefix: 'fail-',
      applyMs: 50,
      failShare: 0.5,
      seed,
      firmware: { platform: 'rpi4', architecture: 'aarch64', version: '1.0.0' },
    });
    const sim = simulator;
    simulator.start(0);
    await eventually(
      async () => sim.connected,
      (n) => n === 4,
    );
    const ended = Promise.all(sim.devices.map((d) => outcomes(d)));
    for (const id of identifiers) {
      await t.http().post(`/api/devices/${id}/upgrade`).set(admin.auth).send({ uuid: fw.uuid }).expect(204);
    }
    const results = (await ended).map(([o]) => o);
    expect(sim.devices.filter((_, i) => results[i].result === 'failed').map((d) => d.identifier)).toEqual(
      failing,
    );
    for (const [i, outcome] of results.entries()) {
      expect(outcome).toEqual(
        failing.includes(identifiers[i])
          ? { result: 'failed', uuid: fw.uuid, reason: 'FWUP error : simulated failure (--fail-share)' }
          : { result: 'installed', uuid: fw.uuid },
      );
    }
    // Failed updates end (the server deletes them), installed ones complete on the rejoin.
    const pending = await eventually(
      () => t.db.query(`SELECT 1 FROM pending_updates`),
      (rows: unknown[]) => rows.length === 0,
    );
    expect(pending).toEqual([]);
    const shown = await eventually(
      () =>
        Promise.all(
          identifiers.map(
            async (id) => (await t.http().get(`/api/devices/${id}`).set(admin.auth)).body.data as Shown,
          ),
        ),
      (all) => all.every((d) => d.online),
    );
    expect(shown.map((d) => d.firmware_metadata.version)).toEqual(
      identifiers.map((id) => (failing.includes(id) ? '1.0.0' : '2.1.0')),
    );
    expect(sim.devices.map((d) => d.firmwareUuid === fw.uuid)).toEqual(
      identifiers.map((id) => !failing.includes(id)),
    );
    expect(sim.updateStats()).toMatchObject({
      update_frames: 4,
      frames_per_device: { '1': 4 },
      downloads: 4,
      completions: identifiers.length - failing.length,
      failures: failing.length,
      applying_now: 0,
    });
  });

  it('reports health, location, identities and log lines at the rates asked for', async () => {
    const telemetry = 'telemetry';
    await t.fixtures.product(admin, org, telemetry);
    await t
      .http()
      .patch(`/api/orgs/${org}/products/${telemetry}/extensions`)
      .set(admin.auth)
      .send({ health: true, geo: true, logging: true })
      .expect(200);
    const secret = await t
      .http()
      .post(`/api/orgs/${org}/products/${telemetry}/shared_secrets`)
      .set(admin.auth)
      .send({})
      .expect(201);
    simulator = new Simulator({
      url,
      key: secret.body.data.key,
      secret: secret.body.data.secret,
      devices: 2,
      prefix: 'simtele-',
      logsPerSecond: 4,
      healthEveryMs: 200,
    });
    simulator.start(0);
    const sim = simulator;
    const device = (id: string) => `/api/orgs/${org}/products/${telemetry}/devices/${id}`;
    type Listed = { data: Record<string, unknown>[] };
    const read = async <T>(path: string) => (await t.http().get(path).set(admin.auth).expect(200)).body as T;
    await eventually(
      async () => sim.connected,
      (n) => n === 2,
    );
    type Health = { data: { report: { metrics: unknown } | null; location: unknown } };
    const health = await eventually(
      () => read<Health>(`${device('simtele-0001')}/health`),
      (body) => body.data.report !== null && body.data.location !== null,
    );
    expect(health.data.report?.metrics).toEqual(
      expect.objectContaining({ cpu_temp: expect.any(Number), mem_used_percent: expect.any(Number) }),
    );
    expect(health.data.location).toEqual({
      source: 'geoip',
      latitude: expect.any(Number),
      longitude: expect.any(Number),
    });
    const logs = await eventually(
      () => read<Listed>(`${device('simtele-0002')}/logs`),
      (body) => body.data.length >= 4,
    );
    expect(logs.data[0]).toEqual({
      timestamp: expect.any(String),
      level: expect.any(String),
      message: expect.stringContaining('(#'),
      meta: { time: expect.any(String), simulated: 'true' },
    });
    const identities = await eventually(
      () => read<Listed>(`${device('simtele-0001')}/network_identities`),
      (body) => body.data.length === 2,
    );
    expect(identities.data.map((i) => `${String(i.service)}/${String(i.instance)}`)).toEqual([
      'iroh/default',
      'wireguard/wg0',
    ]);
    const metrics = await eventually(
      () => read<Listed>(`${device('simtele-0001')}/health/metrics?key=cpu_temp`),
      (body) => body.data.length >= 2,
    );
    expect(metrics.data.length).toBeGreaterThanOrEqual(2);
    const sent = sim.devices[1].sent;
    expect(sent.logLines).toBeGreaterThanOrEqual(4);
    expect(sent.healthReports).toBeGreaterThanOrEqual(2);
  });

  it('refuses bad NH1 credentials with 401', async () => {
    const res = await DeviceSocketClient.refused(url, {
      'x-nh-alg': 'NH1-HMAC-sha256-1000-32',
      'x-nh-key': `nhp_${'A'.repeat(43)}`,
      'x-nh-time': String(Math.floor(Date.now() / 1000)),
      'x-nh-signature': 'SFMyNTY.x.y',
    });
    expect(res.status).toBe(401);
    expect(res.body).toBe('');
    expect(res.headers.date).toBeDefined();
  });
});

/** Support scripts on simulated devices, each held by one of two instances that share a database. */
describe('simulated devices answer support scripts, on each of two instances', () => {
  let a: TestApp;
  let b: TestApp;
  let admin: TestUser;
  let org: string;
  const simulators: Simulator[] = [];
  const product = 'scripted';

  const listen = async (app: TestApp) => {
    await app.app.listen(0, '127.0.0.1');
    return `http://127.0.0.1:${(app.app.getHttpServer().address() as AddressInfo).port}`;
  };

  beforeAll(async () => {
    ({ t: a, admin, org } = await orgScenario({ product }));
    b = await createTestApp({}, { databaseUrl: a.databaseUrl });
  });

  afterAll(async () => {
    await Promise.all(simulators.map((s) => s.stop()));
    await b.close();
    await a.close();
  });

  it('runs a script on a device of each instance, from either instance, with the output and return value', async () => {
    const [urlA, urlB] = [await listen(a), await listen(b)];
    const secret = await a
      .http()
      .post(`/api/orgs/${org}/products/${product}/shared_secrets`)
      .set(admin.auth)
      .send({})
      .expect(201);
    const credentials = { key: secret.body.data.key as string, secret: secret.body.data.secret as string };
    for (const [url, prefix] of [
      [urlA, 'on-a-'],
      [urlB, 'on-b-'],
    ]) {
      const simulator = new Simulator({
        url,
        ...credentials,
        devices: 1,
        prefix,
        firmware: { version: '4.5.6' },
      });
      simulators.push(simulator);
      simulator.start(0);
      await eventually(
        async () => simulator.connected,
        (n) => n === 1,
      );
    }
    const text =
      'IO.puts("serial: " )\nIO.puts(Nerves.Runtime.serial_number())\nNerves.Runtime.KV.get("nerves_fw_version")';
    const script = await a
      .http()
      .post(`/api/orgs/${org}/products/${product}/scripts`)
      .set(admin.auth)
      .send({ name: 'whoami', text })
      .expect(201);
    for (const identifier of ['on-a-0001', 'on-b-0001']) {
      for (const via of [a, b]) {
        const res = await via
          .http()
          .post(`/api/orgs/${org}/products/${product}/devices/${identifier}/scripts/whoami?timeout=10000`)
          .set(admin.auth)
          .expect(200);
        expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
        expect(res.text).toBe(`serial: \n${identifier}\n\n"4.5.6"`);
      }
      const byId = await b
        .http()
        .post(`/api/devices/${identifier}/scripts/${script.body.data.id}`)
        .set(admin.auth)
        .expect(200);
      expect(byId.text).toBe(`serial: \n${identifier}\n\n"4.5.6"`);
    }
    expect(simulators.map((s) => s.devices[0].scriptRuns)).toEqual([3, 3]);
  });
});
