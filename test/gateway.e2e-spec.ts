import { Logger } from '@nestjs/common';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { DeviceAuthenticator } from '../src/device-auth/device-authenticator';
import { computeMetaUuid } from '../src/firmware/fwup';
import { DeviceGateway } from '../src/gateway/device-gateway';
import { PresenceService } from '../src/gateway/presence.service';
import { buildFw, type FwupKeyPair } from './support/fw-builder';
import { uuidOf, writeEspImage } from './support/fw-builder-esp-idf';
import { DeviceSocketClient, type Frame } from './support/device-socket-client';
import type { TestUser } from './support/fixtures';
import { DEVICE_NOT_CONNECTED, NOT_FOUND } from './support/contract-bodies';
import { createTestApp, type TestApp } from './support/test-app';
import { FakeAuthenticator } from './support/fake-authenticator';
import { eventually } from './support/eventually';

const OLD_UUID = '11111111-2222-5333-8444-555555555555';

function joinParams(uuid = OLD_UUID, extra: Record<string, unknown> = {}) {
  return {
    nerves_fw_uuid: uuid,
    nerves_fw_product: 'gadget',
    nerves_fw_version: '1.0.0',
    nerves_fw_platform: 'rpi4',
    nerves_fw_architecture: 'aarch64',
    nerves_fw_author: 'Team',
    nerves_fw_description: 'first',
    nerves_fw_vcs_identifier: 'abc123',
    nerves_fw_misc: 'misc',
    fwup_version: '1.10.1',
    device_api_version: '2.3.0',
    console_version: '2.0.0',
    currently_downloading_uuid: null,
    meta: { firmware_validated: true, firmware_auto_revert_detected: false },
    ...extra,
  };
}

