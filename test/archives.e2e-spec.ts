import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Simulator } from '../src/cli/simulator';
import { runCliProcess } from './support/cli-process';
import { DeviceAuthenticator } from '../src/device-auth/device-authenticator';
import { computeMetaUuid } from '../src/firmware/fwup';
import {
  ARCHIVE_ATTACHED,
  ARCHIVE_NOT_FWUP,
  ARCHIVE_NOT_SIGNED,
  ARCHIVE_SIGNATURE_MISMATCH,
  NO_ARCHIVE_KEYS,
} from '../src/archives/archives.errors';
import { buildFw, type BuildFwOptions, type FwupKeyPair, generateFwupKeyPair } from './support/fw-builder';
import { DeviceSocketClient, type Frame } from './support/device-socket-client';
import { detail, fieldError, NOT_FOUND, ROLE_TOO_LOW } from './support/contract-bodies';
import { eventually } from './support/eventually';
import { FakeAuthenticator } from './support/fake-authenticator';
import type { TestUser } from './support/fixtures';
import { orgScenario } from './support/scenario';
import { createTestApp, type TestApp } from './support/test-app';

/** Two instances on one database (devices connect to either; API calls go to either), fake device auth. */
describe('archives', () => {
  const authA = new FakeAuthenticator();
  const authB = new FakeAuthenticator();
  let a: TestApp;
  let b: TestApp;
  let urlA: string;
  let urlB: string;
  let admin: TestUser;
  let viewer: TestUser;
  let org: string;
  let key: FwupKeyPair;
  let dir: string;
  let firmwareUuid: string;
  let counter = 0;
  const product = 'gadget';
  const group = 'field';
  const base = () => `/api/orgs/${org}/products/${product}/archives`;
  const attachment = (name = group) => `/api/orgs/${org}/products/${product}/deployments/${name}/archive`;
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
    viewer = await a.fixtures.user();
    org = await a.fixtures.org(admin);
    await a.fixtures.addMember(org, viewer, 'view');
    key = await a.fixtures.signingKey(org, 'release');
    await a.fixtures.product(admin, org, product);
    dir = await mkdtemp(join(tmpdir(), 'fleethub-archives-'));
    // A group on the firmware the test devices run: they join it, and no update is due.
    const firmware = await buildFw(join(dir, 'firmware.fw'), {
      signWith: key.privateKey,
      meta: { product, version: '1.0.0' },
    });
    firmwareUuid = computeMetaUuid(firmware.metaConf);
    await a
      .http()
      .post(`/api/orgs/${org}/products/${product}/firmwares`)
      .set(admin.auth)
      .attach('firmware', firmware.path)
      .expect(201);
    await a
      .http()
      .post(`/api/orgs/${org}/products/${product}/deployments`)
      .set(admin.auth)
      .send({ name: group, firmware: firmwareUuid, conditions: { version: '' }, is_active: true })
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

  /** A signed archive file (by default with the organization's key), and the uuid fwup gives it. */
  async function archiveFile(options: BuildFwOptions & { version?: string } = {}) {
    const { version = '1.0.0', ...build } = options;
    const built = await buildFw(join(dir, `archive-${++counter}.fw`), {
      signWith: key.privateKey,
      resources: [{ name: 'model.bin', size: 200 * 1024 + counter }],
      ...build,
      meta: { product: 'models', platform: 'generic', architecture: 'generic', version, ...build.meta },
    });
    return { ...built, uuid: computeMetaUuid(built.metaConf) };
  }

  const upload = (path: string, who = admin, field = 'archive', via = a) =>
    via.http().post(base()).set(who.auth).attach(field, path);

  async function uploaded(options: BuildFwOptions & { version?: string } = {}) {
    const file = await archiveFile(options);
    await upload(file.path).expect(201);
    return file;
  }

  const attach = (uuid: string, via = a, name = group) =>
    via.http().put(attachment(name)).set(admin.auth).send({ archive: uuid });

  async function storedArchiveFiles(): Promise<string[]> {
    const files = await readdir(join(a.config.dataDir, 'firmware'), { recursive: true }).catch(() => []);
    return files.map(String).filter((f) => f.startsWith('archives'));
  }

  describe('API', () => {
    it('accepts a signed archive: 201, Location, its record; show, list newest first, download the bytes', async () => {
      const file = await archiveFile({
        version: '2.0.0',
        meta: { author: 'ML Team', description: 'a model' },
      });
      const res = await upload(file.path).expect(201);
      expect(res.headers.location).toBe(`${base()}/${file.uuid}`);
      expect(res.body).toEqual({
        data: {
          uuid: file.uuid,
          product,
          version: '2.0.0',
          platform: 'generic',
          architecture: 'generic',
          author: 'ML Team',
          description: 'a model',
          misc: null,
          vcs_identifier: null,
          size: file.size,
          signed_with: 'release',
          inserted_at: expect.stringMatching(/Z$/),
        },
      });
      expect((await a.http().get(`${base()}/${file.uuid}`).set(viewer.auth).expect(200)).body).toEqual(
        res.body,
      );
      const older = await uploaded({ version: '1.9.0' });
      const list = await b.http().get(base()).set(viewer.auth).expect(200);
      const uuids = list.body.data.map((x: { uuid: string }) => x.uuid);
      expect(uuids.indexOf(file.uuid)).toBeLessThan(uuids.indexOf(older.uuid));

      const bytes = await readFile(file.path);
      const download = await a
        .http()
        .get(`${base()}/${file.uuid}/download`)
        .set(viewer.auth)
        .buffer(true)
        .parse((r, done) => {
          const chunks: Buffer[] = [];
          r.on('data', (c: Buffer) => chunks.push(c));
          r.on('end', () => done(null, Buffer.concat(chunks)));
        })
        .expect(200);
      expect(download.headers['content-disposition']).toBe(`attachment; filename="${file.uuid}.fw"`);
      expect(download.headers['content-length']).toBe(String(bytes.length));
      expect(Buffer.compare(download.body as Buffer, bytes)).toBe(0);
      const range = await a
        .http()
        .get(`${base()}/${file.uuid}/download`)
        .set(viewer.auth)
        .set('Range', 'bytes=10-19')
        .expect(206);
      expect(range.headers['content-range']).toBe(`bytes 10-19/${bytes.length}`);
      const [row] = await a.db.query(`SELECT storage_key FROM archives WHERE uuid = $1`, [file.uuid]);
      expect(await storedArchiveFiles()).toContain(row.storage_key);
    });

    it('refuses a bad signature, an unknown key, an unsigned file and garbage with a 422 on archive; stores nothing', async () => {
      const before = await storedArchiveFiles();
      const [{ count: rowsBefore }] = await a.db.query(`SELECT count(*)::int AS count FROM archives`);
      const tampered = await archiveFile({ tamper: 'wrong-signature' });
      expect((await upload(tampered.path).expect(422)).body).toEqual(
        fieldError('archive', ARCHIVE_SIGNATURE_MISMATCH),
      );
      const stranger = await archiveFile({ signWith: generateFwupKeyPair().privateKey });
      expect((await upload(stranger.path).expect(422)).body).toEqual(
        fieldError('archive', ARCHIVE_SIGNATURE_MISMATCH),
      );
      const unsigned = await archiveFile({ signWith: undefined });
      expect((await upload(unsigned.path).expect(422)).body).toEqual(
        fieldError('archive', ARCHIVE_NOT_SIGNED),
      );
      const garbage = join(dir, 'garbage.fw');
      await writeFile(garbage, randomBytes(4096));
      expect((await upload(garbage).expect(422)).body).toEqual(fieldError('archive', ARCHIVE_NOT_FWUP));
      const truncated = await archiveFile({ tamper: 'truncated' });
      const cut = await upload(truncated.path).expect(422);
      expect(Object.keys(cut.body.errors)).toEqual(['archive']);
      const notSemver = await archiveFile({ version: 'one' });
      expect((await upload(notSemver.path).expect(422)).body).toEqual(
        fieldError('version', 'must be a valid semantic version'),
      );
      const noPlatform = await archiveFile({ meta: { platform: null } });
      expect((await upload(noPlatform.path).expect(422)).body).toEqual(
        fieldError('archive', 'meta.conf lacks meta-platform'),
      );
      expect((await upload(garbage, admin, 'firmware').expect(422)).body).toEqual(
        fieldError('archive', "can't be blank"),
      );
      const json = await a.http().post(base()).set(admin.auth).send({ archive: 'x' }).expect(422);
      expect(json.body).toEqual(
        fieldError('archive', 'must be uploaded as multipart/form-data in the field "archive"'),
      );
      expect(await storedArchiveFiles()).toEqual(before);
      const [{ count: rowsAfter }] = await a.db.query(`SELECT count(*)::int AS count FROM archives`);
      expect(rowsAfter).toBe(rowsBefore);
      expect(await readdir(join(a.config.dataDir, 'firmware', '.tmp'))).toEqual([]);
    });

    it('refuses an archive when the organization has no keys, and the same uuid twice', async () => {
      const lonely = await a.fixtures.org(admin);
      await a.fixtures.product(admin, lonely, product);
      const file = await archiveFile();
      const res = await a
        .http()
        .post(`/api/orgs/${lonely}/products/${product}/archives`)
        .set(admin.auth)
        .attach('archive', file.path)
        .expect(422);
      expect(res.body).toEqual(fieldError('archive', NO_ARCHIVE_KEYS));
      await upload(file.path).expect(201);
      expect((await upload(file.path, admin, 'archive', b).expect(422)).body).toEqual(
        fieldError('uuid', 'has already been taken'),
      );
    });

    it('needs manage to change, view to read; unknown product, archive or group is the 404', async () => {
      const file = await uploaded();
      // Refused before the body is read: a small body as one buffer, so that the client has written it all before
      // the answer can arrive (from a file path, form-data reads the file after the first chunk, and superagent
      // fails with EPIPE when the answer and the close come first; seen under CI load).
      const tiny = Buffer.from('x');
      await a
        .http()
        .post(base())
        .set(viewer.auth)
        .attach('archive', tiny, 'tiny.fw')
        .expect(403, ROLE_TOO_LOW);
      await a.http().delete(`${base()}/${file.uuid}`).set(viewer.auth).expect(403, ROLE_TOO_LOW);
      await a
        .http()
        .put(attachment())
        .set(viewer.auth)
        .send({ archive: file.uuid })
        .expect(403, ROLE_TOO_LOW);
      await a.http().delete(attachment()).set(viewer.auth).expect(403, ROLE_TOO_LOW);
      await a.http().get(attachment()).set(viewer.auth).expect(200);
      await a.http().get(`${base()}/${file.uuid}/download`).set(viewer.auth).expect(200);
      const stranger = await a.fixtures.user();
      await a.http().get(base()).set(stranger.auth).expect(404, NOT_FOUND);
      await a.http().get(`${base()}/${randomUuid()}`).set(admin.auth).expect(404, NOT_FOUND);
      await a.http().get(`${base()}/not-a-uuid`).set(admin.auth).expect(404, NOT_FOUND);
      await a.http().get(`${base()}/${randomUuid()}/download`).set(admin.auth).expect(404, NOT_FOUND);
      await a.http().delete(`${base()}/${randomUuid()}`).set(admin.auth).expect(404, NOT_FOUND);
      await a.http().get(`/api/orgs/${org}/products/nope/archives`).set(admin.auth).expect(404, NOT_FOUND);
      await a
        .http()
        .post(`/api/orgs/${org}/products/nope/archives`)
        .set(admin.auth)
        .attach('archive', tiny, 'tiny.fw')
        .expect(404, NOT_FOUND);
      await attach(file.uuid, a, 'nope').expect(404, NOT_FOUND);
      await a.http().get(attachment('nope')).set(admin.auth).expect(404, NOT_FOUND);
    });

    it('attaches to a group (422 for an unknown archive), shows it, detaches; delete is refused while attached', async () => {
      const file = await uploaded({ version: '3.0.0' });
      expect((await attach(randomUuid()).expect(422)).body).toEqual(
        fieldError('archive', 'does not exist in this product'),
      );
      expect((await attach('junk').expect(422)).body).toEqual(
        fieldError('archive', 'does not exist in this product'),
      );
      expect((await a.http().put(attachment()).set(admin.auth).send({}).expect(422)).body).toEqual(
        fieldError('archive', "can't be blank"),
      );
      const attached = await attach(file.uuid).expect(200);
      expect(attached.body.data.deployment_group).toBe(group);
      expect(attached.body.data.archive).toMatchObject({ uuid: file.uuid, version: '3.0.0' });
      const shown = await b.http().get(attachment()).set(viewer.auth).expect(200);
      expect(shown.body).toEqual(attached.body);
      // The group record itself keeps its fields.
      const groupView = await a
        .http()
        .get(`/api/orgs/${org}/products/${product}/deployments/${group}`)
        .set(admin.auth)
        .expect(200);
      expect(groupView.body.data).not.toHaveProperty('archive');

      await a.http().delete(`${base()}/${file.uuid}`).set(admin.auth).expect(409, detail(ARCHIVE_ATTACHED));
      await a.http().delete(attachment()).set(admin.auth).expect(204);
      await a.http().delete(attachment()).set(admin.auth).expect(204);
      expect((await a.http().get(attachment()).set(admin.auth).expect(200)).body).toEqual({
        data: { deployment_group: group, archive: null },
      });
      const [row] = await a.db.query(`SELECT storage_key FROM archives WHERE uuid = $1`, [file.uuid]);
      await a.http().delete(`${base()}/${file.uuid}`).set(admin.auth).expect(204);
      await a.http().get(`${base()}/${file.uuid}`).set(admin.auth).expect(404);
      expect(await storedArchiveFiles()).not.toContain(row.storage_key);
      const audit = await a.db.query(
        `SELECT action FROM audit_logs WHERE target_id IN ($1, $2) ORDER BY id`,
        [file.uuid, group],
      );
      expect(audit.map((r: { action: string }) => r.action)).toEqual(
        expect.arrayContaining(['archive.upload', 'archive.attach', 'archive.detach', 'archive.delete']),
      );
    });

    it('documents every archive operation under "Archives"', async () => {
      const doc = (await a.http().get('/api/openapi.json').expect(200)).body as {
        paths: Record<string, Record<string, { tags?: string[] }>>;
      };
      const paths = Object.entries(doc.paths).filter(
        ([path]) => path.startsWith('/api/') && (path.includes('/archives') || path.endsWith('/archive')),
      );
      const operations = paths.flatMap(([, ops]) => Object.values(ops));
      expect(operations).toHaveLength(8);
      for (const op of operations) expect(op.tags).toEqual(['Archives']);
      expect(doc.paths['/device-archives/{archive_id}/{file}'].get.tags).toEqual(['Device archive download']);
    });
  });

  describe('devices', () => {
    function joinParams(extra: Record<string, unknown> = {}) {
      return {
        nerves_fw_uuid: firmwareUuid,
        nerves_fw_product: product,
        nerves_fw_version: '1.0.0',
        nerves_fw_platform: 'rpi4',
        nerves_fw_architecture: 'aarch64',
        fwup_version: '1.10.1',
        device_api_version: '2.3.0',
        archive_public_keys: 'on_connect',
        currently_downloading_uuid: null,
        ...extra,
      };
    }

    async function newDevice(body: object = {}): Promise<string> {
      return a.fixtures.device(admin, org, product, `arc-${randomBytes(4).toString('hex')}`, body);
    }

    async function connectJoined(identifier: string, url = urlA, params = joinParams()) {
      const client = await DeviceSocketClient.connect(url, { 'x-test-device': identifier });
      clients.push(client);
      const reply = await client.join('device', params);
      expect(reply[4]).toEqual({ status: 'ok', response: {} });
      return client;
    }

    const archiveFrame = (f: Frame) => f[2] === 'device' && f[3] === 'archive';

    function localUrl(link: string, server: string): string {
      const url = new URL(link);
      return `${server}${url.pathname}${url.search}`;
    }

    async function inGroup(identifier: string): Promise<void> {
      await eventually(
        async () =>
          (
            await a.db.query(
              `SELECT 1 FROM deployment_group_members m JOIN devices d ON d.id = m.device_id WHERE d.identifier = $1`,
              [identifier],
            )
          ).length,
        (n) => n === 1,
      );
    }

    it('sends archive_public_keys on connect, and the archive when attached, on any instance; the link serves the bytes', async () => {
      await a.http().delete(attachment()).set(admin.auth).expect(204);
      const identifier = await newDevice();
      const client = await connectJoined(identifier, urlB);
      expect(await client.next()).toEqual([
        '1',
        null,
        'device',
        'archive_public_keys',
        { keys: [key.publicKey] },
      ]);
      await client.next((f) => f[3] === 'extensions:get');
      await inGroup(identifier);
      const file = await uploaded({ version: '4.0.0', meta: { description: 'weights' } });
      await attach(file.uuid, a).expect(200);
      const frame = await client.next(archiveFrame);
      const [row] = await a.db.query(`SELECT inserted_at FROM archives WHERE uuid = $1`, [file.uuid]);
      expect(frame[4]).toEqual({
        size: file.size,
        uuid: file.uuid,
        version: '4.0.0',
        description: 'weights',
        platform: 'generic',
        architecture: 'generic',
        uploaded_at: (row.inserted_at as Date).toISOString().slice(0, 19),
        url: expect.stringMatching(/\/device-archives\/\d+\/[0-9a-f-]{36}\.fw\?expires=\d+&signature=/),
      });
      const link = localUrl((frame[4] as { url: string }).url, urlA);
      const served = await fetch(link);
      expect(served.status).toBe(200);
      expect(Buffer.compare(Buffer.from(await served.arrayBuffer()), await readFile(file.path))).toBe(0);
      const part = await fetch(link, { headers: { Range: 'bytes=0-9' } });
      expect(part.status).toBe(206);
      const forged = new URL(link);
      forged.searchParams.set('signature', 'x'.repeat(43));
      expect((await fetch(forged)).status).toBe(403);
      const expired = new URL(link);
      expired.searchParams.set('expires', '1000');
      expect((await fetch(expired)).status).toBe(403);

      // On every join, before extensions:get; and a new archive when it changes (attached through instance b).
      await client.close();
      const again = await connectJoined(identifier, urlA);
      await again.next((f) => f[3] === 'archive_public_keys');
      const onJoin = await again.next();
      expect(onJoin[3]).toBe('archive');
      expect((onJoin[4] as { uuid: string }).uuid).toBe(file.uuid);
      expect((await again.next())[3]).toBe('extensions:get');
      const next = await uploaded({ version: '4.1.0' });
      await attach(next.uuid, b).expect(200);
      expect(((await again.next(archiveFrame))[4] as { uuid: string }).uuid).toBe(next.uuid);
    });

    it('sends nothing to devices before API 2.0.0, with updates disabled, in the penalty box or outside the group', async () => {
      const file = await uploaded({ version: '5.0.0' });
      await attach(file.uuid).expect(200);
      const old = await newDevice();
      const disabled = await newDevice();
      const penalised = await newDevice();
      const outside = await newDevice();
      await a.db.query(`UPDATE devices SET updates_enabled = false WHERE identifier = $1`, [disabled]);
      await a.db.query(
        `UPDATE devices SET updates_blocked_until = now() + interval '1 hour' WHERE identifier = $1`,
        [penalised],
      );
      const quiet = [
        await connectJoined(old, urlA, joinParams({ device_api_version: '1.9.0' })),
        await connectJoined(disabled, urlB),
        await connectJoined(penalised, urlA),
        await connectJoined(outside, urlB, joinParams({ nerves_fw_platform: 'other' })),
      ];
      // Devices that do take it, one per instance: once they have the new archive, the others had theirs if any.
      const takers = [
        await connectJoined(await newDevice(), urlA),
        await connectJoined(await newDevice(), urlB),
      ];
      for (const taker of takers) await taker.next(archiveFrame);
      const again = await uploaded({ version: '5.1.0' });
      await attach(again.uuid, b).expect(200);
      for (const taker of takers) {
        expect(((await taker.next(archiveFrame))[4] as { uuid: string }).uuid).toBe(again.uuid);
      }
      for (const client of quiet) {
        await client.heartbeat();
        expect(client.pending().filter(archiveFrame)).toEqual([]);
      }
    });
  });
});

