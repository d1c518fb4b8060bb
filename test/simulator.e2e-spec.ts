import { mkdtemp, rm } from 'node:fs/promises';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { computeMetaUuid } from '../src/firmware/fwup';
import { Simulator, simulatedIrohKey } from '../src/cli/simulator';
import { buildFw } from './support/fw-builder';
import { DeviceSocketClient } from './support/device-socket-client';
import type { TestUser } from './support/fixtures';
import type { TestApp } from './support/test-app';
import { orgScenario } from './support/scenario';

async function eventually<T>(
  probe: () => Promise<T>,
  ok: (value: T) => boolean,
  timeoutMs = 10_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (ok(value) || Date.now() > deadline) return value;
    await new Promise((r) => setTimeout(r, 100));
  }
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

    // Console: the simulator echoes what it is sent.
    await eventually(
      () => t.http().post(`/api/devices/simtest-0002/code`).set(admin.auth).send({ code: 'hello' }),
      (res) => res.status === 204,
    );
    const output = await eventually(
      async () => (await t.http().get(`/api/devices/simtest-0002/console`).set(admin.auth)).body.data.output,
      (text: string) => text === 'hello\r',
    );
    expect(output).toBe('hello\r');

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
