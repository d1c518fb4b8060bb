import { createHash } from 'node:crypto';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type FwupKeyPair, generateFwupKeyPair } from './support/fw-builder';
import { buildEspImage, type EspImageOptions } from './support/fw-builder-esp-idf';
import { buildPackbeam, type PackbeamOptions } from './support/fw-builder-packbeam';
import type { TestUser } from './support/fixtures';
import type { TestApp } from './support/test-app';
import { orgScenario } from './support/scenario';

const UNRECOGNISED =
  'Unrecognised firmware format. Expected an fwup archive (.fw), an AtomVM packbeam (.avm) or an ESP-IDF ' +
  'application image (.bin).';
const ESP_IDF_UNVERIFIABLE =
  "ESP-IDF images cannot be verified against the organization's ed25519 signing keys (Secure Boot signs with " +
  'RSA or ECDSA); enable allow_unsigned_esp_idf_firmware on the product to accept them.';
const toolRefused = (product: string, tool: string) =>
  `The product "${product}" does not accept ${tool} firmware. A member with the manage role can enable it in ` +
  "the product's settings (allowed_update_tools).";

function uuidFromSha256(bytes: Buffer): string {
  const hex = createHash('sha256').update(bytes).digest('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

describe('firmware formats: AtomVM packbeams and ESP-IDF images', () => {
  let t: TestApp;
  let admin: TestUser;
  let org: string;
  let key: FwupKeyPair;
  let dir: string;
  let counter = 0;

  beforeAll(async () => {
    ({ t, admin, org, key } = await orgScenario({ signingKey: 'release' }));
    dir = await mkdtemp(join(tmpdir(), 'fleethub-formats-'));
  });
  afterAll(async () => {
    await t.close();
    await rm(dir, { recursive: true, force: true });
  });

  /** A product with these settings (PATCHed through the API). */
  async function product(settings: Record<string, unknown> = {}) {
    const name = `p${++counter}`;
    await t.fixtures.product(admin, org, name);
    if (Object.keys(settings).length > 0) {
      await t.http().patch(`/api/orgs/${org}/products/${name}`).set(admin.auth).send(settings).expect(200);
    }
    return { name, base: `/api/orgs/${org}/products/${name}/firmwares` };
  }

  async function file(bytes: Buffer, name = `upload-${++counter}.txt`) {
    const path = join(dir, name);
    await writeFile(path, bytes);
    return path;
  }

  const packbeam = (application: string, options: PackbeamOptions = {}) =>
    buildPackbeam({ application, vsn: '1.0.0', ...options }).bytes;
  const espImage = (projectName: string, options: EspImageOptions = {}) =>
    buildEspImage({ projectName, version: '1.0.0', ...options });

  const upload = (base: string, path: string) =>
    t.http().post(base).set(admin.auth).attach('firmware', path, 'does_not_matter.txt');

  async function storedFiles(): Promise<string[]> {
    const all = await readdir(join(t.config.dataDir, 'firmware'), { recursive: true }).catch(() => []);
    return all.map(String).filter((f) => !f.startsWith('.tmp'));
  }

  /** 422 with exactly `{"errors":{field:[message]}}`, no row, no file stored, no temporary file left. */
  async function expectRefused(base: string, bytes: Buffer, field: string, message: string | RegExp) {
    const [rowsBefore, filesBefore] = [
      await t.db.query(`SELECT count(*)::int AS n FROM firmwares`),
      await storedFiles(),
    ];
    const res = await upload(base, await file(bytes)).expect(422);
    expect(res.body).toEqual({
      errors: { [field]: [typeof message === 'string' ? message : expect.stringMatching(message)] },
    });
    const rowsAfter = await t.db.query(`SELECT count(*)::int AS n FROM firmwares`);
    expect(rowsAfter[0].n).toBe(rowsBefore[0].n);
    expect(await storedFiles()).toEqual(filesBefore);
    expect(await readdir(join(t.config.dataDir, 'firmware', '.tmp')).catch(() => [])).toEqual([]);
  }

  async function row(uuid: string) {
    const [found] = await t.db.query(
      `SELECT tool, signed_with, storage_key, description, meta_product, sha256, size FROM firmwares WHERE uuid = $1`,
      [uuid],
    );
    return found;
  }

  it('an unrecognised format is refused, whatever the file is called', async () => {
    const { base } = await product({ allowed_update_tools: ['fwup', 'atomvm', 'esp-idf'] });
    await expectRefused(base, Buffer.from('#!/bin/sh\necho not firmware\n'), 'firmware', UNRECOGNISED);
    await expectRefused(base, Buffer.alloc(0), 'firmware', UNRECOGNISED);
    const noDescriptor = buildEspImage({ descriptorMagic: 0 }).bytes;
    await expectRefused(base, noDescriptor, 'firmware', UNRECOGNISED);
  });

  describe('AtomVM', () => {
    it('accepts a signed packbeam: 201, the six fields, uuid from the file hash, the key recorded', async () => {
      const { name, base } = await product({ allowed_update_tools: ['atomvm'] });
      const bytes = packbeam(name, { vsn: 'v1.2', description: 'Blinks', signWith: key.privateKey });
      const res = await upload(base, await file(bytes)).expect(201);
      const uuid = uuidFromSha256(bytes);
      expect(res.body).toEqual({
        data: {
          uuid,
          product: name,
          platform: 'atomvm',
          architecture: 'beam',
          version: '1.2.0',
          author: null,
        },
      });
      expect(res.headers.location).toBe(`${base}/${uuid}`);
      expect(await row(uuid)).toEqual({
        tool: 'atomvm',
        signed_with: 'release',
        storage_key: expect.stringMatching(new RegExp(`/${uuid}-[0-9a-f]{12}\\.avm$`)),
        description: 'Blinks',
        meta_product: name,
        sha256: createHash('sha256').update(bytes).digest('hex'),
        size: String(bytes.length),
      });
      expect(
        (await storedFiles()).filter((f) => new RegExp(`${uuid}-[0-9a-f]{12}\\.avm$`).test(f)),
      ).toHaveLength(1);
      const listed = await t.http().get(base).set(admin.auth).expect(200);
      expect(listed.body.data).toEqual([res.body.data]);
    });

    it('accepts an unsigned packbeam only where allow_unsigned_atomvm_firmware is set', async () => {
      const strict = await product({ allowed_update_tools: ['atomvm'] });
      await expectRefused(
        strict.base,
        packbeam(strict.name),
        'firmware',
        "is an unsigned AtomVM packbeam: sign it with one of the organization's keys (a nerves_hub/signature " +
          'entry), or enable allow_unsigned_atomvm_firmware on the product to accept unsigned packbeams.',
      );
      const lenient = await product({
        allowed_update_tools: ['atomvm'],
        allow_unsigned_atomvm_firmware: true,
      });
      const res = await upload(lenient.base, await file(packbeam(lenient.name))).expect(201);
      expect((await row(res.body.data.uuid)).signed_with).toBeNull();
    });

    it('refuses a packbeam when atomvm is not among the allowed update tools', async () => {
      const { name, base } = await product({ allow_unsigned_atomvm_firmware: true });
      await expectRefused(
        base,
        packbeam(name, { signWith: key.privateKey }),
        'firmware',
        toolRefused(name, 'atomvm'),
      );
    });

    it('refuses a bad signature even where unsigned packbeams are allowed', async () => {
      const { name, base } = await product({
        allowed_update_tools: ['atomvm'],
        allow_unsigned_atomvm_firmware: true,
      });
      const message =
        "has a nerves_hub/signature entry that does not verify with any of the organization's signing keys";
      await expectRefused(
        base,
        packbeam(name, { signWith: key.privateKey, corruptSignature: true }),
        'firmware',
        message,
      );
      const stranger = generateFwupKeyPair();
      await expectRefused(base, packbeam(name, { signWith: stranger.privateKey }), 'firmware', message);
    });

    it('refuses a packbeam built for another product, a version that is not SemVer, a malformed packbeam', async () => {
      const { name, base } = await product({
        allowed_update_tools: ['atomvm'],
        allow_unsigned_atomvm_firmware: true,
      });
      await expectRefused(
        base,
        packbeam('someone_else'),
        'firmware',
        `is built for the product "someone_else", but was uploaded to "${name}"`,
      );
      await expectRefused(
        base,
        packbeam(name, { vsn: 'latest' }),
        'version',
        '"latest" (vsn in application.bin) is not a semantic version such as 1.2.3',
      );
      await expectRefused(
        base,
        packbeam(name, { applicationBin: null }),
        'firmware',
        /without <app>\/priv\/application\.bin/,
      );
      await expectRefused(base, packbeam(name, { noEnd: true }), 'firmware', /^is a malformed packbeam: /);
    });

    it('refuses the same packbeam twice, and the same version twice when versions must be unique', async () => {
      const { name, base } = await product({ allowed_update_tools: ['atomvm'] });
      const bytes = packbeam(name, { signWith: key.privateKey });
      await upload(base, await file(bytes)).expect(201);
      await expectRefused(base, bytes, 'uuid', 'has already been taken');
      await expectRefused(
        base,
        packbeam(name, { signWith: key.privateKey, description: 'another build' }),
        'version',
        'has already been taken',
      );
    });
  });

  describe('ESP-IDF', () => {
    const espSettings = { allowed_update_tools: ['esp-idf'], allow_unsigned_esp_idf_firmware: true };

    it('accepts an image where allowed: the six fields from the app descriptor, no signing key', async () => {
      const { name, base } = await product(espSettings);
      const built = espImage(name, { version: '1.2.3.4', chipId: 0x0009, idfVersion: 'v5.3.1' });
      const res = await upload(base, await file(built.bytes)).expect(201);
      expect(res.body).toEqual({
        data: {
          uuid: built.uuid,
          product: name,
          platform: 'esp32s3',
          architecture: 'xtensa',
          version: '1.2.3+4',
          author: null,
        },
      });
      expect(await row(built.uuid)).toMatchObject({
        tool: 'esp-idf',
        signed_with: null,
        storage_key: expect.stringMatching(new RegExp(`/${built.uuid}-[0-9a-f]{12}\\.bin$`)),
        description: 'ESP-IDF v5.3.1',
      });
    });

    it('accepts an image with an intact Secure Boot v2 signature sector', async () => {
      const { name, base } = await product(espSettings);
      const built = espImage(name, { secureBoot: { version: 0x02 } });
      await upload(base, await file(built.bytes)).expect(201);
      expect((await row(built.uuid)).signed_with).toBeNull();
    });

    it('refuses any image, Secure Boot signed or not, unless allow_unsigned_esp_idf_firmware is set', async () => {
      const { name, base } = await product({ allowed_update_tools: ['esp-idf'] });
      await expectRefused(base, espImage(name).bytes, 'firmware', ESP_IDF_UNVERIFIABLE);
      await expectRefused(
        base,
        espImage(name, { secureBoot: { version: 0x03 } }).bytes,
        'firmware',
        ESP_IDF_UNVERIFIABLE,
      );
    });

    it('refuses an image when esp-idf is not among the allowed update tools', async () => {
      const { name, base } = await product({ allow_unsigned_esp_idf_firmware: true });
      await expectRefused(base, espImage(name).bytes, 'firmware', toolRefused(name, 'esp-idf'));
    });

    it('refuses a damaged Secure Boot signature block', async () => {
      const { name, base } = await product(espSettings);
      await expectRefused(
        base,
        espImage(name, { secureBoot: { version: 0x02, tamper: 'crc' } }).bytes,
        'firmware',
        /damaged Secure Boot signature block/,
      );
      await expectRefused(
        base,
        espImage(name, { secureBoot: { version: 0x02, tamper: 'image' } }).bytes,
        'firmware',
        /image digest does not match the image/,
      );
    });

    it('refuses another product, a version that is not SemVer, a truncated image, and a second upload', async () => {
      const { name, base } = await product(espSettings);
      await expectRefused(
        base,
        espImage('other').bytes,
        'firmware',
        `is built for the product "other", but was uploaded to "${name}"`,
      );
      await expectRefused(
        base,
        espImage(name, { version: 'nightly' }).bytes,
        'version',
        /"nightly" .*PROJECT_VER/,
      );
      await expectRefused(base, espImage(name).bytes.subarray(0, 200), 'firmware', /too short/);
      const built = espImage(name);
      await upload(base, await file(built.bytes)).expect(201);
      await expectRefused(base, built.bytes, 'uuid', 'has already been taken');
    });
  });
});
