import { createHash } from 'node:crypto';
import { access, chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as yauzl from 'yauzl';
import { Simulator } from '../src/cli/simulator';
import { ORCHESTRATOR_TIMING } from '../src/deployments/orchestrator/deployment-orchestrator.service';
import { DeviceAuthenticator } from '../src/device-auth/device-authenticator';
import { DELTA_BUILDER_OPTIONS, DeltaBuilder } from '../src/firmware/deltas/delta-builder.service';
import { FirmwareDeltaRecords } from '../src/firmware/deltas/firmware-delta-records.service';
import { Xdelta3 } from '../src/firmware/deltas/xdelta3';
import { CapturedLog } from './support/captured-log';
import { DeviceSocketClient, type Frame } from './support/device-socket-client';
import { eventually } from './support/eventually';
import { FakeAuthenticator } from './support/fake-authenticator';
import type { FwupKeyPair } from './support/fw-builder';
import { type TestUser, unique } from './support/fixtures';
import { listenOnLoopback } from './support/listening-app';
import { createTestApp, type TestApp } from './support/test-app';
import { ensureXdelta3 } from './support/xdelta3';

const NOT_FOUND = { errors: { detail: 'Resource Not Found or Authorization Insufficient' } };
const TIMING = { sweepMs: 200, debounceMs: 20, onlineBatchMs: 20 };

/** Deterministic bytes: a SHA-256 chain from `seed`. */
function bytes(seed: string, length: number): Buffer {
  const out = Buffer.alloc(length);
  let block = createHash('sha256').update(seed).digest();
  for (let i = 0; i < length; i += block.length) {
    block.copy(out, i);
    block = createHash('sha256').update(block).digest();
  }
  return out;
}

/** A root filesystem of 256 KiB, and the next version of it: a few changed bytes and 4 KiB more. */
const ROOTFS_1 = bytes('rootfs', 256 * 1024);
const ROOTFS_2 = Buffer.concat([ROOTFS_1, bytes('added', 4096)]);
ROOTFS_2.write('version two', 100_000);
const BOOT = bytes('boot', 8 * 1024);

interface Entry {
  name: string;
  data: Buffer;
}

function zipEntries(zip: Buffer): Promise<Entry[]> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(zip, { lazyEntries: true }, (err, file) => {
      if (err) return reject(err);
      const entries: Entry[] = [];
      file.on('entry', (entry: yauzl.Entry) =>
        file.openReadStream(entry, (openErr, stream) => {
          if (openErr) return reject(openErr);
          const chunks: Buffer[] = [];
          stream.on('data', (c: Buffer) => chunks.push(c));
          stream.on('end', () => {
            entries.push({ name: entry.fileName, data: Buffer.concat(chunks) });
            file.readEntry();
          });
        }),
      );
      file.on('end', () => resolve(entries));
      file.on('error', reject);
      file.readEntry();
    });
  });
}

/** The bytes a download link serves (through the app's own listener). */
async function download(base: string, link: string): Promise<Buffer> {
  const url = new URL(link);
  const res = await fetch(`${base}${url.pathname}${url.search}`);
  expect(res.status).toBe(200);
  return Buffer.from(await res.arrayBuffer());
}