/** `fleethub simulate`'s devices receive the archive, download it and check its signature (real NH1 auth). */
describe('archives reach simulated devices', () => {
  let t: TestApp;
  let url: string;
  let admin: TestUser;
  let org: string;
  let dir: string;
  let simulator: Simulator | null = null;
  const product = 'simulated';

  beforeAll(async () => {
    // Download links point at FLEETHUB_PUBLIC_URL: pick the port first.
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port: free } = probe.address() as AddressInfo;
        probe.close(() => resolve(free));
      });
    });
    url = `http://127.0.0.1:${port}`;
    ({ t, admin, org } = await orgScenario({ env: { FLEETHUB_PUBLIC_URL: url }, product }));
    await t.app.listen(port, '127.0.0.1');
    dir = await mkdtemp(join(tmpdir(), 'fleethub-sim-archives-'));
  });

  afterAll(async () => {
    await simulator?.stop();
    await t.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('fleethub archives key and build make an archive it accepts; simulated devices download and verify it', async () => {
    const env = { FLEETHUB_DATA_DIR: join(dir, 'data') };
    const keyed = await runCliProcess(['archives', 'key', '--out', join(dir, 'models-key')], env);
    expect(keyed).toMatchObject({ code: 0, stderr: '' });
    const publicKey = (await readFile(join(dir, 'models-key.pub'), 'utf8')).trim();
    expect(keyed.stdout.trim().split('\n').pop()).toBe(publicKey);
    // Never overwrites a key.
    expect((await runCliProcess(['archives', 'key', '--out', join(dir, 'models-key')], env)).code).toBe(1);
    await t
      .http()
      .post(`/api/orgs/${org}/keys`)
      .set(admin.auth)
      .send({ name: 'models', key: publicKey })
      .expect(201);
    const modelPath = join(dir, 'model.bin');
    const model = randomBytes(300 * 1024);
    await writeFile(modelPath, model);
    const archivePath = join(dir, 'model.fw');
    const built = await runCliProcess(
      [
        'archives',
        'build',
        '--file',
        modelPath,
        '--key',
        join(dir, 'models-key.priv'),
        '--out',
        archivePath,
        '--archive-version',
        '0.3.0',
        '--product',
        'models',
        '--platform',
        'sim',
        '--architecture',
        'sim',
        '--description',
        'object detection',
      ],
      env,
    );
    expect(built).toMatchObject({ code: 0, stderr: '' });
    const archive = await readFile(archivePath);

    // The group the simulated devices join: on the firmware they run (no update is due).
    const firmware = await buildFw(join(dir, 'fw.fw'), {
      signWith: (await t.fixtures.signingKey(org, 'k')).privateKey,
      meta: { product, version: '1.0.0', platform: 'sim', architecture: 'sim' },
    });
    const firmwareUuid = computeMetaUuid(firmware.metaConf);
    const p = `/api/orgs/${org}/products/${product}`;
    await t.http().post(`${p}/firmwares`).set(admin.auth).attach('firmware', firmware.path).expect(201);
    await t
      .http()
      .post(`${p}/deployments`)
      .set(admin.auth)
      .send({ name: 'sims', firmware: firmwareUuid, conditions: { version: '' }, is_active: true })
      .expect(201);
    const uploadedArchive = await t
      .http()
      .post(`${p}/archives`)
      .set(admin.auth)
      .attach('archive', archivePath);
    expect(uploadedArchive.status).toBe(201);
    expect(uploadedArchive.body.data).toMatchObject({
      version: '0.3.0',
      platform: 'sim',
      architecture: 'sim',
      description: 'object detection',
      size: archive.length,
      signed_with: 'models',
    });
    const archiveUuid = uploadedArchive.body.data.uuid as string;
    await t
      .http()
      .put(`${p}/deployments/sims/archive`)
      .set(admin.auth)
      .send({ archive: archiveUuid })
      .expect(200);

    const secret = await t.http().post(`${p}/shared_secrets`).set(admin.auth).send({}).expect(201);
    const lines: string[] = [];
    simulator = new Simulator({
      url,
      key: secret.body.data.key,
      secret: secret.body.data.secret,
      devices: 2,
      prefix: 'simarc-',
      firmware: { uuid: firmwareUuid, version: '1.0.0', platform: 'sim', architecture: 'sim', product },
      log: (line) => lines.push(line),
    });
    simulator.start(0);
    const sim = simulator;
    const stats = await eventually(
      async () => sim.archiveStats(),
      (s) => s.verified === 2,
    );
    expect(stats).toEqual({ verified: 2, refused: 0 });
    expect(lines).toEqual(
      expect.arrayContaining([
        `simarc-0001: archive 0.3.0 (${archiveUuid}) downloaded, ${archive.length} bytes, signature verified`,
        `simarc-0002: archive 0.3.0 (${archiveUuid}) downloaded, ${archive.length} bytes, signature verified`,
      ]),
    );
  }, 180_000);
});

function randomUuid(): string {
  const hex = randomBytes(16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
