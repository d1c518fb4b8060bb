import { createHash } from 'node:crypto';
import { mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Response } from 'superagent';
import { computeMetaUuid } from '../src/firmware/fwup';
import { FirmwareFileRemover } from '../src/firmware/storage/firmware-file-remover';
import { FirmwareStorage } from '../src/firmware/storage/firmware-storage';
import { buildFw, type BuildFwOptions, type FwupKeyPair, generateFwupKeyPair } from './support/fw-builder';
import type { TestUser } from './support/fixtures';
import type { TestApp } from './support/test-app';
import { orgScenario } from './support/scenario';
import { detail, fieldError, NOT_FOUND } from './support/contract-bodies';

describe('firmware', () => {
  let t: TestApp;
  let admin: TestUser;
  let org: string;
  let key: FwupKeyPair;
  let dir: string;
  let counter = 0;
  beforeAll(async () => {
    ({ t, admin, org, key } = await orgScenario({ signingKey: 'release' }));
    dir = await mkdtemp(join(tmpdir(), 'fleethub-fw-'));
  });
  afterAll(async () => {
    await t.close();
    await rm(dir, { recursive: true, force: true });
  });

  async function product(name = `p${++counter}`) {
    await t.fixtures.product(admin, org, name);
    return { name, base: `/api/orgs/${org}/products/${name}/firmwares` };
  }

  async function fw(productName: string, options: BuildFwOptions = {}) {
    const path = join(dir, `fw-${++counter}.fw`);
    return buildFw(path, {
      signWith: key.privateKey,
      ...options,
      meta: { product: productName, version: '1.0.0', ...options.meta },
    });
  }

  const upload = (base: string, path: string, who = admin, field = 'firmware') =>
    t.http().post(base).set(who.auth).attach(field, path);

  it('accepts a signed fwup archive: 201, Location, the six fields, uuid as fwup computes it', async () => {
    const { name, base } = await product();
    const built = await fw(name, { meta: { version: '1.2.3', author: 'Team' } });
    const res = await upload(base, built.path).expect(201);
    const uuid = computeMetaUuid(built.metaConf);
    expect(res.body).toEqual({
      data: {
        uuid,
        product: name,
        platform: 'rpi4',
        architecture: 'aarch64',
        version: '1.2.3',
        author: 'Team',
      },
    });
    expect(res.headers.location).toBe(`${base}/${uuid}`);
    const shown = await t.http().get(`${base}/${uuid}`).set(admin.auth).expect(200);
    expect(shown.body.data).toEqual({
      ...res.body.data,
      size: built.size,
      inserted_at: expect.stringMatching(/Z$/),
    });
    const [row] = await t.db.query(
      `SELECT sha256, chunk_sha256, size, signed_with FROM firmwares WHERE uuid = $1`,
      [uuid],
    );
    const bytes = await readFile(built.path);
    expect(row.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
    expect(row.chunk_sha256).toHaveLength(Math.ceil(bytes.length / (1024 * 1024)));
    expect(Number(row.size)).toBe(bytes.length);
    expect(row.signed_with).toBe('release');
    const stored = await readdir(join(t.config.dataDir, 'firmware'), { recursive: true });
    expect(stored.filter((f) => new RegExp(`${uuid}-[0-9a-f]{12}\\.fw$`).test(String(f)))).toHaveLength(1);
  });

  it('records per-MiB checksums of a multi-MiB file', async () => {
    const { name, base } = await product();
    const built = await fw(name, {
      resources: [{ name: 'rootfs.img', size: 3 * 1024 * 1024 + 5, compress: false }],
    });
    const res = await upload(base, built.path).expect(201);
    const [row] = await t.db.query(`SELECT chunk_sha256 FROM firmwares WHERE uuid = $1`, [
      res.body.data.uuid,
    ]);
    const bytes = await readFile(built.path);
    const expected = [];
    for (let offset = 0; offset < bytes.length; offset += 1024 * 1024) {
      expected.push(
        createHash('sha256')
          .update(bytes.subarray(offset, offset + 1024 * 1024))
          .digest('hex'),
      );
    }
    expect(row.chunk_sha256).toEqual(expected);
  });

  it('lists newest semantic version first; pre-releases below their release; ties by newest upload', async () => {
    const { name, base } = await product();
    await t
      .http()
      .patch(`/api/orgs/${org}/products/${name}`)
      .set(admin.auth)
      .send({ require_unique_firmware_version: false });
    for (const [version, misc] of [
      ['1.10.0', 'a'],
      ['1.2.0', 'b'],
      ['1.10.0-rc.1', 'c'],
      ['2.0.0-alpha', 'd'],
      ['1.10.0', 'e'],
      ['1.10.0-rc.10', 'f'],
      ['1.10.0-rc.2', 'g'],
    ]) {
      await upload(base, (await fw(name, { meta: { version, misc } })).path).expect(201);
    }
    const res = await t.http().get(base).set(admin.auth).expect(200);
    expect(res.body.data.map((f: { version: string }) => f.version)).toEqual([
      '2.0.0-alpha',
      '1.10.0',
      '1.10.0',
      '1.10.0-rc.10',
      '1.10.0-rc.2',
      '1.10.0-rc.1',
      '1.2.0',
    ]);
    expect(Object.keys(res.body.data[0]).sort()).toEqual([
      'architecture',
      'author',
      'platform',
      'product',
      'uuid',
      'version',
    ]);
    const [newer, older] = res.body.data.slice(1, 3).map((f: { uuid: string }) => f.uuid);
    const rows = await t.db.query(`SELECT uuid, misc FROM firmwares WHERE uuid = ANY($1::uuid[])`, [
      [newer, older],
    ]);
    expect(rows.find((r: { uuid: string }) => r.uuid === newer).misc).toBe('e');
  });

  describe('refusals (422, nothing stored)', () => {
    const expectRefused = async (base: string, path: string, field: string, message: RegExp | string) => {
      const before = await t.db.query(`SELECT count(*)::int AS n FROM firmwares`);
      const res = await upload(base, path).expect(422);
      expect(Object.keys(res.body.errors)).toEqual([field]);
      expect(res.body.errors[field]).toEqual([
        typeof message === 'string' ? message : expect.stringMatching(message),
      ]);
      const after = await t.db.query(`SELECT count(*)::int AS n FROM firmwares`);
      expect(after[0].n).toBe(before[0].n);
      const tmp = await readdir(join(t.config.dataDir, 'firmware', '.tmp')).catch(() => []);
      expect(tmp).toEqual([]);
    };

    it.each([
      ['wrong-signature', /signature/],
      ['not-a-zip', /^Unrecognised firmware format/],
      ['truncated', /./],
      ['no-meta-conf', /meta\.conf/],
    ] as const)('tampered archive: %s', async (tamper, message) => {
      const { name, base } = await product();
      await expectRefused(base, (await fw(name, { tamper })).path, 'firmware', message);
    });

    it('an unsigned archive', async () => {
      const { name, base } = await product();
      await expectRefused(base, (await fw(name, { signWith: undefined })).path, 'firmware', /not signed/);
    });

    it('signed with a key the organization does not have', async () => {
      const { name, base } = await product();
      const stranger = generateFwupKeyPair();
      await expectRefused(
        base,
        (await fw(name, { signWith: stranger.privateKey })).path,
        'firmware',
        /signing keys/,
      );
    });

    it('built for another product', async () => {
      const { base } = await product();
      await expectRefused(
        base,
        (await fw('someone-else')).path,
        'firmware',
        /built for the product "someone-else"/,
      );
    });

    it('a version that is not semver', async () => {
      const { name, base } = await product();
      await expectRefused(
        base,
        (await fw(name, { meta: { version: 'v1.0' } })).path,
        'version',
        /semantic version/,
      );
    });

    it('a meta value longer than the database keeps', async () => {
      const { name, base } = await product();
      const built = await fw(name, { meta: { author: 'a'.repeat(300) } });
      await expectRefused(base, built.path, 'firmware', /meta-author is longer than 255/);
    });

    it('missing meta-platform', async () => {
      const { name, base } = await product();
      await expectRefused(
        base,
        (await fw(name, { meta: { platform: null } })).path,
        'firmware',
        /meta-platform/,
      );
    });

    it('the same archive twice (uuid), and the same version twice when versions must be unique', async () => {
      const { name, base } = await product();
      const built = await fw(name);
      await upload(base, built.path).expect(201);
      await expectRefused(base, built.path, 'uuid', 'has already been taken');
      await expectRefused(
        base,
        (await fw(name, { meta: { misc: 'other build' } })).path,
        'version',
        'has already been taken',
      );
    });

    it('fwup not among the product’s allowed update tools', async () => {
      const { name, base } = await product();
      await t
        .http()
        .patch(`/api/orgs/${org}/products/${name}`)
        .set(admin.auth)
        .send({ allowed_update_tools: ['atomvm'] })
        .expect(200);
      await expectRefused(
        base,
        (await fw(name)).path,
        'firmware',
        `The product "${name}" does not accept fwup firmware. A member with the manage role can enable it in ` +
          "the product's settings (allowed_update_tools).",
      );
    });

    it('no file, or the file in another field', async () => {
      const { name, base } = await product();
      const built = await fw(name);
      const res = await upload(base, built.path, admin, 'file').expect(422);
      expect(res.body).toEqual(fieldError('firmware', "can't be blank"));
      const json = await t.http().post(base).set(admin.auth).send({ firmware: 'x' }).expect(422);
      expect(Object.keys(json.body.errors)).toEqual(['firmware']);
    });

    it('a file over the configured limit: 413', async () => {
      const {
        t: small,
        admin: owner,
        org: smallOrg,
      } = await orgScenario({ env: { FLEETHUB_FIRMWARE_MAX_MIB: '1' }, product: 'p' });
      try {
        const big = join(dir, 'big.bin');
        await writeFile(big, Buffer.alloc(2 * 1024 * 1024, 7));
        const res = await small
          .http()
          .post(`/api/orgs/${smallOrg}/products/p/firmwares`)
          .set(owner.auth)
          .attach('firmware', big);
        expect(res.status).toBe(413);
        expect(res.body).toEqual(detail(expect.stringContaining('limit')));
      } finally {
        await small.close();
      }
    });
  });

  it('delete: 204, file removed; 409 while a pending update targets it', async () => {
    const { name, base } = await product();
    const res = await upload(base, (await fw(name)).path).expect(201);
    const uuid = res.body.data.uuid;
    await t
      .http()
      .post(`/api/orgs/${org}/products/${name}/devices`)
      .set(admin.auth)
      .send({ identifier: `d-${name}` })
      .expect(201);
    await t
      .http()
      .post(`/api/orgs/${org}/products/${name}/devices/d-${name}/upgrade`)
      .set(admin.auth)
      .send({ uuid })
      .expect(204);
    const conflict = await t.http().delete(`${base}/${uuid}`).set(admin.auth).expect(409);
    expect(conflict.body).toEqual(detail(expect.stringContaining('pending')));
    // Deleting the device takes its pending update with it.
    await t.http().delete(`/api/orgs/${org}/products/${name}/devices/d-${name}`).set(admin.auth).expect(204);
    await t.http().delete(`${base}/${uuid}`).set(admin.auth).expect(204);
    await t.http().get(`${base}/${uuid}`).set(admin.auth).expect(404, NOT_FOUND);
    const stored = await readdir(join(t.config.dataDir, 'firmware'), { recursive: true });
    expect(stored.filter((f) => new RegExp(`${uuid}-[0-9a-f]{12}\\.fw$`).test(String(f)))).toEqual([]);
  });

  it('deleting a product deletes its firmware files; a refused delete keeps them', async () => {
    const { name, base } = await product();
    const uuids: string[] = [];
    for (const version of ['1.0.0', '1.1.0']) {
      const res = await upload(base, (await fw(name, { meta: { version } })).path).expect(201);
      uuids.push(res.body.data.uuid as string);
    }
    const storedFiles = async () =>
      (await readdir(join(t.config.dataDir, 'firmware'), { recursive: true })).filter((f) =>
        uuids.some((uuid) => new RegExp(`${uuid}-[0-9a-f]{12}\\.fw$`).test(String(f))),
      );
    expect(await storedFiles()).toHaveLength(2);

    await t
      .http()
      .post(`/api/orgs/${org}/products/${name}/devices`)
      .set(admin.auth)
      .send({ identifier: `keeper-${name}` })
      .expect(201);
    await t.http().delete(`/api/orgs/${org}/products/${name}`).set(admin.auth).expect(409);
    expect(await storedFiles()).toHaveLength(2);
    await t.http().get(`${base}/${uuids[0]}`).set(admin.auth).expect(200);

    await t
      .http()
      .delete(`/api/orgs/${org}/products/${name}/devices/keeper-${name}`)
      .set(admin.auth)
      .expect(204);
    await t.http().delete(`/api/orgs/${org}/products/${name}`).set(admin.auth).expect(204);
    expect(await storedFiles()).toEqual([]);
    expect(await t.db.query(`SELECT 1 FROM firmwares WHERE uuid = ANY($1::uuid[])`, [uuids])).toEqual([]);
  });

  it('a file that cannot be removed at once is removed by the sweeper; the firmware is gone at once', async () => {
    const { name, base } = await product();
    const res = await upload(base, (await fw(name)).path).expect(201);
    const uuid = res.body.data.uuid as string;
    const [{ storage_key: key }] = await t.db.query<{ storage_key: string }[]>(
      `SELECT storage_key FROM firmwares WHERE uuid = $1`,
      [uuid],
    );
    const path = join(t.config.dataDir, 'firmware', key);
    const failing = jest
      .spyOn(t.app.get(FirmwareStorage), 'remove')
      .mockRejectedValueOnce(new Error('EACCES'));
    try {
      await t.http().delete(`${base}/${uuid}`).set(admin.auth).expect(204);
    } finally {
      failing.mockRestore();
    }
    await t.http().get(`${base}/${uuid}`).set(admin.auth).expect(404, NOT_FOUND);
    expect((await stat(path)).isFile()).toBe(true);
    await t.db.query(
      `UPDATE storage_deletions SET next_attempt_at = now() - interval '1 second' WHERE storage_key = $1`,
      [key],
    );
    await t.app.get(FirmwareFileRemover).sweep();
    await expect(stat(path)).rejects.toThrow('ENOENT');
    expect(await t.db.query(`SELECT 1 FROM storage_deletions WHERE storage_key = $1`, [key])).toEqual([]);
  });

  describe('download (GET .../firmwares/:uuid/download)', () => {
    /** Collects a binary body as one Buffer (superagent does not buffer application/octet-stream itself). */
    const binary = (res: Response, done: (err: Error | null, body: Buffer) => void) => {
      const chunks: Buffer[] = [];
      const stream = res as unknown as NodeJS.ReadableStream;
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => done(null, Buffer.concat(chunks)));
    };
    const get = (url: string, who: TestUser) => t.http().get(url).set(who.auth).buffer(true).parse(binary);

    it('whole file to the view role, a byte range (206), 416; unknown or foreign firmware 404', async () => {
      const { name, base } = await product();
      const built = await fw(name, { resources: [{ name: 'rootfs.img', size: 64 * 1024 }] });
      const uuid = computeMetaUuid(built.metaConf);
      await upload(base, built.path).expect(201);
      const bytes = await readFile(built.path);
      const [viewer, outsider] = await Promise.all([t.fixtures.user(), t.fixtures.user()]);
      await t.fixtures.addMember(org, viewer, 'view');
      const url = `${base}/${uuid}/download`;

      const whole = await get(url, viewer).expect(200);
      expect(Buffer.compare(whole.body as Buffer, bytes)).toBe(0);
      expect(whole.headers['content-type']).toBe('application/octet-stream');
      expect(whole.headers['content-length']).toBe(String(bytes.length));
      expect(whole.headers['accept-ranges']).toBe('bytes');
      expect(whole.headers['content-disposition']).toBe(`attachment; filename="${uuid}.fw"`);

      const partial = await get(url, viewer).set('Range', 'bytes=100-1099').expect(206);
      expect(partial.headers['content-range']).toBe(`bytes 100-1099/${bytes.length}`);
      expect(partial.headers['content-length']).toBe('1000');
      expect(Buffer.compare(partial.body as Buffer, bytes.subarray(100, 1100))).toBe(0);
      const tail = await get(url, admin).set('Range', 'bytes=-10').expect(206);
      expect(Buffer.compare(tail.body as Buffer, bytes.subarray(bytes.length - 10))).toBe(0);

      const refused = await get(url, viewer).set('Range', `bytes=${bytes.length}-`).expect(416);
      expect(refused.headers['content-range']).toBe(`bytes */${bytes.length}`);

      await t.http().head(url).set(viewer.auth).expect(200).expect('content-length', String(bytes.length));
      await t
        .http()
        .get(`${base}/00000000-0000-4000-8000-000000000000/download`)
        .set(viewer.auth)
        .expect(404, NOT_FOUND);
      await t.http().get(`${base}/not-a-uuid/download`).set(viewer.auth).expect(404, NOT_FOUND);
      await t.http().get(url).set(outsider.auth).expect(404, NOT_FOUND);
      await t.http().get(url).expect(401);
      // Another product of the same organization does not have it.
      const other = await product();
      await t.http().get(`${other.base}/${uuid}/download`).set(admin.auth).expect(404, NOT_FOUND);
    });

    it('a firmware whose file the store has lost is the constant 404', async () => {
      const { name, base } = await product();
      const built = await fw(name);
      const uuid = computeMetaUuid(built.metaConf);
      await upload(base, built.path).expect(201);
      const [{ storage_key: key }] = await t.db.query<{ storage_key: string }[]>(
        `SELECT storage_key FROM firmwares WHERE uuid = $1`,
        [uuid],
      );
      await t.app.get(FirmwareStorage).remove(key);
      await t.http().get(`${base}/${uuid}/download`).set(admin.auth).expect(404, NOT_FOUND);
    });
  });

  it('roles: view lists and shows, cannot upload or delete; outsiders 404', async () => {
    const { name, base } = await product();
    const [viewer, outsider] = await Promise.all([t.fixtures.user(), t.fixtures.user()]);
    await t.fixtures.addMember(org, viewer, 'view');
    const built = await fw(name);
    // Refused before the body is read: the body goes as one buffer, so that the client has written it all before
    // the answer can arrive (superagent fails with EPIPE when the server answers and closes mid-body).
    const refused = (who: TestUser) =>
      t.http().post(base).set(who.auth).attach('firmware', bytes, 'refused.fw');
    const bytes = await readFile(built.path);
    await refused(viewer).expect(403, NOT_FOUND);
    await refused(outsider).expect(404, NOT_FOUND);
    await t.http().get(base).set(viewer.auth).expect(200);
    await t.http().get(base).set(outsider.auth).expect(404, NOT_FOUND);
    await t.http().get(`${base}/not-a-uuid`).set(viewer.auth).expect(404, NOT_FOUND);
  });
});