describe('fwup delta updates', () => {
  const auth = new FakeAuthenticator();
  let t: TestApp;
  let url: string;
  let admin: TestUser;
  let org: string;
  let product: string;
  let key: FwupKeyPair;
  let control: string;
  const clients: DeviceSocketClient[] = [];

  const firmwares = () => `/api/orgs/${org}/products/${product}/firmwares`;

  /** A delta-capable firmware of the product (its rootfs may be written from a raw delta). */
  async function firmware(version: string, rootfs: Buffer, delta = true) {
    return t.fixtures.firmware(admin, org, product, {
      version,
      key,
      resources: [
        { name: 'boot.img', content: BOOT },
        { name: 'rootfs.img', content: rootfs },
      ],
      deltaResources: delta ? ['rootfs.img'] : [],
    });
  }

  async function deltaRows(): Promise<
    {
      source: string;
      target: string;
      state: string;
      attempts: number;
      error: string | null;
      key: string | null;
    }[]
  > {
    return t.db.query(
      `SELECT s.uuid AS source, tg.uuid AS target, d.state, d.attempts, d.error, d.storage_key AS key
         FROM firmware_deltas d JOIN firmwares s ON s.id = d.source_id JOIN firmwares tg ON tg.id = d.target_id`,
    );
  }

  async function rowOf(source: string, target: string) {
    return (await deltaRows()).find((r) => r.source === source && r.target === target);
  }

  /** A device of the product joined with firmware `uuid` and `fwup_version` (null: not reported). */
  async function joined(
    uuid: string,
    fwupVersion: string | null,
    tags: string[],
  ): Promise<DeviceSocketClient> {
    const identifier = await t.fixtures.device(admin, org, product, unique('dev-'), { tags });
    const client = await DeviceSocketClient.connect(url, { 'x-test-device': identifier });
    clients.push(client);
    const reply = await client.join('device', {
      nerves_fw_uuid: uuid,
      nerves_fw_product: product,
      nerves_fw_version: '1.0.0',
      nerves_fw_platform: 'rpi4',
      nerves_fw_architecture: 'aarch64',
      ...(fwupVersion === null ? {} : { fwup_version: fwupVersion }),
      device_api_version: '2.0.0',
    });
    expect(reply[4]).toEqual({ status: 'ok', response: {} });
    return client;
  }

  /** The device reconnects (same firmware): its undelivered-or-delivered update is sent again. */
  async function rejoin(client: DeviceSocketClient, identifierHeader: string, payload: unknown) {
    await client.close();
    const again = await DeviceSocketClient.connect(url, { 'x-test-device': identifierHeader });
    clients.push(again);
    await again.join('device', payload);
    return again;
  }

  /** An active group of the devices tagged `tag`, releasing `uuid`. */
  async function group(uuid: string, tag: string, deltaUpdatable = true): Promise<string> {
    const name = unique('group-');
    await t
      .http()
      .post(`/api/orgs/${org}/products/${product}/deployments`)
      .set(admin.auth)
      .send({
        name,
        firmware: uuid,
        is_active: true,
        delta_updatable: deltaUpdatable,
        conditions: { version: '', tags: [tag] },
      })
      .expect(201);
    return name;
  }

  const update = (client: DeviceSocketClient) =>
    client.next((f: Frame) => f[2] === 'device' && f[3] === 'update', 10_000);

  beforeAll(async () => {
    ensureXdelta3();
    // xdelta3 through a wrapper the tests can make fail (once, or always).
    control = await mkdtemp(join(tmpdir(), 'fleethub-xdelta-'));
    const wrapper = join(control, 'xdelta3');
    await writeFile(
      wrapper,
      `#!/bin/sh\nif [ -f "${control}/fail-always" ]; then echo "simulated xdelta3 failure" >&2; exit 1; fi\n` +
        `if [ -f "${control}/fail-once" ]; then rm -f "${control}/fail-once"; echo "simulated once" >&2; exit 1; fi\n` +
        'exec xdelta3 "$@"\n',
    );
    await chmod(wrapper, 0o755);
    t = await createTestApp(
      {},
      {
        overrides: [
          { provide: DeviceAuthenticator, useValue: auth },
          { provide: ORCHESTRATOR_TIMING, useValue: TIMING },
          {
            provide: DELTA_BUILDER_OPTIONS,
            useValue: { pollMs: 100, leaseSec: 30, retryBaseSec: 0, maxAttempts: 3, xdelta3: wrapper },
          },
        ],
      },
    );
    auth.db = t.db;
    url = (await listenOnLoopback(t)).url;
    admin = await t.fixtures.user();
    org = await t.fixtures.org(admin);
    product = await t.fixtures.product(admin, org);
    key = await t.fixtures.registeredKey(admin, org);
  }, 60_000);

  afterAll(async () => {
    for (const client of clients) await client.close().catch(() => undefined);
    await t?.close();
    await rm(control, { recursive: true, force: true });
  });

  it('sends the full file while the delta builds, then the delta, which xdelta3 decodes into the target', async () => {
    const v1 = await firmware('1.0.0', ROOTFS_1);
    const v2 = await firmware('2.0.0', ROOTFS_2);
    const tag = unique('t');
    await group(v2.uuid, tag);
    const joinPayload = {
      nerves_fw_uuid: v1.uuid,
      nerves_fw_product: product,
      nerves_fw_version: '1.0.0',
      nerves_fw_platform: 'rpi4',
      nerves_fw_architecture: 'aarch64',
      fwup_version: '1.10.1',
      device_api_version: '2.0.0',
    };
    const identifier = await t.fixtures.device(admin, org, product, unique('dev-'), { tags: [tag] });
    const first = await DeviceSocketClient.connect(url, { 'x-test-device': identifier });
    clients.push(first);
    await first.join('device', joinPayload);

    // Not ready yet (never built): the full file, and the pair is requested.
    const full = (await update(first))[4] as Record<string, unknown>;
    const v2Size = Number(
      (await t.http().get(`${firmwares()}/${v2.uuid}`).set(admin.auth).expect(200)).body.data.size,
    );
    expect(full.size).toBe(v2Size);
    expect(full.firmware_url).toMatch(/\/device-firmware\/\d+\/[0-9a-f-]{36}\.fw\?expires=/);
    const fullFile = await download(url, full.firmware_url as string);
    expect(createHash('sha256').update(fullFile).digest('hex').toUpperCase()).toBe(full.checksum);

    const listed = await eventually(
      async () => (await t.http().get(`${firmwares()}/${v2.uuid}/deltas`).set(admin.auth).expect(200)).body,
      (body: { data: { state: string; size: number; saved_bytes: number; build_ms: number }[] }) =>
        body.data[0]?.state === 'ready',
    );
    expect(listed.data).toEqual([
      expect.objectContaining({
        source_uuid: v1.uuid,
        source_version: '1.0.0',
        target_uuid: v2.uuid,
        target_version: '2.0.0',
        state: 'ready',
        attempts: 1,
        error: null,
        target_size: v2Size,
        fwup_version: '1.6.0',
      }),
    ]);
    const delta = listed.data[0];
    expect(delta.size).toBeLessThan(v2Size / 2);
    expect(delta.saved_bytes).toBe(v2Size - delta.size);
    expect(delta.build_ms).toBeGreaterThanOrEqual(0);

    // Sent again (the device reconnects): now the delta, with the target's metadata and the delta's checksums.
    const second = await rejoin(first, identifier, joinPayload);
    const sent = (await update(second))[4] as Record<string, unknown>;
    expect(sent.firmware_meta).toEqual(full.firmware_meta);
    expect(sent.size).toBe(delta.size);
    expect(sent.firmware_url).toMatch(/\/device-firmware\/deltas\/\d+\/[0-9a-f-]{36}\.fw\?expires=/);
    const file = await download(url, sent.firmware_url as string);
    expect(file.length).toBe(delta.size);
    expect(createHash('sha256').update(file).digest('hex').toUpperCase()).toBe(sent.checksum);
    expect((sent.partials_checksums as string[]).length).toBe(1);

    // The target's entries in its order; meta.conf and its signature byte for byte; rootfs a VCDIFF.
    const target = await zipEntries(fullFile);
    const patched = await zipEntries(file);
    expect(patched.map((e) => e.name)).toEqual(target.map((e) => e.name));
    for (const name of ['meta.conf.ed25519', 'meta.conf', 'data/boot.img']) {
      expect(
        patched.find((e) => e.name === name)!.data.equals(target.find((e) => e.name === name)!.data),
      ).toBe(true);
    }
    const rootfs = patched.find((e) => e.name === 'data/rootfs.img')!.data;
    expect(rootfs.subarray(0, 3)).toEqual(Buffer.from([0xd6, 0xc3, 0xc4]));
    expect(rootfs.length).toBeLessThan(ROOTFS_2.length / 10);
    const work = await mkdtemp(join(tmpdir(), 'fleethub-decode-'));
    try {
      await writeFile(join(work, 'source'), ROOTFS_1);
      await writeFile(join(work, 'delta'), rootfs);
      await new Xdelta3().decode(join(work, 'source'), join(work, 'delta'), join(work, 'out'));
      expect((await readFile(join(work, 'out'))).equals(ROOTFS_2)).toBe(true);
    } finally {
      await rm(work, { recursive: true, force: true });
    }

    // The deployment group's delta status shows it; the API of the source lists it too.
    const status = await t
      .http()
      .get(`/api/orgs/${org}/products/${product}/deployments/${await groupOf(v2.uuid)}/deltas`)
      .set(admin.auth)
      .expect(200);
    expect(status.body.data).toEqual({
      delta_updatable: true,
      firmware_uuid: v2.uuid,
      deltas: [expect.objectContaining({ source_uuid: v1.uuid, state: 'ready', size: delta.size })],
    });
    const fromSource = await t.http().get(`${firmwares()}/${v1.uuid}/deltas`).set(admin.auth).expect(200);
    expect(fromSource.body.data).toEqual([expect.objectContaining({ target_uuid: v2.uuid, state: 'ready' })]);
  }, 60_000);

  async function groupOf(firmwareUuid: string): Promise<string> {
    const res = await t
      .http()
      .get(`/api/orgs/${org}/products/${product}/deployments`)
      .set(admin.auth)
      .expect(200);
    return (res.body.data as { name: string; firmware_uuid: string }[]).find(
      (g) => g.firmware_uuid === firmwareUuid,
    )!.name;
  }

  it('sends the full file to a device whose fwup is too old (or unknown), and requests nothing for it', async () => {
    const v1 = await firmware('3.0.0', ROOTFS_1);
    const v2 = await firmware('4.0.0', ROOTFS_2);
    // The pair is ready before the devices come.
    const [requested] = await t.app
      .get(FirmwareDeltaRecords)
      .forDelivery([{ targetId: await idOf(v2.uuid), sourceUuid: v1.uuid }]);
    expect(requested).toEqual(expect.objectContaining({ state: null, source_uuid: v1.uuid }));
    await eventually(
      () => rowOf(v1.uuid, v2.uuid),
      (row) => row?.state === 'ready',
    );
    const tag = unique('t');
    await group(v2.uuid, tag);
    for (const fwup of ['1.5.0', null, 'not-a-version']) {
      const client = await joined(v1.uuid, fwup, [tag]);
      const sent = (await update(client))[4] as Record<string, unknown>;
      expect(sent.firmware_url).toMatch(/\/device-firmware\/\d+\//);
    }
    // A device with a newer fwup gets the delta.
    const client = await joined(v1.uuid, '1.13.0', [tag]);
    const sent = (await update(client))[4] as Record<string, unknown>;
    expect(sent.firmware_url).toMatch(/\/device-firmware\/deltas\//);
    // A device running a firmware the product does not have: the full file, nothing requested.
    const before = (await deltaRows()).length;
    const stranger = await joined('99999999-2222-5333-8444-555555555555', '1.13.0', [tag]);
    expect(((await update(stranger))[4] as { firmware_url: string }).firmware_url).toMatch(
      /\/device-firmware\/\d+\//,
    );
    expect((await deltaRows()).length).toBe(before);
  }, 60_000);

  it('sends the full file when the group does not allow deltas, and requests none', async () => {
    const v1 = await firmware('5.0.0', ROOTFS_1);
    const v2 = await firmware('6.0.0', ROOTFS_2);
    const tag = unique('t');
    const name = await group(v2.uuid, tag, false);
    const client = await joined(v1.uuid, '1.13.0', [tag]);
    const sent = (await update(client))[4] as Record<string, unknown>;
    expect(sent.firmware_url).toMatch(/\/device-firmware\/\d+\//);
    expect(await rowOf(v1.uuid, v2.uuid)).toBeUndefined();
    const status = await t
      .http()
      .get(`/api/orgs/${org}/products/${product}/deployments/${name}/deltas`)
      .set(admin.auth)
      .expect(200);
    expect(status.body.data).toEqual({ delta_updatable: false, firmware_uuid: v2.uuid, deltas: [] });
  }, 60_000);

  it('a manual upgrade always sends the full file', async () => {
    const v1 = await firmware('7.0.0', ROOTFS_1);
    const v2 = await firmware('8.0.0', ROOTFS_2);
    await t.app
      .get(FirmwareDeltaRecords)
      .forDelivery([{ targetId: await idOf(v2.uuid), sourceUuid: v1.uuid }]);
    await eventually(
      () => rowOf(v1.uuid, v2.uuid),
      (row) => row?.state === 'ready',
    );
    const identifier = await t.fixtures.device(admin, org, product, unique('dev-'));
    const client = await DeviceSocketClient.connect(url, { 'x-test-device': identifier });
    clients.push(client);
    await client.join('device', { nerves_fw_uuid: v1.uuid, fwup_version: '1.13.0' });
    await t
      .http()
      .post(`/api/orgs/${org}/products/${product}/devices/${identifier}/upgrade`)
      .set(admin.auth)
      .send({ uuid: v2.uuid })
      .expect(204);
    const sent = (await update(client))[4] as Record<string, unknown>;
    expect(sent.firmware_url).toMatch(/\/device-firmware\/\d+\//);
  }, 60_000);

  async function idOf(uuid: string): Promise<string> {
    const [row] = await t.db.query<{ id: string }[]>(`SELECT id FROM firmwares WHERE uuid = $1`, [uuid]);
    return row.id;
  }

  it('retries a failed build (recorded) and gives up after three attempts', async () => {
    const v1 = await firmware('9.0.0', ROOTFS_1);
    const v2 = await firmware('10.0.0', ROOTFS_2);
    const v3 = await firmware('11.0.0', Buffer.concat([ROOTFS_2, bytes('three', 512)]));
    const records = t.app.get(FirmwareDeltaRecords);

    await writeFile(join(control, 'fail-once'), '');
    await records.forDelivery([{ targetId: await idOf(v2.uuid), sourceUuid: v1.uuid }]);
    const retried = await eventually(
      () => rowOf(v1.uuid, v2.uuid),
      (row) => row?.state === 'ready',
    );
    expect(retried).toEqual(expect.objectContaining({ state: 'ready', attempts: 2, error: null }));

    await writeFile(join(control, 'fail-always'), '');
    try {
      await records.forDelivery([{ targetId: await idOf(v3.uuid), sourceUuid: v1.uuid }]);
      const failed = await eventually(
        () => rowOf(v1.uuid, v3.uuid),
        (row) => row?.state === 'failed',
      );
      expect(failed).toEqual(
        expect.objectContaining({
          state: 'failed',
          attempts: 3,
          key: null,
          error: expect.stringContaining('simulated xdelta3 failure'),
        }),
      );
      // Not built again.
      await t.app.get(DeltaBuilder).poke();
      expect((await rowOf(v1.uuid, v3.uuid))?.attempts).toBe(3);
    } finally {
      await rm(join(control, 'fail-always'), { force: true });
    }
    const listed = await t.http().get(`${firmwares()}/${v3.uuid}/deltas`).set(admin.auth).expect(200);
    expect(listed.body.data).toEqual([
      expect.objectContaining({ state: 'failed', attempts: 3, size: null, saved_bytes: null }),
    ]);
  }, 60_000);

  it('requests no delta to a firmware without delta-capable resources; fails at once one that gives none', async () => {
    const v1 = await firmware('12.0.0', ROOTFS_1);
    const plain = await firmware('13.0.0', ROOTFS_2, false);
    const records = t.app.get(FirmwareDeltaRecords);
    expect(await records.forDelivery([{ targetId: await idOf(plain.uuid), sourceUuid: v1.uuid }])).toEqual([
      null,
    ]);
    expect(await rowOf(v1.uuid, plain.uuid)).toBeUndefined();
    // A group releasing it sends the full file and requests nothing.
    const tag = unique('t');
    await group(plain.uuid, tag);
    const client = await joined(v1.uuid, '1.13.0', [tag]);
    expect(((await update(client))[4] as { firmware_url: string }).firmware_url).toMatch(
      /\/device-firmware\/\d+\//,
    );
    expect(await rowOf(v1.uuid, plain.uuid)).toBeUndefined();

    // Declared delta-capable, but its only resource is too small to gain anything: failed, not retried.
    const tiny = await t.fixtures.firmware(admin, org, product, {
      version: '13.1.0',
      key,
      resources: [{ name: 'rootfs.img', content: 'tiny' }],
      deltaResources: ['rootfs.img'],
    });
    await records.forDelivery([{ targetId: await idOf(tiny.uuid), sourceUuid: v1.uuid }]);
    const failed = await eventually(
      () => rowOf(v1.uuid, tiny.uuid),
      (row) => row?.state === 'failed',
    );
    expect(failed).toEqual(
      expect.objectContaining({ attempts: 1, error: expect.stringContaining('no changes in delta') }),
    );
  }, 60_000);

  it('deleting either firmware deletes its deltas and their files', async () => {
    const v1 = await firmware('14.0.0', ROOTFS_1);
    const v2 = await firmware('15.0.0', ROOTFS_2);
    const v3 = await firmware('16.0.0', Buffer.concat([ROOTFS_2, bytes('sixteen', 512)]));
    const records = t.app.get(FirmwareDeltaRecords);
    await records.forDelivery([
      { targetId: await idOf(v2.uuid), sourceUuid: v1.uuid },
      { targetId: await idOf(v3.uuid), sourceUuid: v2.uuid },
    ]);
    const a = await eventually(
      () => rowOf(v1.uuid, v2.uuid),
      (row) => row?.state === 'ready',
    );
    const b = await eventually(
      () => rowOf(v2.uuid, v3.uuid),
      (row) => row?.state === 'ready',
    );
    const stored = (k: string | null | undefined) => join(t.config.dataDir, 'firmware', k!);
    await access(stored(a?.key));
    await access(stored(b?.key));

    // The target of one delta and the source of the other.
    await t.http().delete(`${firmwares()}/${v2.uuid}`).set(admin.auth).expect(204);
    expect(await rowOf(v1.uuid, v2.uuid)).toBeUndefined();
    expect(await rowOf(v2.uuid, v3.uuid)).toBeUndefined();
    await expect(access(stored(a?.key))).rejects.toThrow();
    await expect(access(stored(b?.key))).rejects.toThrow();
    const left = await t.http().get(`${firmwares()}/${v1.uuid}/deltas`).set(admin.auth).expect(200);
    expect(left.body.data).toEqual([]);
  }, 60_000);

  it('answers the API errors of the contract', async () => {
    const v1 = await firmware('17.0.0', ROOTFS_1);
    const viewer = await t.fixtures.user();
    await t.fixtures.addMember(org, viewer, 'view');
    await t.http().get(`${firmwares()}/${v1.uuid}/deltas`).set(viewer.auth).expect(200, { data: [] });
    const stranger = await t.fixtures.user();
    await t.http().get(`${firmwares()}/${v1.uuid}/deltas`).set(stranger.auth).expect(404, NOT_FOUND);
    await t.http().get(`${firmwares()}/${v1.uuid}/deltas`).expect(401, { error: 'unauthorized' });
    for (const uuid of [
      '00000000-0000-4000-8000-000000000000',
      'not-a-uuid',
      '------------------------------------',
    ]) {
      await t.http().get(`${firmwares()}/${uuid}/deltas`).set(admin.auth).expect(404, NOT_FOUND);
    }
    await t
      .http()
      .get(`/api/orgs/${org}/products/nope/firmwares/${v1.uuid}/deltas`)
      .set(admin.auth)
      .expect(404, NOT_FOUND);
    const deployments = `/api/orgs/${org}/products/${product}/deployments`;
    await t.http().get(`${deployments}/nope/deltas`).set(admin.auth).expect(404, NOT_FOUND);
    await t.http().get(`${deployments}/nope/deltas`).set(stranger.auth).expect(404, NOT_FOUND);
    // A delta link: signed (403 when not), only a ready delta of that target (404).
    await t.http().get(`/device-firmware/deltas/1/${v1.uuid}.fw?expires=1&signature=x`).expect(403);
    await t.http().get(`/device-firmware/deltas/x/${v1.uuid}.fw?expires=1&signature=x`).expect(404);
    await t.http().get(`/device-firmware/deltas/1/not-a-uuid.fw?expires=1&signature=x`).expect(404);
  }, 60_000);
});

describe('fwup delta updates without xdelta3', () => {
  const auth = new FakeAuthenticator();
  let t: TestApp;
  const log = new CapturedLog();

  beforeAll(async () => {
    t = await createTestApp(
      {},
      {
        logger: log.logger('warn'),
        overrides: [
          { provide: DeviceAuthenticator, useValue: auth },
          {
            provide: DELTA_BUILDER_OPTIONS,
            useValue: {
              pollMs: 100,
              leaseSec: 30,
              retryBaseSec: 0,
              maxAttempts: 3,
              xdelta3: '/nonexistent/xdelta3',
            },
          },
        ],
      },
    );
    auth.db = t.db;
  }, 60_000);

  afterAll(async () => {
    await t?.close();
  });

  it('says so once at start and builds nothing: the requested delta stays pending', async () => {
    const warnings = log.lines.filter((line) => String(line.msg).includes('/nonexistent/xdelta3'));
    expect(warnings).toHaveLength(1);
    expect(warnings[0].level).toBe(40);
    const admin = await t.fixtures.user();
    const org = await t.fixtures.org(admin);
    const product = await t.fixtures.product(admin, org);
    const key = await t.fixtures.registeredKey(admin, org);
    const options = (version: string, rootfs: Buffer) => ({
      version,
      key,
      resources: [{ name: 'rootfs.img', content: rootfs }],
      deltaResources: ['rootfs.img'],
    });
    const v1 = await t.fixtures.firmware(admin, org, product, options('1.0.0', ROOTFS_1));
    const v2 = await t.fixtures.firmware(admin, org, product, options('2.0.0', ROOTFS_2));
    const [target] = await t.db.query<{ id: string }[]>(`SELECT id FROM firmwares WHERE uuid = $1`, [
      v2.uuid,
    ]);
    await t.app.get(FirmwareDeltaRecords).forDelivery([{ targetId: target.id, sourceUuid: v1.uuid }]);
    await t.app.get(DeltaBuilder).poke();
    await new Promise((resolve) => setTimeout(resolve, 300));
    const [row] = await t.db.query<{ state: string; attempts: number }[]>(
      `SELECT state, attempts FROM firmware_deltas`,
    );
    expect(row).toEqual({ state: 'pending', attempts: 0 });
    expect(log.lines.filter((line) => String(line.msg).includes('/nonexistent/xdelta3'))).toHaveLength(1);
  }, 60_000);
});

describe('the simulator applies a delta as fwup does (xdelta3 against the firmware it runs)', () => {
  let t: TestApp;
  let url: string;
  let dir: string;
  let simulator: Simulator | null = null;

  beforeAll(async () => {
    ensureXdelta3();
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port: free } = probe.address() as AddressInfo;
        probe.close(() => resolve(free));
      });
    });
    url = `http://127.0.0.1:${port}`;
    t = await createTestApp(
      { FLEETHUB_PUBLIC_URL: url },
      {
        overrides: [
          { provide: ORCHESTRATOR_TIMING, useValue: TIMING },
          {
            provide: DELTA_BUILDER_OPTIONS,
            useValue: { pollMs: 100, leaseSec: 30, retryBaseSec: 0, maxAttempts: 3, xdelta3: 'xdelta3' },
          },
        ],
      },
    );
    await t.app.listen(port, '127.0.0.1');
    dir = await mkdtemp(join(tmpdir(), 'fleethub-sim-delta-'));
  }, 60_000);

  afterAll(async () => {
    await simulator?.stop();
    await t?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('installs the full file first, then a delta: rebuilt, checked against the signed meta.conf, completed', async () => {
    const admin = await t.fixtures.user();
    const org = await t.fixtures.org(admin);
    const product = await t.fixtures.product(admin, org);
    const key = await t.fixtures.signingKey(org, 'release');
    const fw = (version: string, rootfs: Buffer) =>
      t.fixtures.firmware(admin, org, product, {
        version,
        key,
        resources: [
          { name: 'boot.img', content: BOOT },
          { name: 'rootfs.img', content: rootfs },
        ],
        deltaResources: ['rootfs.img'],
      });
    const v1 = await fw('1.0.0', ROOTFS_1);
    const v2 = await fw('2.0.0', ROOTFS_2);
    const ids = await t.db.query<{ id: string; uuid: string }[]>(`SELECT id, uuid FROM firmwares`);
    const v2Id = ids.find((row) => row.uuid === v2.uuid)!.id;
    // The pair is built before the device asks (as for the second device of a rollout).
    await t.app.get(FirmwareDeltaRecords).forDelivery([{ targetId: v2Id, sourceUuid: v1.uuid }]);
    const [ready] = await eventually(
      () => t.db.query<{ state: string; size: string }[]>(`SELECT state, size FROM firmware_deltas`),
      (rows) => rows[0]?.state === 'ready',
    );
    const secret = (
      await t
        .http()
        .post(`/api/orgs/${org}/products/${product}/shared_secrets`)
        .set(admin.auth)
        .send({})
        .expect(201)
    ).body.data as { key: string; secret: string };

    simulator = new Simulator({
      url,
      key: secret.key,
      secret: secret.secret,
      devices: 1,
      prefix: 'delta-',
      applyMs: 50,
      applyJitter: 0,
      firmwareDir: join(dir, 'devices'),
      firmware: { platform: 'rpi4', architecture: 'aarch64', version: '0.0.1' },
    });
    const sim = simulator;
    const [device] = sim.devices;
    sim.start(0);
    await eventually(
      async () => sim.connected,
      (n) => n === 1,
    );

    // A deployment group releasing 1.0.0: the full file (the device's firmware is unknown to the product).
    const groups = `/api/orgs/${org}/products/${product}/deployments`;
    await t
      .http()
      .post(groups)
      .set(admin.auth)
      .send({ name: 'prod', firmware: v1.uuid, is_active: true, conditions: { version: '', tags: [] } })
      .expect(201);
    await eventually(
      () => device.firmwareUuid,
      (uuid) => uuid === v1.uuid,
      20_000,
    );
    expect(device.deltas).toBe(0);
    const bytesBefore = device.bytes;

    // Its next release, 2.0.0: the delta, rebuilt against the kept 1.0.0.
    await t.http().patch(`${groups}/prod`).set(admin.auth).send({ firmware: v2.uuid }).expect(200);
    await eventually(
      () => device.firmwareUuid,
      (uuid) => uuid === v2.uuid,
      20_000,
    );
    expect(device.deltas).toBe(1);
    expect(device.failed).toBe(0);
    expect(device.bytes - bytesBefore).toBe(Number(ready.size));
    const shown = await eventually(
      async () => (await t.http().get(`/api/devices/delta-0001`).set(admin.auth)).body.data,
      (d: { version: string; firmware_metadata: { uuid: string } }) => d.firmware_metadata?.uuid === v2.uuid,
    );
    expect(shown.version).toBe('2.0.0');
    // The kept file is the full 2.0.0 image: its resources are the target's.
    const kept = await zipEntries(await readFile(join(dir, 'devices', 'delta-0001.fw')));
    expect(kept.find((e) => e.name === 'data/rootfs.img')!.data.equals(ROOTFS_2)).toBe(true);
  }, 60_000);
});