describe('device gateway', () => {
  const authA = new FakeAuthenticator();
  const authB = new FakeAuthenticator();
  let a: TestApp;
  let b: TestApp;
  let urlA: string;
  let urlB: string;
  let admin: TestUser;
  let org: string;
  let key: FwupKeyPair;
  let dir: string;
  let firmwareUuid: string;
  let firmwareBytes: Buffer;
  const product = 'gadget';
  const clients: DeviceSocketClient[] = [];

  async function listen(t: TestApp): Promise<string> {
    await t.app.listen(0, '127.0.0.1');
    const address = t.app.getHttpServer().address() as { port: number };
    return `http://127.0.0.1:${address.port}`;
  }

  beforeAll(async () => {
    a = await createTestApp({}, { overrides: [{ provide: DeviceAuthenticator, useValue: authA }] });
    authA.db = a.db;
    urlA = await listen(a);
    b = await createTestApp(
      {},
      { databaseUrl: a.databaseUrl, overrides: [{ provide: DeviceAuthenticator, useValue: authB }] },
    );
    authB.db = b.db;
    urlB = await listen(b);

    admin = await a.fixtures.user();
    org = await a.fixtures.org(admin);
    key = await a.fixtures.signingKey(org, 'k');
    await a.http().post(`/api/orgs/${org}/products`).set(admin.auth).send({ name: product }).expect(201);
    dir = await mkdtemp(join(tmpdir(), 'fleethub-gw-'));
    const built = await buildFw(join(dir, 'fw.fw'), {
      signWith: key.privateKey,
      meta: { product, version: '2.0.0' },
      resources: [{ name: 'rootfs.img', size: 3 * 1024 * 1024 + 17 }],
    });
    firmwareBytes = await readFile(built.path);
    firmwareUuid = computeMetaUuid(built.metaConf);
    await a
      .http()
      .post(`/api/orgs/${org}/products/${product}/firmwares`)
      .set(admin.auth)
      .attach('firmware', built.path)
      .expect(201);
  });

  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
  });

  afterAll(async () => {
    await b?.close();
    await a?.close();
    await rm(dir, { recursive: true, force: true });
  });

  async function newDevice(): Promise<string> {
    const identifier = `dev-${randomBytes(4).toString('hex')}`;
    await a
      .http()
      .post(`/api/orgs/${org}/products/${product}/devices`)
      .set(admin.auth)
      .send({ identifier })
      .expect(201);
    return identifier;
  }

  async function connect(identifier: string, url = urlA): Promise<DeviceSocketClient> {
    const client = await DeviceSocketClient.connect(url, { 'x-test-device': identifier });
    clients.push(client);
    return client;
  }

  async function connectJoined(
    identifier: string,
    url = urlA,
    params: Record<string, unknown> = joinParams(),
  ) {
    const client = await connect(identifier, url);
    const reply = await client.join('device', params);
    expect(reply[4]).toEqual({ status: 'ok', response: {} });
    return client;
  }

  const showDevice = async (identifier: string) =>
    (await a.http().get(`/api/devices/${identifier}`).set(admin.auth).expect(200)).body.data as Record<
      string,
      unknown
    >;

  /** A heartbeat round trip: every frame sent before it has been handled by then. */
  async function settle(client: DeviceSocketClient): Promise<Frame> {
    return client.heartbeat();
  }

  describe('socket', () => {
    it('refuses a failed authentication with a plain 401: empty body, Date, Connection: close', async () => {
      const res = await DeviceSocketClient.refused(urlA, { 'x-test-device': 'nobody-here' });
      expect(res.status).toBe(401);
      expect(res.body).toBe('');
      expect(new Date(res.headers.date!).getTime()).toBeGreaterThan(Date.now() - 60_000);
      expect(res.headers.connection).toBe('close');
    });

    it('refuses any vsn but 2.0.0 with 403, and unknown paths with 404', async () => {
      const identifier = await newDevice();
      const headers = { 'x-test-device': identifier };
      expect((await DeviceSocketClient.refused(urlA, headers, '/device-socket/websocket')).status).toBe(403);
      expect(
        (await DeviceSocketClient.refused(urlA, headers, '/device-socket/websocket?vsn=3.0.0')).status,
      ).toBe(403);
      expect((await DeviceSocketClient.refused(urlA, headers, '/elsewhere?vsn=2.0.0')).status).toBe(404);
    });

    it('accepts /socket/websocket as well', async () => {
      const identifier = await newDevice();
      const client = await DeviceSocketClient.connect(
        urlA,
        { 'x-test-device': identifier },
        '/socket/websocket?vsn=2.0.0',
      );
      clients.push(client);
      expect((await client.heartbeat())[4]).toEqual({ status: 'ok', response: {} });
    });

    it('answers joins and heartbeats with ok {}', async () => {
      const client = await connect(await newDevice());
      const join = await client.join('device', joinParams());
      expect(join).toEqual(['1', '1', 'device', 'phx_reply', { status: 'ok', response: {} }]);
      client.send(null, '7', 'phoenix', 'heartbeat', {});
      expect(await client.next((f) => f[1] === '7')).toEqual([
        null,
        '7',
        'phoenix',
        'phx_reply',
        { status: 'ok', response: {} },
      ]);
    });

    it('never replies to device pushes, and drops pushes on topics not joined', async () => {
      const client = await connectJoined(await newDevice());
      await client.next((f) => f[3] === 'extensions:get');
      client.push('device', 'report_network_interface', { interface: 'eth0' });
      client.push('device', 'rebooting', {});
      client.push('device', 'firmware_validated', {});
      client.push('device', 'no_such_event', { x: 1 });
      client.send(null, '90', 'device', 'status_update', { status: 'received' }); // no join_ref (old Slipstream)
      client.send('99', '91', 'console', 'up', { data: 'not joined' });
      client.send('99', '92', 'nowhere', 'anything', {});
      const hb = await settle(client);
      expect(hb[3]).toBe('phx_reply');
      expect(client.pending()).toEqual([]);
    });

    it('survives malformed frames and keeps answering', async () => {
      const client = await connectJoined(await newDevice());
      for (const junk of [
        '',
        'null',
        '{}',
        '[1,2,3]',
        '[null,null,5,"x",{}]',
        '["1","2","device"]',
        '{"a":',
        '[]',
      ]) {
        client.sendRaw(junk);
      }
      client.ws.send(Buffer.from([0x82, 0x00]), { binary: true });
      client.send('1', '50', 'device', 'fwup_progress', 'not an object');
      client.send('1', '51', 'device', 'fwup_progress', { value: 'NaN', stage: 5 });
      expect((await settle(client))[4]).toEqual({ status: 'ok', response: {} });
    });

    it('closes an older socket when the same device connects again', async () => {
      const identifier = await newDevice();
      const first = await connectJoined(identifier);
      const second = await connectJoined(identifier);
      expect(await first.closed).toBe(1000);
      expect((await second.heartbeat())[4]).toEqual({ status: 'ok', response: {} });
      expect((await showDevice(identifier)).connection_status).toBe('connected');
    });

    it('closes the older socket on another instance too', async () => {
      const identifier = await newDevice();
      const onA = await connectJoined(identifier, urlA);
      const onB = await connectJoined(identifier, urlB);
      expect(await onA.closed).toBe(1000);
      await settle(onB);
      const [row] = await a.db.query(`SELECT connected_instance_id FROM devices WHERE identifier = $1`, [
        identifier,
      ]);
      expect(row.connected_instance_id).toBe(b.app.get(DeviceGateway).instanceId);
      expect((await showDevice(identifier)).connection_status).toBe('connected');
    });

    it('closes the older sockets on another instance of many devices connecting at once', async () => {
      const identifiers = await Promise.all(Array.from({ length: 12 }, () => newDevice()));
      const onA = await Promise.all(identifiers.map((identifier) => connectJoined(identifier, urlA)));
      const onB = await Promise.all(identifiers.map((identifier) => connectJoined(identifier, urlB)));
      expect(await Promise.all(onA.map((client) => client.closed))).toEqual(identifiers.map(() => 1000));
      for (const client of onB) await settle(client);
      const rows = await a.db.query(
        `SELECT DISTINCT connection_status, connected_instance_id FROM devices WHERE identifier = ANY($1)`,
        [identifiers],
      );
      expect(rows).toEqual([
        { connection_status: 'connected', connected_instance_id: b.app.get(DeviceGateway).instanceId },
      ]);
    });

    it('keeps a device connected that reconnects before its disconnection is written', async () => {
      const identifier = await newDevice();
      const first = await connectJoined(identifier);
      await first.close();
      const second = await connectJoined(identifier);
      await new Promise((r) => setTimeout(r, 300));
      await settle(second);
      expect((await showDevice(identifier)).connection_status).toBe('connected');
    });
  });

  describe('device channel', () => {
    it('stores the firmware metadata and marks the device connected', async () => {
      const identifier = await newDevice();
      expect((await showDevice(identifier)).connection_status).toBe('not_seen');
      await connectJoined(identifier);
      const device = await showDevice(identifier);
      expect(device).toMatchObject({
        version: '1.0.0',
        connection_status: 'connected',
        online: true,
        last_communication: expect.stringMatching(/Z$/),
        firmware_metadata: {
          uuid: OLD_UUID,
          product: 'gadget',
          version: '1.0.0',
          platform: 'rpi4',
          architecture: 'aarch64',
          author: 'Team',
          description: 'first',
          vcs_identifier: 'abc123',
          misc: 'misc',
          fwup_version: '1.10.1',
        },
      });
      const [row] = await a.db.query(`SELECT firmware_platform FROM devices WHERE identifier = $1`, [
        identifier,
      ]);
      expect(row.firmware_platform).toBe('rpi4');
    });

    it('pushes fwup_public_keys on request, then extensions:get', async () => {
      const client = await connectJoined(
        await newDevice(),
        urlA,
        joinParams(OLD_UUID, { fwup_public_keys: 'on_connect' }),
      );
      const keys = await client.next();
      expect(keys).toEqual(['1', null, 'device', 'fwup_public_keys', { keys: [key.publicKey] }]);
      expect(await client.next()).toEqual(['1', null, 'device', 'extensions:get', {}]);
    });

    it('does not push extensions:get to devices older than API 2.2.0', async () => {
      const client = await connectJoined(
        await newDevice(),
        urlA,
        joinParams(OLD_UUID, { device_api_version: '2.1.0' }),
      );
      await settle(client);
      expect(client.pending()).toEqual([]);
    });

    it('marks the device disconnected when the socket closes', async () => {
      const identifier = await newDevice();
      const client = await connectJoined(identifier);
      await client.close();
      const device = await eventually(
        () => showDevice(identifier),
        (d) => d.connection_status === 'disconnected',
      );
      expect(device).toMatchObject({ connection_status: 'disconnected', online: false });
    });
  });

  describe('updates', () => {
    async function upgrade(identifier: string, via: TestApp = a) {
      await via
        .http()
        .post(`/api/devices/${identifier}/upgrade`)
        .set(admin.auth)
        .send({ uuid: firmwareUuid })
        .expect(204);
    }

    function localUrl(firmwareUrl: string, base: string): string {
      const url = new URL(firmwareUrl);
      return `${base}${url.pathname}${url.search}`;
    }

    it('pushes a manual upgrade at once, serves the file, records progress, completes on rejoin', async () => {
      const identifier = await newDevice();
      const client = await connectJoined(identifier);
      await client.next((f) => f[3] === 'extensions:get');
      await upgrade(identifier);
      const update = await client.next((f) => f[3] === 'update');
      expect(update.slice(0, 4)).toEqual(['1', null, 'device', 'update']);
      const payload = update[4] as Record<string, unknown>;
      const [fw] = await a.db.query(
        `SELECT author, description, misc, vcs_identifier FROM firmwares WHERE uuid = $1`,
        [firmwareUuid],
      );
      expect(payload).toEqual({
        update_available: true,
        firmware_url: expect.stringMatching(
          /^http:\/\/.+\/device-firmware\/\d+\/[0-9a-f-]{36}\.fw\?expires=\d+&signature=/,
        ),
        firmware_meta: {
          architecture: 'aarch64',
          author: fw.author,
          description: fw.description,
          misc: fw.misc,
          platform: 'rpi4',
          product,
          uuid: firmwareUuid,
          vcs_identifier: fw.vcs_identifier,
          version: '2.0.0',
        },
        size: firmwareBytes.length,
        checksum: expect.stringMatching(/^[0-9A-F]{64}$/),
        partials_checksums: [
          expect.stringMatching(/^[0-9A-F]{64}$/),
          expect.stringMatching(/^[0-9A-F]{64}$/),
          expect.stringMatching(/^[0-9A-F]{64}$/),
          expect.stringMatching(/^[0-9A-F]{64}$/),
        ],
        deployment_id: null,
      });
      const [pending] = await a.db.query(
        `SELECT delivered_at FROM pending_updates pu JOIN devices d ON d.id = pu.device_id WHERE d.identifier = $1`,
        [identifier],
      );
      expect(pending.delivered_at).not.toBeNull();

      // The link works, in full and by range, with the headers a device needs.
      const link = localUrl(payload.firmware_url as string, urlA);
      const full = await fetch(link);
      expect(full.status).toBe(200);
      expect(full.headers.get('content-length')).toBe(String(firmwareBytes.length));
      expect(full.headers.get('accept-ranges')).toBe('bytes');
      expect(Buffer.from(await full.arrayBuffer()).equals(firmwareBytes)).toBe(true);
      const resumed = await fetch(link, { headers: { Range: `bytes=1000-${firmwareBytes.length}` } });
      expect(resumed.status).toBe(206);
      expect(resumed.headers.get('content-range')).toBe(
        `bytes 1000-${firmwareBytes.length - 1}/${firmwareBytes.length}`,
      );
      expect(Buffer.from(await resumed.arrayBuffer()).equals(firmwareBytes.subarray(1000))).toBe(true);
      const middle = await fetch(link, { headers: { Range: 'bytes=10-19' } });
      expect(middle.status).toBe(206);
      expect(middle.headers.get('content-length')).toBe('10');
      expect((await fetch(link, { headers: { Range: `bytes=${firmwareBytes.length}-` } })).status).toBe(416);
      // Links are checked: any change to the path, expiry or signature is refused.
      const bad = new URL(link);
      bad.searchParams.set('signature', 'x'.repeat(43));
      const refused = await fetch(bad);
      expect(refused.status).toBe(403);
      expect(await refused.json()).toEqual(NOT_FOUND);
      const expired = new URL(link);
      expired.searchParams.set('expires', '1000');
      expect((await fetch(expired)).status).toBe(403);
      expect((await fetch(`${urlA}/device-firmware/1/${firmwareUuid}.fw`)).status).toBe(403);

      // Progress is recorded; no reply is ever sent.
      client.push('device', 'status_update', { status: 'received' });
      client.push('device', 'status_update', { status: 'started', downloader_network_interface: 'eth0' });
      client.push('device', 'fwup_progress', { stage: 'updating', value: 42 });
      await settle(client);
      expect(client.pending()).toEqual([]);
      const [progress] = await a.db.query(
        `SELECT status, progress FROM pending_updates pu JOIN devices d ON d.id = pu.device_id WHERE d.identifier = $1`,
        [identifier],
      );
      expect(progress).toEqual({ status: 'updating', progress: 42 });

      // The device reboots into the new firmware and joins with its uuid: the update is complete.
      client.push('device', 'fwup_progress', { stage: 'updating', value: 100 });
      client.push('device', 'status_update', { status: 'completed' });
      await settle(client);
      await client.close();
      const after = await connectJoined(
        identifier,
        urlA,
        joinParams(firmwareUuid, { nerves_fw_version: '2.0.0' }),
      );
      await settle(after);
      expect(after.pending().filter((f) => f[3] === 'update')).toEqual([]);
      const rows = await a.db.query(
        `SELECT 1 FROM pending_updates pu JOIN devices d ON d.id = pu.device_id WHERE d.identifier = $1`,
        [identifier],
      );
      expect(rows).toEqual([]);
      expect((await showDevice(identifier)).version).toBe('2.0.0');
    });

    it('updates an ESP-IDF device: its app descriptor is its firmware, and the upgrade completes on rejoin', async () => {
      const espProduct = 'esp-gadget';
      await a.http().post(`/api/orgs/${org}/products`).set(admin.auth).send({ name: espProduct }).expect(201);
      await a
        .http()
        .patch(`/api/orgs/${org}/products/${espProduct}`)
        .set(admin.auth)
        .send({ allowed_update_tools: ['fwup', 'esp-idf'], allow_unsigned_esp_idf_firmware: true })
        .expect(200);
      const imagePath = join(dir, 'app.bin');
      const image = await writeEspImage(imagePath, { projectName: espProduct, version: 'v1.4', chipId: 9 });
      await a
        .http()
        .post(`/api/orgs/${org}/products/${espProduct}/firmwares`)
        .set(admin.auth)
        .attach('firmware', imagePath)
        .expect(201);
      const identifier = `esp-${randomBytes(4).toString('hex')}`;
      await a
        .http()
        .post(`/api/orgs/${org}/products/${espProduct}/devices`)
        .set(admin.auth)
        .send({ identifier })
        .expect(201);
      const espJoin = (elfSha256: Buffer, version: string) => ({
        esp_idf_project_name: espProduct,
        esp_idf_version: version,
        esp_idf_app_elf_sha256: elfSha256.toString('hex'),
        esp_idf_ver: 'v5.2.1',
        esp_idf_chip_id: 9,
        device_api_version: '2.3.0',
      });

      const running = randomBytes(32);
      const client = await connectJoined(identifier, urlA, espJoin(running, '1.3.0'));
      await settle(client);
      const before = await showDevice(identifier);
      expect(before.version).toBe('1.3.0');
      expect(before.firmware_metadata).toEqual({
        uuid: uuidOf(running),
        product: espProduct,
        version: '1.3.0',
        platform: 'esp32s3',
        architecture: 'xtensa',
        description: 'ESP-IDF v5.2.1',
        author: null,
        fwup_version: null,
        vcs_identifier: null,
        misc: null,
        id: null,
      });

      await a
        .http()
        .post(`/api/devices/${identifier}/upgrade`)
        .set(admin.auth)
        .send({ uuid: image.uuid })
        .expect(204);
      const update = await client.next((f) => f[3] === 'update');
      expect(update[4]).toMatchObject({
        update_available: true,
        firmware_url: expect.stringMatching(/\/device-firmware\/\d+\/[0-9a-f-]{36}\.bin\?expires=/),
        firmware_meta: { uuid: image.uuid, product: espProduct, version: '1.4.0', platform: 'esp32s3' },
        size: image.bytes.length,
      });
      const served = await fetch(localUrl((update[4] as { firmware_url: string }).firmware_url, urlA));
      expect(served.status).toBe(200);
      expect(Buffer.from(await served.arrayBuffer()).equals(image.bytes)).toBe(true);
      await client.close();

      // Rebooted into the new image: it reports the new app_elf_sha256, whose uuid is the firmware's.
      const after = await connectJoined(identifier, urlA, espJoin(image.elfSha256, '1.4'));
      await settle(after);
      expect(after.pending().filter((f) => f[3] === 'update')).toEqual([]);
      const pending = await a.db.query(
        `SELECT 1 FROM pending_updates pu JOIN devices d ON d.id = pu.device_id WHERE d.identifier = $1`,
        [identifier],
      );
      expect(pending).toEqual([]);
      expect((await showDevice(identifier)).version).toBe('1.4.0');
    });

    it('delivers an upgrade requested while offline when the device connects', async () => {
      const identifier = await newDevice();
      await upgrade(identifier);
      const client = await connectJoined(identifier);
      const update = await client.next((f) => f[3] === 'update');
      expect((update[4] as { firmware_meta: { uuid: string } }).firmware_meta.uuid).toBe(firmwareUuid);
    });

    it('removes a failed update', async () => {
      const identifier = await newDevice();
      const client = await connectJoined(identifier);
      await upgrade(identifier);
      await client.next((f) => f[3] === 'update');
      client.push('device', 'status_update', { status: 'failed', reason: 'FWUP error : bad' });
      await settle(client);
      const rows = await a.db.query(
        `SELECT 1 FROM pending_updates pu JOIN devices d ON d.id = pu.device_id WHERE d.identifier = $1`,
        [identifier],
      );
      expect(rows).toEqual([]);
    });

    it('reaches a device connected to another instance', async () => {
      const identifier = await newDevice();
      const client = await connectJoined(identifier, urlA);
      await upgrade(identifier, b);
      const update = await client.next((f) => f[3] === 'update');
      expect((update[4] as { firmware_meta: { uuid: string } }).firmware_meta.uuid).toBe(firmwareUuid);
    });
  });

  describe('console', () => {
    const code = (identifier: string, body: object, via: TestApp = a) =>
      via.http().post(`/api/devices/${identifier}/code`).set(admin.auth).send(body);

    it('sends one dn per character, then \\r', async () => {
      const identifier = await newDevice();
      const client = await connectJoined(identifier);
      expect(await client.join('console', { console_version: '2.0.0', device_api_version: '2.3.0' })).toEqual(
        ['2', '2', 'console', 'phx_reply', { status: 'ok', response: {} }],
      );
      await code(identifier, { code: 'IO.puts("é😀")' }).expect(204);
      const frames = await client.many('console', 'dn', 14);
      expect(frames.map((f) => (f[4] as { data: string }).data)).toEqual([
        ...'IO.puts("é😀")'.match(/./gu)!,
        '\r',
      ]);
      expect(frames[0]).toEqual(['2', null, 'console', 'dn', { data: 'I' }]);
    });

    it('answers 409 when the device has no console connection', async () => {
      const identifier = await newDevice();
      await code(identifier, { code: '1' }).expect(409, DEVICE_NOT_CONNECTED);
      await connectJoined(identifier);
      await code(identifier, { code: '1' }).expect(409);
      await code(identifier, { code: '1' }, b).expect(409);
    });

    it('keeps what the device prints, readable through the console route', async () => {
      const identifier = await newDevice();
      const client = await connectJoined(identifier);
      await client.join('console', { console_version: '2.0.0' });
      client.push('console', 'up', { data: 'iex(1)> ' });
      client.push('console', 'up', { data: '2\r\n' });
      await settle(client);
      const res = await a.http().get(`/api/devices/${identifier}/console`).set(admin.auth).expect(200);
      expect(res.body).toEqual({
        data: { output: 'iex(1)> 2\r\n', updated_at: expect.stringMatching(/Z$/) },
      });
      const viewer = await a.fixtures.user();
      await a.fixtures.addMember(org, viewer, 'view');
      await a.http().get(`/api/devices/${identifier}/console`).set(viewer.auth).expect(403);
      const empty = await newDevice();
      expect((await a.http().get(`/api/devices/${empty}/console`).set(admin.auth).expect(200)).body).toEqual({
        data: { output: '', updated_at: null },
      });
    });

    it('bounds the kept output to the last 64 KiB', async () => {
      const identifier = await newDevice();
      const client = await connectJoined(identifier);
      await client.join('console', { console_version: '2.0.0' });
      client.push('console', 'up', { data: 'a'.repeat(40_000) });
      await settle(client);
      await a.http().get(`/api/devices/${identifier}/console`).set(admin.auth).expect(200);
      client.push('console', 'up', { data: 'b'.repeat(40_000) });
      await settle(client);
      const { output } = (await a.http().get(`/api/devices/${identifier}/console`).set(admin.auth)).body.data;
      expect(output.length).toBe(64 * 1024);
      expect(output.endsWith('b'.repeat(40_000))).toBe(true);
    });

    it('reaches a console connected to another instance, code larger than one bus message', async () => {
      const identifier = await newDevice();
      const client = await connectJoined(identifier, urlA);
      await client.join('console', { console_version: '2.0.0' });
      const text = 'x'.repeat(2500) + '"\\\u0001é';
      await code(identifier, { code: text }, b).expect(204);
      const frames = await client.many('console', 'dn', [...text].length + 1);
      expect(frames.map((f) => (f[4] as { data: string }).data).join('')).toBe(`${text}\r`);
    });
  });

  describe('device actions (NervesHub parity)', () => {
    const nested = (identifier: string) => `/api/orgs/${org}/products/${product}/devices/${identifier}`;
    const audited = async (identifier: string) =>
      (
        await a.db.query<{ action: string }[]>(
          `SELECT action FROM audit_logs WHERE target_type = 'device' AND target_id = $1 ORDER BY id`,
          [identifier],
        )
      ).map((row) => row.action);

    it('reboot reaches the device channel on the instance holding the socket, from either instance, audited', async () => {
      const identifier = await newDevice();
      const client = await connectJoined(identifier, urlA);
      await b.http().post(`/api/devices/${identifier}/reboot`).set(admin.auth).expect(204, '');
      expect(await client.next((f) => f[3] === 'reboot')).toEqual(['1', null, 'device', 'reboot', {}]);
      await a
        .http()
        .post(`${nested(identifier)}/reboot`)
        .set(admin.auth)
        .expect(204);
      expect((await client.next((f) => f[3] === 'reboot'))[4]).toEqual({});
      expect(await audited(identifier)).toEqual(['device.create', 'device.reboot', 'device.reboot']);
    });

    it('reboot of a device without a device channel is a 409 on any instance, and nothing is audited', async () => {
      const identifier = await newDevice();
      await a
        .http()
        .post(`/api/devices/${identifier}/reboot`)
        .set(admin.auth)
        .expect(409, DEVICE_NOT_CONNECTED);
      const client = await connect(identifier, urlA);
      await settle(client);
      await b
        .http()
        .post(`${nested(identifier)}/reboot`)
        .set(admin.auth)
        .expect(409);
      await a
        .http()
        .post(`${nested(identifier)}/reboot`)
        .set(admin.auth)
        .expect(409);
      expect(await audited(identifier)).toEqual(['device.create']);
    });

    it('reconnect closes the socket wherever it is; the device connects again', async () => {
      const identifier = await newDevice();
      const first = await connectJoined(identifier, urlA);
      await b
        .http()
        .post(`${nested(identifier)}/reconnect`)
        .set(admin.auth)
        .expect(204, '');
      expect(await first.closed).toBe(1000);
      const second = await connectJoined(identifier, urlB);
      await settle(second);
      await a.http().post(`/api/devices/${identifier}/reconnect`).set(admin.auth).expect(204);
      expect(await second.closed).toBe(1000);
      const after = await eventually(
        () => showDevice(identifier),
        (device) => device.connection_status === 'disconnected',
      );
      expect(after.connection_status).toBe('disconnected');
      await a
        .http()
        .post(`/api/devices/${identifier}/reconnect`)
        .set(admin.auth)
        .expect(409, DEVICE_NOT_CONNECTED);
      expect(await audited(identifier)).toEqual(['device.create', 'device.reconnect', 'device.reconnect']);
    });

    it('code goes to the console through the product path as well', async () => {
      const identifier = await newDevice();
      const client = await connectJoined(identifier, urlB);
      await client.join('console', { console_version: '2.0.0' });
      await a
        .http()
        .post(`${nested(identifier)}/code`)
        .set(admin.auth)
        .send({ code: 'h' })
        .expect(204);
      const frames = await client.many('console', 'dn', 2);
      expect(frames.map((f) => (f[4] as { data: string }).data)).toEqual(['h', '\r']);
      await a
        .http()
        .post(`${nested(identifier)}/code`)
        .set(admin.auth)
        .send({})
        .expect(422);
    });

    it('penalty: out of the box, attempts forgotten, automatic updates on; manage role needed', async () => {
      const identifier = await newDevice();
      await a.db.query(
        `UPDATE devices SET updates_blocked_until = now() + interval '1 day', updates_enabled = false,
                update_attempts = ARRAY[now(), now()] WHERE identifier = $1`,
        [identifier],
      );
      const viewer = await a.fixtures.user();
      await a.fixtures.addMember(org, viewer, 'view');
      await a
        .http()
        .delete(`${nested(identifier)}/penalty`)
        .set(viewer.auth)
        .expect(403);
      await b.http().delete(`/api/devices/${identifier}/penalty`).set(admin.auth).expect(204, '');
      const [row] = await a.db.query<
        { updates_blocked_until: Date | null; updates_enabled: boolean; attempts: number }[]
      >(
        `SELECT updates_blocked_until, updates_enabled, cardinality(update_attempts) AS attempts
           FROM devices WHERE identifier = $1`,
        [identifier],
      );
      expect(row).toEqual({ updates_blocked_until: null, updates_enabled: true, attempts: 0 });
      await a
        .http()
        .delete(`${nested(identifier)}/penalty`)
        .set(admin.auth)
        .expect(204);
      await a
        .http()
        .delete(`${nested('no-such-device')}/penalty`)
        .set(admin.auth)
        .expect(404);
      expect(await audited(identifier)).toEqual([
        'device.create',
        'device.penalty_clear',
        'device.penalty_clear',
      ]);
    });

    describe('support scripts', () => {
      const scripts = () => `/api/orgs/${org}/products/${product}/scripts`;
      async function newScript(text: string): Promise<{ id: string; name: string }> {
        const name = `script-${randomBytes(3).toString('hex')}`;
        const res = await a.http().post(scripts()).set(admin.auth).send({ name, text }).expect(201);
        return { id: res.body.data.id as string, name };
      }
      const run = (identifier: string, nameOrId: string, via: TestApp = a, query = '') =>
        via.http().post(`/api/devices/${identifier}/scripts/${nameOrId}${query}`).set(admin.auth);

      it('runs through scripts/run on the device channel, from another instance, answering text/plain', async () => {
        const { name, id } = await newScript('IO.puts("hello")\n:ok');
        const identifier = await newDevice();
        const client = await connectJoined(identifier, urlA);
        const answer = run(identifier, name, b, '?timeout=5000').then((res) => res);
        const sent = await client.next((f) => f[3] === 'scripts/run');
        const { text, ref } = sent[4] as { text: string; ref: string };
        expect(text).toBe('IO.puts("hello")\n:ok');
        expect(ref).toMatch(/^[A-Za-z0-9+/]{6}$/);
        client.push('device', 'scripts/run', {
          ref: 'other',
          result: 'completed',
          output: 'no',
          return: 'no',
        });
        client.push('device', 'scripts/run', { ref, result: 'completed', output: 'hello\n', return: ':ok' });
        const res = await answer;
        expect(res.status).toBe(200);
        expect(res.headers['content-type']).toBe('text/plain; charset=utf-8');
        expect(res.text).toBe('hello\n\n:ok');
        // By id as well, on the product path.
        const again = a
          .http()
          .post(`/api/orgs/${org}/products/${product}/devices/${identifier}/scripts/${id}`)
          .set(admin.auth)
          .then((r) => r);
        const second = await client.next((f) => f[3] === 'scripts/run');
        client.push('device', 'scripts/run', {
          ref: (second[4] as { ref: string }).ref,
          output: '',
          return: '2',
        });
        expect((await again).text).toBe('2');
      });

      it('runs of one device wait for each other: outputs never mix', async () => {
        const { name } = await newScript('1 + 1');
        const identifier = await newDevice();
        const client = await connectJoined(identifier, urlA);
        const first = run(identifier, name).then((res) => res);
        const second = run(identifier, name, b).then((res) => res);
        const one = await client.next((f) => f[3] === 'scripts/run');
        await settle(client);
        expect(client.pending().filter((f) => f[3] === 'scripts/run')).toEqual([]);
        client.push('device', 'scripts/run', {
          ref: (one[4] as { ref: string }).ref,
          output: 'first',
          return: '',
        });
        const two = await client.next((f) => f[3] === 'scripts/run');
        client.push('device', 'scripts/run', {
          ref: (two[4] as { ref: string }).ref,
          output: 'second',
          return: '',
        });
        expect([(await first).text, (await second).text].sort()).toEqual(['first', 'second']);
      });

      it('older devices get the script typed into the console and answered up to the end marker', async () => {
        const { name } = await newScript('IO.puts(:hi)');
        const identifier = await newDevice();
        const client = await connectJoined(
          identifier,
          urlB,
          joinParams(OLD_UUID, { device_api_version: '2.0.0' }),
        );
        await client.join('console', { console_version: '2.0.0' });
        const answer = run(identifier, name, a).then((res) => res);
        const typed = await client.next((f) => f[2] === 'console' && f[3] === 'dn');
        expect((typed[4] as { data: string }).data).toBe('IO.puts(:hi)\n# [NERVESHUB:END]');
        expect(((await client.next((f) => f[3] === 'dn'))[4] as { data: string }).data).toBe('\r');
        client.push('console', 'up', { data: 'hi\n:ok\n' });
        client.push('console', 'up', { data: 'iex(2)> # [NERVESHUB:END]' });
        const res = await answer;
        expect(res.status).toBe(200);
        expect(res.text).toBe('hi\n:ok');
      });

      it("403 with NervesHub's message when the device is away or silent; 404 unknown script; 422 timeout", async () => {
        const { name } = await newScript('1');
        const identifier = await newDevice();
        const unavailable = { errors: { detail: 'device not available or responding' } };
        await run(identifier, name).expect(403, unavailable);
        const client = await connectJoined(identifier, urlA);
        await run(identifier, name, b, '?timeout=300').expect(403, unavailable);
        await run(identifier, name, a, '?timeout=300').expect(403, unavailable);
        expect(client.pending().filter((f) => f[3] === 'scripts/run')).toHaveLength(2);
        await run(identifier, 'no-such-script').expect(404, NOT_FOUND);
        for (const bad of ['0', '-1', 'abc', '300001', '1.5']) {
          const res = await run(identifier, name, a, `?timeout=${bad}`).expect(422);
          expect(Object.keys(res.body.errors)).toEqual(['timeout']);
        }
        const viewer = await a.fixtures.user();
        await a.fixtures.addMember(org, viewer, 'view');
        await a
          .http()
          .post(`/api/devices/${identifier}/scripts/${name}?timeout=100`)
          .set(viewer.auth)
          .expect(403, unavailable);
      });

      it("lists the scripts of the device's product", async () => {
        const created = await newScript('x');
        const identifier = await newDevice();
        const res = await b
          .http()
          .get(`/api/devices/${identifier}/scripts?pagination[page_size]=500`)
          .set(admin.auth)
          .expect(200);
        expect(res.body.data.map((s: { name: string }) => s.name)).toContain(created.name);
        expect(res.body.pagination).toMatchObject({ page_number: 1, page_size: 500 });
      });
    });

    it("PUT takes NervesHub's CLI body (identifier repeated, string booleans) and answers 201 with the device", async () => {
      const identifier = await newDevice();
      const put = (body: object) => a.http().put(nested(identifier)).set(admin.auth).send(body);
      const res = await put({ identifier, updates_enabled: 'false' }).expect(201);
      expect(res.body.data).toMatchObject({ identifier, updates_enabled: false });
      expect((await put({ identifier, tags: ['a', 'b'] }).expect(201)).body.data.tags).toBe('a,b');
      expect((await put({ updates_enabled: true }).expect(201)).body.data.updates_enabled).toBe(true);
      const renamed = await put({ identifier: 'another-name' }).expect(422);
      expect(renamed.body).toEqual({ errors: { identifier: ['cannot be changed'] } });
      await put({ updates_enabled: 'maybe' }).expect(422);
      await a
        .http()
        .put(nested('no-such-device'))
        .set(admin.auth)
        .send({ identifier: 'no-such-device' })
        .expect(404);
      expect((await showDevice(identifier)).updates_enabled).toBe(true);
    });
  });

  describe('extensions', () => {
    it('offers network_identity, requests identities and claims the reported iroh endpoint', async () => {
      const identifier = await newDevice();
      const client = await connectJoined(identifier);
      await client.next((f) => f[3] === 'extensions:get');
      const reply = await client.join('extensions', {
        health: '0.0.1',
        network_identity: '0.0.1',
        geo: '0.0.1',
      });
      expect(reply[4]).toEqual({ status: 'ok', response: ['network_identity'] });
      client.push('extensions', 'network_identity:attached', {});
      expect(await client.next((f) => f[2] === 'extensions')).toEqual([
        client.joinRefs.get('extensions'),
        null,
        'extensions',
        'network_identity:request',
        {},
      ]);
      // Malformed reports are ignored, never answered, never fatal.
      client.push('extensions', 'network_identity:report', { identities: 'nope' });
      client.push('extensions', 'network_identity:report', { identities: [null, 5, { service: 'iroh' }] });
      const endpoint = randomBytes(32).toString('hex');
      client.push('extensions', 'network_identity:report', {
        identities: [
          { service: 'tailscale', identifier: 'ts-1', details: {} },
          { service: 'iroh', identifier: endpoint, details: { relay: 'https://relay.example' } },
        ],
      });
      await settle(client);
      expect(client.pending()).toEqual([]);
      const res = await a
        .http()
        .get(`/api/orgs/${org}/iroh_endpoints/${endpoint}`)
        .set(admin.auth)
        .expect(200);
      expect(res.body.data).toMatchObject({ identifier: endpoint, source: 'device_reported' });
      expect(JSON.stringify(res.body.data.owner)).toContain(identifier);
    });

    it('ignores a report nested too deeply or holding too many values, as any malformed frame', async () => {
      const identifier = await newDevice();
      const client = await connectJoined(identifier);
      await client.next((f) => f[3] === 'extensions:get');
      await client.join('extensions', { network_identity: '0.0.1' });
      client.push('extensions', 'network_identity:attached', {});
      await client.next((f) => f[3] === 'network_identity:request');
      const complaints = [jest.spyOn(Logger.prototype, 'error'), jest.spyOn(Logger.prototype, 'warn')];
      const report = (identities: string) =>
        `["${client.joinRefs.get('extensions')}","${client.nextRef()}","extensions",` +
        `"network_identity:report",{"identities":${identities}}]`;
      const iroh = (endpoint: string, details: string) =>
        `{"service":"iroh","identifier":"${endpoint}","details":${details}}`;
      const [deep, besideDeep, wide, later] = Array.from({ length: 4 }, () =>
        randomBytes(32).toString('hex'),
      );
      try {
        client.sendRaw(report(`[${iroh(deep, `${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}`)}]`));
        client.sendRaw(report(`[${iroh(besideDeep, '{}')},${'['.repeat(200_000)}${']'.repeat(200_000)}]`));
        const keys = Array.from({ length: 60_000 }, (_, i) => `"k${i}":1`).join(',');
        client.sendRaw(report(`[${iroh(wide, `{${keys}}`)}]`));
        await settle(client);
        expect(client.pending()).toEqual([]);
        for (const complaint of complaints) expect(complaint).not.toHaveBeenCalled();
      } finally {
        for (const complaint of complaints) complaint.mockRestore();
      }
      for (const endpoint of [deep, besideDeep, wide]) {
        await a.http().get(`/api/orgs/${org}/iroh_endpoints/${endpoint}`).set(admin.auth).expect(404);
      }
      client.sendRaw(report(`[${iroh(later, '{"a":{"b":[1]}}')}]`));
      await settle(client);
      await a.http().get(`/api/orgs/${org}/iroh_endpoints/${later}`).set(admin.auth).expect(200);
    });

    it('answers a message for an extension that was not offered with the detach error', async () => {
      const client = await connectJoined(await newDevice());
      await client.join('extensions', { health: '0.0.1' });
      const ref = client.push('extensions', 'health:attached', {});
      expect(await client.next((f) => f[1] === ref)).toEqual([
        client.joinRefs.get('extensions'),
        ref,
        'extensions',
        'phx_reply',
        { status: 'error', response: 'detach' },
      ]);
    });
  });

  describe('bus', () => {
    it('reconnects its listener when the connection drops, and keeps delivering', async () => {
      const busBackends = `SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE application_name = 'fleethub-bus' AND datname = current_database() AND backend_start > $1`;
      const [{ n: running }] = await a.db.query(busBackends, ['1970-01-01T00:00:00Z']);
      expect(running).toBe(2);
      const cut = new Date().toISOString();
      await a.db.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
          WHERE application_name = 'fleethub-bus' AND datname = current_database()`,
      );
      const [{ n }] = await eventually(
        () => a.db.query(busBackends, [cut]),
        (rows: { n: number }[]) => rows[0].n === 2,
        10_000,
      );
      expect(n).toBe(2);
      const identifier = await newDevice();
      const client = await connectJoined(identifier, urlA);
      await client.join('console', { console_version: '2.0.0' });
      await a.http().post(`/api/devices/${identifier}/code`).set(admin.auth).send({ code: 'ok' }).expect(204);
      await b.http().post(`/api/devices/${identifier}/code`).set(admin.auth).send({ code: 'ok' }).expect(204);
      expect(await client.many('console', 'dn', 6)).toHaveLength(6);
    });
  });

  describe('presence', () => {
    it('reaps devices held by an instance whose lease ran out', async () => {
      const identifier = await newDevice();
      const dead = '00000000-0000-4000-8000-000000000001';
      // An instance that died without cleaning up: no API makes one.
      await a.db.query(
        `INSERT INTO gateway_instances (id, hostname, lease_until) VALUES ($1, 'gone', now() - interval '1 minute')`,
        [dead],
      );
      await a.db.query(
        `UPDATE devices SET connection_status = 'connected', connected_instance_id = $2 WHERE identifier = $1`,
        [identifier, dead],
      );
      await b.app.get(PresenceService).reap();
      expect((await showDevice(identifier)).connection_status).toBe('disconnected');
      expect(await a.db.query(`SELECT 1 FROM gateway_instances WHERE id = $1`, [dead])).toEqual([]);
      const live = await a.db.query(`SELECT id FROM gateway_instances ORDER BY id`);
      expect(live.map((r: { id: string }) => r.id).sort()).toEqual(
        [a.app.get(DeviceGateway).instanceId, b.app.get(DeviceGateway).instanceId].sort(),
      );
    });

    it('counts the join as the last write of last_communication (activity is written a minute later)', async () => {
      const identifier = await newDevice();
      const before = Date.now();
      await connectJoined(identifier);
      const [{ id }] = await a.db.query(`SELECT id FROM devices WHERE identifier = $1`, [identifier]);
      const presence = a.app.get(PresenceService);
      const { written } = presence as unknown as { written: Map<string, number> };
      expect(written.get(String(id))).toBeGreaterThanOrEqual(before);
    });

    it('writes last_communication in batches', async () => {
      const identifier = await newDevice();
      const client = await connectJoined(identifier);
      await a.db.query(
        `UPDATE devices SET last_communication = now() - interval '1 hour' WHERE identifier = $1`,
        [identifier],
      );
      const presence = a.app.get(PresenceService);
      const [{ id }] = await a.db.query(`SELECT id FROM devices WHERE identifier = $1`, [identifier]);
      // Pretend the last write was long ago: the next frame marks the device for the next flush.
      (presence as unknown as { written: Map<string, number> }).written.set(id, 0);
      await settle(client);
      await presence.flush();
      const device = await showDevice(identifier);
      expect(Date.parse(device.last_communication as string)).toBeGreaterThan(Date.now() - 10_000);
    });

    it('writes disconnections that PostgreSQL aborted as a deadlock victim again', async () => {
      const identifiers = [await newDevice(), await newDevice()];
      const clients = await Promise.all(identifiers.map((identifier) => connectJoined(identifier)));
      const ids: string[] = (
        await a.db.query(`SELECT id FROM devices WHERE identifier = ANY($1) ORDER BY id`, [identifiers])
      ).map((row: { id: string }) => String(row.id));
      // A writer that locks the rows in the opposite order: the batched disconnection (one statement for both)
      // takes the first and waits for the second, this takes the first too, and one of the two must be aborted.
      const other = a.db.createQueryRunner();
      await other.connect();
      try {
        await other.startTransaction();
        await other.query(`SELECT 1 FROM devices WHERE id = $1 FOR UPDATE`, [ids[1]]);
        await Promise.all(clients.map((client) => client.close()));
        const waiting = await eventually(
          () =>
            a.db.query(
              `SELECT 1 FROM pg_stat_activity
                WHERE wait_event_type = 'Lock' AND query LIKE '%connection_status = ''disconnected''%'`,
            ),
          (rows: unknown[]) => rows.length > 0,
        );
        expect(waiting).toHaveLength(1);
        await other.query(`UPDATE devices SET description = 'locked' WHERE id = $1`, [ids[0]]);
        await other.commitTransaction();
      } finally {
        await other.release();
      }
      const statuses = await eventually(
        async () =>
          Promise.all(
            identifiers.map(async (identifier) => (await showDevice(identifier)).connection_status),
          ),
        (values) => values.every((status) => status === 'disconnected'),
      );
      expect(statuses).toEqual(['disconnected', 'disconnected']);
    });

    it('marks every device of an instance disconnected when it shuts down', async () => {
      const c = await createTestApp(
        {},
        { databaseUrl: a.databaseUrl, overrides: [{ provide: DeviceAuthenticator, useValue: authA }] },
      );
      const urlC = await listen(c);
      const identifier = await newDevice();
      const client = await connectJoined(identifier, urlC);
      await c.close();
      expect(await client.closed).toBe(1001);
      expect((await showDevice(identifier)).connection_status).toBe('disconnected');
    });
  });
});
