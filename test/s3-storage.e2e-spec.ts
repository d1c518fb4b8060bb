import { GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { computeMetaUuid } from '../src/firmware/fwup';
import type { S3StorageConfig } from '../src/config/config';
import { FirmwareFileRemover } from '../src/firmware/storage/firmware-file-remover';
import { FirmwareStorage } from '../src/firmware/storage/firmware-storage';
import { S3Storage } from '../src/firmware/storage/s3-storage';
import type { DownloadLinkSigner } from '../src/gateway/download-links';
import { LINK_SIGNER } from '../src/gateway/firmware-downloads';
import { FirmwareDeltaRecords } from '../src/firmware/deltas/firmware-delta-records.service';
import { eventually } from './support/eventually';
import { buildFw, type BuildFwOptions, type FwupKeyPair } from './support/fw-builder';
import type { TestUser } from './support/fixtures';
import { listenOnLoopback } from './support/listening-app';
import { startS3Server, type TestS3Server } from './support/s3-server';
import { orgScenario } from './support/scenario';
import type { TestApp } from './support/test-app';
import { ensureXdelta3 } from './support/xdelta3';

const PREFIX = 'fleethub/';

/** Firmware in an S3 bucket (a real S3 protocol server, started here): uploads, downloads, deletions, readiness. */
describe('object storage (FLEETHUB_STORAGE=s3)', () => {
  let s3: TestS3Server;
  let client: S3Client;
  let t: TestApp;
  let admin: TestUser;
  let org: string;
  let key: FwupKeyPair;
  let dir: string;
  let counter = 0;

  beforeAll(async () => {
    s3 = await startS3Server();
    client = new S3Client({
      endpoint: s3.endpoint,
      region: 'us-east-1',
      forcePathStyle: true,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    });
    ({ t, admin, org, key } = await orgScenario({ env: s3.env(PREFIX), signingKey: 'release' }));
    dir = await mkdtemp(join(tmpdir(), 'fleethub-s3-fw-'));
  });

  afterAll(async () => {
    client.destroy();
    await t.close();
    await s3.stop();
    await rm(dir, { recursive: true, force: true });
  });

  /** The bucket's objects: key → size. */
  async function objects(): Promise<Record<string, number>> {
    const listed = await client.send(new ListObjectsV2Command({ Bucket: s3.bucket }));
    return Object.fromEntries((listed.Contents ?? []).map((o) => [o.Key ?? '', o.Size ?? 0]));
  }

  async function product(name = `p${++counter}`) {
    await t.fixtures.product(admin, org, name);
    return { name, base: `/api/orgs/${org}/products/${name}/firmwares` };
  }

  async function fw(productName: string, options: BuildFwOptions = {}) {
    return buildFw(join(dir, `fw-${++counter}.fw`), {
      signWith: key.privateKey,
      resources: [{ name: 'rootfs.img', size: 300 * 1024 }],
      ...options,
      meta: { product: productName, version: `1.0.${counter}`, ...options.meta },
    });
  }

  const upload = (base: string, path: string) => t.http().post(base).set(admin.auth).attach('firmware', path);

  async function storageKey(uuid: string): Promise<string> {
    const [row] = await t.db.query<{ storage_key: string }[]>(
      `SELECT storage_key FROM firmwares WHERE uuid = $1`,
      [uuid],
    );
    return row.storage_key;
  }

  /** No upload left in the local scratch directory, and nothing stored on local disk. */
  async function expectNoLocalFiles(): Promise<void> {
    expect(await readdir(join(t.config.dataDir, 'firmware-uploads')).catch(() => [])).toEqual([]);
    expect(await readdir(join(t.config.dataDir, 'firmware')).catch(() => [])).toEqual([]);
  }

  it('an upload is streamed into the bucket under the prefix, byte for byte, and listed', async () => {
    const { name, base } = await product();
    const built = await fw(name);
    const uuid = computeMetaUuid(built.metaConf);
    await upload(base, built.path).expect(201);
    const stored = await storageKey(uuid);
    expect(stored).toMatch(new RegExp(`^\\d+/${uuid}-[0-9a-f]{12}\\.fw$`));
    expect(await objects()).toMatchObject({ [`${PREFIX}${stored}`]: built.size });
    const object = await client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: `${PREFIX}${stored}` }));
    expect(Buffer.from(await object.Body!.transformToByteArray())).toEqual(await readFile(built.path));
    const list = await t.http().get(base).set(admin.auth).expect(200);
    expect(list.body.data.map((f: { uuid: string }) => f.uuid)).toEqual([uuid]);
    await expectNoLocalFiles();
  });

  it('a refused upload leaves no object and no file: bad signature, unknown format, duplicate uuid', async () => {
    const { name, base } = await product();
    const before = await objects();
    await upload(base, (await fw(name, { tamper: 'wrong-signature' })).path).expect(422);
    const notFirmware = join(dir, 'plain.txt');
    await writeFile(notFirmware, 'not firmware');
    await upload(base, notFirmware).expect(422);
    const built = await fw(name);
    await upload(base, built.path).expect(201);
    const afterFirst = await objects();
    await upload(base, built.path).expect(422);
    expect(Object.keys(afterFirst).length).toBe(Object.keys(before).length + 1);
    expect(await objects()).toEqual(afterFirst);
    await expectNoLocalFiles();
  });

  it('a bucket that cannot be reached answers 503 after the checks, and leaves no row and no file', async () => {
    const { name, base } = await product();
    const built = await fw(name);
    const uuid = computeMetaUuid(built.metaConf);
    const before = await objects();
    // Every request of the app's S3 clients fails, as with a store that is down.
    const clients = S3Client.prototype as unknown as { send: () => Promise<unknown> };
    const down = jest.spyOn(clients, 'send').mockRejectedValue(new Error('connect ECONNREFUSED'));
    let res;
    try {
      res = await upload(base, built.path);
    } finally {
      down.mockRestore();
    }
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ errors: { detail: 'firmware storage unavailable, try again shortly' } });
    expect(res.headers['retry-after']).toBe('5');
    expect(await t.db.query(`SELECT 1 FROM firmwares WHERE uuid = $1`, [uuid])).toEqual([]);
    expect(await objects()).toEqual(before);
    await expectNoLocalFiles();
  });

  it('a client that disconnects mid-upload leaves no object and no file', async () => {
    const { name, base } = await product();
    const built = await fw(name);
    const before = await objects();
    const { port } = await listenOnLoopback(t);
    const boundary = 'fleethub-boundary';
    const body = await readFile(built.path);
    await new Promise<void>((resolve) => {
      const req = httpRequest({
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: base,
        headers: {
          ...admin.auth,
          'content-type': `multipart/form-data; boundary=${boundary}`,
          'content-length': String(body.length + 1000),
        },
      });
      req.on('error', () => resolve());
      req.write(
        `--${boundary}\r\nContent-Disposition: form-data; name="firmware"; filename="a.fw"\r\n` +
          'Content-Type: application/octet-stream\r\n\r\n',
      );
      req.write(body.subarray(0, body.length / 2), () => setTimeout(() => req.destroy(), 200));
      req.on('close', () => resolve());
    });
    await t.app.getHttpServer().close();
    await eventually(
      () => readdir(join(t.config.dataDir, 'firmware-uploads')).catch(() => []),
      (files) => files.length === 0,
    );
    expect(await objects()).toEqual(before);
    await expectNoLocalFiles();
  });

  it('the firmware download route redirects to a presigned URL of the object (view role and above)', async () => {
    const { name, base } = await product();
    const built = await fw(name);
    const uuid = computeMetaUuid(built.metaConf);
    await upload(base, built.path).expect(201);
    const viewer = await t.fixtures.user();
    await t.fixtures.addMember(org, viewer, 'view');
    const redirect = await t.http().get(`${base}/${uuid}/download`).set(viewer.auth).expect(302);
    const presigned = redirect.headers.location;
    expect(presigned.startsWith(`${s3.endpoint}/${s3.bucket}/${PREFIX}`)).toBe(true);
    const whole = await fetch(presigned);
    expect(whole.status).toBe(200);
    expect(Buffer.from(await whole.arrayBuffer())).toEqual(await readFile(built.path));
  });

  it('a device link redirects to a presigned URL that serves the object, whole or a range', async () => {
    const { name, base } = await product();
    const built = await fw(name);
    const uuid = computeMetaUuid(built.metaConf);
    await upload(base, built.path).expect(201);
    const bytes = await readFile(built.path);
    const [row] = await t.db.query<{ id: string }[]>(`SELECT id FROM firmwares WHERE uuid = $1`, [uuid]);
    const link = new URL(t.app.get<DownloadLinkSigner>(LINK_SIGNER).url(row.id, `${uuid}.fw`));
    const redirect = await t.http().get(`${link.pathname}${link.search}`).expect(302);
    const presigned = redirect.headers.location;
    expect(presigned.startsWith(`${s3.endpoint}/${s3.bucket}/${PREFIX}`)).toBe(true);
    expect(new URL(presigned).searchParams.get('X-Amz-Expires')).toBe('86400');
    expect(new URL(presigned).searchParams.get('X-Amz-Signature')).toMatch(/^[0-9a-f]{64}$/);

    const whole = await fetch(presigned);
    expect(whole.status).toBe(200);
    expect(Buffer.from(await whole.arrayBuffer())).toEqual(bytes);

    const partial = await fetch(presigned, { headers: { Range: `bytes=100-${bytes.length - 1}` } });
    expect(partial.status).toBe(206);
    expect(partial.headers.get('content-range')).toBe(`bytes 100-${bytes.length - 1}/${bytes.length}`);
    expect(Buffer.from(await partial.arrayBuffer())).toEqual(bytes.subarray(100));

    // The store's own reads (what fleethub would stream itself): a range, and a reader that goes away early.
    const [{ storage_key: key }] = await t.db.query<{ storage_key: string }[]>(
      `SELECT storage_key FROM firmwares WHERE uuid = $1`,
      [uuid],
    );
    const storage = t.app.get(FirmwareStorage);
    const chunks: Buffer[] = [];
    const sink = new PassThrough();
    sink.on('data', (chunk: Buffer) => chunks.push(chunk));
    await (await storage.read(key, { start: 100, end: 199 })).sendTo(sink);
    expect(Buffer.concat(chunks)).toEqual(bytes.subarray(100, 200));
    const gone = new PassThrough({ highWaterMark: 16 });
    const sending = (await storage.read(key)).sendTo(gone);
    gone.destroy();
    await expect(sending).resolves.toBeUndefined();

    // A bad fleethub signature is refused before any redirect.
    await t
      .http()
      .get(`${link.pathname}?expires=${link.searchParams.get('expires')}&signature=x`)
      .expect(403);
  });

  it('links are signed for FLEETHUB_S3_PUBLIC_ENDPOINT when devices reach the store at another address', async () => {
    const settings = {
      ...(t.config.storage as S3StorageConfig),
      publicEndpoint: 'https://s3.fleet.example.com',
    };
    const storage = new S3Storage(settings, dir);
    try {
      const link = new URL(await storage.directDownloadUrl('5/a.fw'));
      expect(`${link.origin}${link.pathname}`).toBe(
        `https://s3.fleet.example.com/${s3.bucket}/${PREFIX}5/a.fw`,
      );
      expect(link.searchParams.get('X-Amz-SignedHeaders')).toBe('host');
    } finally {
      storage.onModuleDestroy();
    }
  });

  it('deleting a firmware removes its object and leaves no pending removal', async () => {
    const { name, base } = await product();
    const built = await fw(name);
    const uuid = computeMetaUuid(built.metaConf);
    await upload(base, built.path).expect(201);
    const stored = `${PREFIX}${await storageKey(uuid)}`;
    expect(Object.keys(await objects())).toContain(stored);
    await t.http().delete(`${base}/${uuid}`).set(admin.auth).expect(204);
    expect(Object.keys(await objects())).not.toContain(stored);
    expect(await t.db.query(`SELECT * FROM storage_deletions`)).toEqual([]);
  });

  it('archives go to the bucket too: uploaded under archives/, downloaded by a presigned URL, deleted with their object', async () => {
    const { name } = await product();
    const archives = `/api/orgs/${org}/products/${name}/archives`;
    const built = await fw(name, {
      meta: { product: 'models', platform: 'generic', architecture: 'generic' },
    });
    const uuid = computeMetaUuid(built.metaConf);
    await t.http().post(archives).set(admin.auth).attach('archive', built.path).expect(201);
    const [row] = await t.db.query<{ storage_key: string }[]>(
      `SELECT storage_key FROM archives WHERE uuid = $1`,
      [uuid],
    );
    expect(row.storage_key).toMatch(new RegExp(`^archives/\\d+/${uuid}-[0-9a-f]{12}\\.fw$`));
    const stored = `${PREFIX}${row.storage_key}`;
    expect(await objects()).toMatchObject({ [stored]: built.size });
    const redirect = await t.http().get(`${archives}/${uuid}/download`).set(admin.auth).expect(302);
    const whole = await fetch(redirect.headers.location);
    expect(Buffer.from(await whole.arrayBuffer())).toEqual(await readFile(built.path));
    await expectNoLocalFiles();
    await t.http().delete(`${archives}/${uuid}`).set(admin.auth).expect(204);
    expect(Object.keys(await objects())).not.toContain(stored);
    expect(await t.db.query(`SELECT * FROM storage_deletions`)).toEqual([]);
  });

  it('a removal that fails is retried by the sweeper; the row is gone at once', async () => {
    const { name, base } = await product();
    const built = await fw(name);
    const uuid = computeMetaUuid(built.metaConf);
    await upload(base, built.path).expect(201);
    const stored = await storageKey(uuid);
    const storage = t.app.get(FirmwareStorage);
    const failing = jest.spyOn(storage, 'remove').mockRejectedValueOnce(new Error('store down'));
    try {
      await t.http().delete(`${base}/${uuid}`).set(admin.auth).expect(204);
    } finally {
      failing.mockRestore();
    }
    expect(await t.db.query(`SELECT 1 FROM firmwares WHERE uuid = $1`, [uuid])).toEqual([]);
    expect(Object.keys(await objects())).toContain(`${PREFIX}${stored}`);
    const pending = await t.db.query<{ storage_key: string }[]>(`SELECT storage_key FROM storage_deletions`);
    expect(pending).toEqual([{ storage_key: stored }]);

    // Not due yet (a grace for the request's own removal): the sweep leaves it.
    const remover = t.app.get(FirmwareFileRemover);
    await remover.sweep();
    expect(Object.keys(await objects())).toContain(`${PREFIX}${stored}`);
    await t.db.query(`UPDATE storage_deletions SET next_attempt_at = now() - interval '1 second'`);
    await remover.sweep();
    expect(Object.keys(await objects())).not.toContain(`${PREFIX}${stored}`);
    expect(await t.db.query(`SELECT * FROM storage_deletions`)).toEqual([]);
  });

  it("deleting a product removes all of its firmware's objects", async () => {
    const { name, base } = await product();
    const uuids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const built = await fw(name);
      await upload(base, built.path).expect(201);
      uuids.push(computeMetaUuid(built.metaConf));
    }
    const stored = await Promise.all(uuids.map(async (uuid) => `${PREFIX}${await storageKey(uuid)}`));
    expect(Object.keys(await objects())).toEqual(expect.arrayContaining(stored));
    await t.http().delete(`/api/orgs/${org}/products/${name}`).set(admin.auth).expect(204);
    const left = Object.keys(await objects());
    for (const key of stored) expect(left).not.toContain(key);
    expect(await t.db.query(`SELECT * FROM storage_deletions`)).toEqual([]);
  });

  it("builds an fwup delta from the bucket's files, stores it beside them, and removes it with its product", async () => {
    ensureXdelta3();
    const { name, base } = await product();
    const rootfs = randomBytes(300 * 1024);
    const changed = Buffer.from(rootfs);
    changed.write('the next version', 1000);
    const source = await fw(name, {
      resources: [{ name: 'rootfs.img', content: rootfs }],
      deltaResources: ['rootfs.img'],
    });
    const target = await fw(name, {
      resources: [{ name: 'rootfs.img', content: changed }],
      deltaResources: ['rootfs.img'],
    });
    await upload(base, source.path).expect(201);
    await upload(base, target.path).expect(201);
    const [row] = await t.db.query<{ id: string }[]>(`SELECT id FROM firmwares WHERE uuid = $1`, [
      computeMetaUuid(target.metaConf),
    ]);
    await t.app
      .get(FirmwareDeltaRecords)
      .forDelivery([{ targetId: row.id, sourceUuid: computeMetaUuid(source.metaConf) }]);
    const [delta] = await eventually(
      () =>
        t.db.query<{ state: string; storage_key: string; size: string }[]>(
          `SELECT d.state, d.storage_key, d.size FROM firmware_deltas d WHERE d.target_id = $1`,
          [row.id],
        ),
      (rows) => rows[0]?.state === 'ready',
    );
    expect(delta.storage_key).toMatch(/^\d+\/deltas\/[0-9a-f-]{36}_[0-9a-f-]{36}-[0-9a-f]{12}\.fw$/);
    expect((await objects())[`${PREFIX}${delta.storage_key}`]).toBe(Number(delta.size));
    await t.http().delete(`/api/orgs/${org}/products/${name}`).set(admin.auth).expect(204);
    expect(Object.keys(await objects())).not.toContain(`${PREFIX}${delta.storage_key}`);
    expect(await t.db.query(`SELECT * FROM firmware_deltas WHERE target_id = $1`, [row.id])).toEqual([]);
  });

  it('/readyz reports a bucket that cannot be reached (probe cached a few seconds)', async () => {
    await t.http().get('/readyz').expect(200);
    const storage = t.app.get(FirmwareStorage);
    expect(storage).toBeInstanceOf(S3Storage);
    const probe = jest.spyOn(storage, 'probe').mockRejectedValue(new Error('NoSuchBucket'));
    const clock = jest.spyOn(Date, 'now');
    try {
      // Within the cache's lifetime: the last answer stands.
      await t.http().get('/readyz').expect(200);
      const later = Date.now() + 10_000;
      clock.mockReturnValue(later);
      const res = await t.http().get('/readyz').expect(503);
      expect(res.headers['retry-after']).toBe('5');
      expect(probe).toHaveBeenCalledTimes(1);
      probe.mockResolvedValue(undefined);
      clock.mockReturnValue(later + 10_000);
      await t.http().get('/readyz').expect(200);
    } finally {
      clock.mockRestore();
      probe.mockRestore();
    }
  });
});
