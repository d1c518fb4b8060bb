import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeviceAuthModule } from '../src/device-auth/device-auth.module';
import { DeviceAuthenticator } from '../src/device-auth/device-authenticator';
import { signNh1Headers } from '../src/device-auth/nh1';
import { SECRET_KEY_FILE, ServerKeyService } from '../src/device-auth/server-key.service';
import type { TestApp } from './support/test-app';
import { orgScenario } from './support/scenario';
import { type TestUser, unique } from './support/fixtures';
import { NOT_FOUND } from './support/contract-bodies';

const PRODUCT_KEY = /^nhp_[0-9A-Za-z]{43}$/;
const DEVICE_KEY = /^nhd_[0-9A-Za-z]{43}$/;
const SECRET = /^[0-9A-Za-z]{43}$/;

const nowS = () => Math.floor(Date.now() / 1000);

let addressCounter = 0;
/** Each test authenticates from its own address, so that the failure limiter of one test cannot affect another. */
const address = () => `198.51.100.${++addressCounter}`;

describe('shared secrets and NH1 device authentication', () => {
  let t: TestApp;
  let admin: TestUser;
  let org: string;
  let product: string;
  let base: string;
  let auth: DeviceAuthenticator;

  beforeAll(async () => {
    ({ t, admin, org, product } = await orgScenario({ product: unique('product') }));
    base = `/api/orgs/${org}/products/${product}`;
    // Strictly from DeviceAuthModule: another module may still provide a stand-in under the same token.
    auth = t.app.select(DeviceAuthModule).get(DeviceAuthenticator, { strict: true });
  });
  afterAll(() => t.close());

  async function productSecret(path = base): Promise<{ key: string; secret: string; inserted_at: string }> {
    const res = await t.http().post(`${path}/shared_secrets`).set(admin.auth).expect(201);
    return res.body.data;
  }

  async function device(identifier = unique('dev-'), path = base): Promise<string> {
    await t.http().post(`${path}/devices`).set(admin.auth).send({ identifier }).expect(201);
    return identifier;
  }

  async function deviceSecret(identifier: string, path = base): Promise<{ key: string; secret: string }> {
    const res = await t
      .http()
      .post(`${path}/devices/${identifier}/shared_secrets`)
      .set(admin.auth)
      .expect(201);
    return res.body.data;
  }

  const headersFor = (credentials: { key: string; secret: string }, identifier: string, timeS = nowS()) =>
    signNh1Headers({ key: credentials.key, secret: credentials.secret, identifier, timeS });

  describe('API', () => {
    it('creates a product secret (201), lists it without the secret, and deactivates it (204)', async () => {
      const res = await t.http().post(`${base}/shared_secrets`).set(admin.auth).expect(201);
      expect(res.body).toEqual({
        data: {
          key: expect.stringMatching(PRODUCT_KEY),
          secret: expect.stringMatching(SECRET),
          inserted_at: expect.stringMatching(/Z$/),
        },
      });
      const { key, secret, inserted_at } = res.body.data;
      expect(res.headers.location).toBe(`${base}/shared_secrets/${key}`);

      const list = await t.http().get(`${base}/shared_secrets`).set(admin.auth).expect(200);
      expect(list.body.data).toContainEqual({ key, inserted_at, deactivated_at: null });
      expect(JSON.stringify(list.body)).not.toContain(secret);

      await t.http().delete(`${base}/shared_secrets/${key}`).set(admin.auth).expect(204);
      const after = await t.http().get(`${base}/shared_secrets`).set(admin.auth).expect(200);
      const row = after.body.data.find((s: { key: string }) => s.key === key);
      expect(row).toEqual({ key, inserted_at, deactivated_at: expect.stringMatching(/Z$/) });

      // Idempotent: deactivating again is a 204 and keeps the first time.
      await t.http().delete(`${base}/shared_secrets/${key}`).set(admin.auth).expect(204);
      const again = await t.http().get(`${base}/shared_secrets`).set(admin.auth).expect(200);
      expect(again.body.data.find((s: { key: string }) => s.key === key)).toEqual(row);
    });

    it('lists oldest first and every secret is different', async () => {
      const name = unique('p');
      await t.fixtures.product(admin, org, name);
      const path = `/api/orgs/${org}/products/${name}`;
      const first = await productSecret(path);
      const second = await productSecret(path);
      expect(second.secret).not.toBe(first.secret);
      const list = await t.http().get(`${path}/shared_secrets`).set(admin.auth).expect(200);
      expect(list.body).toEqual({
        data: [
          { key: first.key, inserted_at: first.inserted_at, deactivated_at: null },
          { key: second.key, inserted_at: second.inserted_at, deactivated_at: null },
        ],
      });
    });

    it('404 for an unknown key, a key of another product, and an unknown product', async () => {
      const other = unique('other');
      await t.fixtures.product(admin, org, other);
      const { key } = await productSecret(`/api/orgs/${org}/products/${other}`);
      await t.http().delete(`${base}/shared_secrets/${key}`).set(admin.auth).expect(404, NOT_FOUND);
      await t
        .http()
        .delete(`${base}/shared_secrets/nhp_${'A'.repeat(43)}`)
        .set(admin.auth)
        .expect(404, NOT_FOUND);
      await t.http().delete(`${base}/shared_secrets/garbage`).set(admin.auth).expect(404, NOT_FOUND);
      await t
        .http()
        .post(`/api/orgs/${org}/products/missing/shared_secrets`)
        .set(admin.auth)
        .expect(404, NOT_FOUND);
      await t
        .http()
        .get(`/api/orgs/${org}/products/missing/shared_secrets`)
        .set(admin.auth)
        .expect(404, NOT_FOUND);
      // The key of the other product is still active.
      const list = await t
        .http()
        .get(`/api/orgs/${org}/products/${other}/shared_secrets`)
        .set(admin.auth)
        .expect(200);
      expect(list.body.data).toEqual([expect.objectContaining({ key, deactivated_at: null })]);
    });

    it('creates a device secret (201) and 404s for an unknown device or a device of another product', async () => {
      const identifier = await device();
      const res = await t
        .http()
        .post(`${base}/devices/${identifier}/shared_secrets`)
        .set(admin.auth)
        .expect(201);
      expect(res.body).toEqual({
        data: {
          key: expect.stringMatching(DEVICE_KEY),
          secret: expect.stringMatching(SECRET),
          inserted_at: expect.stringMatching(/Z$/),
        },
      });
      expect(res.headers.location).toBe(`${base}/devices/${identifier}/shared_secrets/${res.body.data.key}`);
      await t.http().post(`${base}/devices/nope/shared_secrets`).set(admin.auth).expect(404, NOT_FOUND);

      const other = unique('other');
      await t.fixtures.product(admin, org, other);
      await t
        .http()
        .post(`/api/orgs/${org}/products/${other}/devices/${identifier}/shared_secrets`)
        .set(admin.auth)
        .expect(404, NOT_FOUND);
    });

    it('roles: view lists; view and manage cannot create or deactivate; outsiders get 404', async () => {
      const [viewer, manager, outsider] = await Promise.all([
        t.fixtures.user(),
        t.fixtures.user(),
        t.fixtures.user(),
      ]);
      await t.fixtures.addMember(org, viewer, 'view');
      await t.fixtures.addMember(org, manager, 'manage');
      const { key } = await productSecret();
      const identifier = await device();

      await t.http().get(`${base}/shared_secrets`).set(viewer.auth).expect(200);
      for (const member of [viewer, manager]) {
        await t.http().post(`${base}/shared_secrets`).set(member.auth).expect(403, NOT_FOUND);
        await t.http().delete(`${base}/shared_secrets/${key}`).set(member.auth).expect(403, NOT_FOUND);
        await t
          .http()
          .post(`${base}/devices/${identifier}/shared_secrets`)
          .set(member.auth)
          .expect(403, NOT_FOUND);
      }
      await t.http().get(`${base}/shared_secrets`).set(outsider.auth).expect(404, NOT_FOUND);
      await t.http().post(`${base}/shared_secrets`).set(outsider.auth).expect(404, NOT_FOUND);
      await t.http().delete(`${base}/shared_secrets/${key}`).set(outsider.auth).expect(404, NOT_FOUND);
      await t
        .http()
        .post(`${base}/devices/${identifier}/shared_secrets`)
        .set(outsider.auth)
        .expect(404, NOT_FOUND);
      await t.http().get(`${base}/shared_secrets`).expect(401);

      const list = await t.http().get(`${base}/shared_secrets`).set(admin.auth).expect(200);
      expect(list.body.data).toContainEqual(expect.objectContaining({ key, deactivated_at: null }));
    });

    it('stores secrets encrypted: the database never holds the plain secret', async () => {
      const product_ = await productSecret();
      const device_ = await deviceSecret(await device());
      const rows: { key: string; secret_encrypted: Buffer }[] = await t.db.query(
        `SELECT key, secret_encrypted FROM product_shared_secrets WHERE key = $1
         UNION ALL SELECT key, secret_encrypted FROM device_shared_secrets WHERE key = $2`,
        [product_.key, device_.key],
      );
      expect(rows).toHaveLength(2);
      for (const [row, plain] of [
        [rows[0], product_.secret],
        [rows[1], device_.secret],
      ] as const) {
        expect(row.secret_encrypted.includes(Buffer.from(plain))).toBe(false);
        expect(row.secret_encrypted.toString('latin1')).not.toContain(plain);
        expect(row.secret_encrypted.length).toBeGreaterThan(plain.length);
        expect(t.app.get(ServerKeyService).decrypt(row.secret_encrypted)).toBe(plain);
      }
    });
    it('records creation, deactivation and auto-registration in the audit log, never the secret', async () => {
      const credentials = await productSecret();
      const identifier = await device();
      const deviceCredentials = await deviceSecret(identifier);
      await t.http().delete(`${base}/shared_secrets/${credentials.key}`).set(admin.auth).expect(204);
      await t.http().delete(`${base}/shared_secrets/${credentials.key}`).set(admin.auth).expect(204);
      const registering = await productSecret();
      const registered = unique('audited-');
      expect(await auth.authenticate(headersFor(registering, registered), address())).not.toBeNull();

      const rows: { action: string; target_id: string; actor_type: string; details: unknown }[] =
        await t.db.query(
          `SELECT action, target_id, actor_type, details FROM audit_logs
            WHERE details->>'key' = ANY($1) ORDER BY id`,
          [[credentials.key, deviceCredentials.key, registering.key]],
        );
      expect(rows).toEqual([
        {
          action: 'shared_secret.create',
          target_id: product,
          actor_type: 'user',
          details: { key: credentials.key },
        },
        {
          action: 'device_shared_secret.create',
          target_id: identifier,
          actor_type: 'user',
          details: { key: deviceCredentials.key },
        },
        {
          action: 'shared_secret.deactivate',
          target_id: product,
          actor_type: 'user',
          details: { key: credentials.key },
        },
        {
          action: 'shared_secret.create',
          target_id: product,
          actor_type: 'user',
          details: { key: registering.key },
        },
        {
          action: 'device.register',
          target_id: registered,
          actor_type: 'system',
          details: { key: registering.key },
        },
      ]);
      const all = JSON.stringify(await t.db.query(`SELECT * FROM audit_logs`));
      for (const secret of [credentials.secret, deviceCredentials.secret, registering.secret]) {
        expect(all).not.toContain(secret);
      }
    });
  });

  describe('DeviceAuthenticator (NH1)', () => {
    it('a product key registers an unknown device, and finds it the second time', async () => {
      const credentials = await productSecret();
      const identifier = unique('auto-');
      const first = await auth.authenticate(headersFor(credentials, identifier), address());
      expect(first).toEqual({
        deviceId: expect.any(String),
        identifier,
        productId: expect.any(String),
        orgId: expect.any(String),
        registered: true,
      });
      const res = await t.http().get(`${base}/devices/${identifier}`).set(admin.auth).expect(200);
      expect(res.body.data.identifier).toBe(identifier);

      const second = await auth.authenticate(headersFor(credentials, identifier), address());
      expect(second).toEqual({ ...first, registered: false });
    });

    it('concurrent first connections of one identifier resolve to the same device', async () => {
      const credentials = await productSecret();
      const identifier = unique('race-');
      const results = await Promise.all(
        Array.from({ length: 8 }, () => auth.authenticate(headersFor(credentials, identifier), address())),
      );
      expect(results.every((r) => r !== null)).toBe(true);
      expect(new Set(results.map((r) => r!.deviceId)).size).toBe(1);
      expect(results.filter((r) => r!.registered)).toHaveLength(1);
    });

    it('an identifier that exists in another product (or organization) is refused', async () => {
      const other = unique('other');
      await t.fixtures.product(admin, org, other);
      const taken = await device(unique('taken-'), `/api/orgs/${org}/products/${other}`);
      const credentials = await productSecret();
      expect(await auth.authenticate(headersFor(credentials, taken), address())).toBeNull();

      const stranger = await t.fixtures.user();
      const strangerOrg = await t.fixtures.org(stranger);
      await t
        .http()
        .post(`/api/orgs/${strangerOrg}/products`)
        .set(stranger.auth)
        .send({ name: 'p' })
        .expect(201);
      const elsewhere = unique('elsewhere-');
      await t
        .http()
        .post(`/api/orgs/${strangerOrg}/products/p/devices`)
        .set(stranger.auth)
        .send({ identifier: elsewhere })
        .expect(201);
      expect(await auth.authenticate(headersFor(credentials, elsewhere), address())).toBeNull();
      // Nothing was registered or moved.
      await t.http().get(`${base}/devices/${taken}`).set(admin.auth).expect(404);
      await t.http().get(`${base}/devices/${elsewhere}`).set(admin.auth).expect(404);
    });

    it('a product key does not register an identifier that the API would refuse', async () => {
      const credentials = await productSecret();
      expect(await auth.authenticate(headersFor(credentials, 'has space'), address())).toBeNull();
      expect(await auth.authenticate(headersFor(credentials, 'a/b'), address())).toBeNull();
    });

    it('a device key authenticates its own device and no other', async () => {
      const identifier = await device();
      const otherDevice = await device();
      const credentials = await deviceSecret(identifier);
      const ok = await auth.authenticate(headersFor(credentials, identifier), address());
      expect(ok).toEqual({
        deviceId: expect.any(String),
        identifier,
        productId: expect.any(String),
        orgId: expect.any(String),
        registered: false,
      });
      expect(await auth.authenticate(headersFor(credentials, otherDevice), address())).toBeNull();
      expect(await auth.authenticate(headersFor(credentials, unique('new-')), address())).toBeNull();
    });

    it('refuses a deactivated key', async () => {
      const credentials = await productSecret();
      const identifier = unique('deact-');
      expect(await auth.authenticate(headersFor(credentials, identifier), address())).not.toBeNull();
      await t.http().delete(`${base}/shared_secrets/${credentials.key}`).set(admin.auth).expect(204);
      expect(await auth.authenticate(headersFor(credentials, identifier), address())).toBeNull();
    });

    it('refuses a tampered signature, a wrong secret, an expired or future time, and an unknown key', async () => {
      const credentials = await productSecret();
      const identifier = unique('bad-');
      const good = headersFor(credentials, identifier);
      const sig = good['x-nh-signature'];
      const tampered = {
        ...good,
        'x-nh-signature': `${sig.slice(0, -2)}${sig.endsWith('AA') ? 'BA' : 'AA'}`,
      };
      expect(await auth.authenticate(tampered, address())).toBeNull();
      const wrongSecret = headersFor({ key: credentials.key, secret: `${credentials.secret}x` }, identifier);
      expect(await auth.authenticate(wrongSecret, address())).toBeNull();
      expect(
        await auth.authenticate(headersFor(credentials, identifier, nowS() - 120), address()),
      ).toBeNull();
      expect(await auth.authenticate(headersFor(credentials, identifier, nowS() + 60), address())).toBeNull();
      const unknown = headersFor({ key: `nhp_${'Z'.repeat(43)}`, secret: credentials.secret }, identifier);
      expect(await auth.authenticate(unknown, address())).toBeNull();
      expect(await auth.authenticate({}, address())).toBeNull();
      expect(
        await auth.authenticate({ ...good, 'x-nh-alg': 'NH1-HMAC-sha512-1000-32' }, address()),
      ).toBeNull();
      // None of these registered the device; the good headers still work.
      await t.http().get(`${base}/devices/${identifier}`).set(admin.auth).expect(404);
      expect(await auth.authenticate(good, address())).not.toBeNull();
    });

    it('accepts a signing time 80 s old and 3 s ahead', async () => {
      const credentials = await productSecret();
      const identifier = unique('skew-');
      expect(
        await auth.authenticate(headersFor(credentials, identifier, nowS() - 80), address()),
      ).not.toBeNull();
      expect(
        await auth.authenticate(headersFor(credentials, identifier, nowS() + 3), address()),
      ).not.toBeNull();
    });

    it('judges the signing time at the arrival of the request: a wait for its turn neither expires nor counts', async () => {
      const credentials = await productSecret();
      const fleet = address();
      const signedAt = nowS() - 120;
      const arrival = (signedAt + 10) * 1000;
      for (let i = 0; i < 25; i++) {
        const headers = headersFor(credentials, unique('queued-'), signedAt);
        expect(await auth.authenticate(headers, fleet, arrival)).not.toBeNull();
      }
      expect(await auth.authenticate(headersFor(credentials, unique('late-'), signedAt), fleet)).toBeNull();
      expect(
        await auth.authenticate(headersFor(credentials, unique('stale-'), signedAt), fleet, Date.now()),
      ).toBeNull();
      // Two failures from this address so far: far from the limit, fresh requests still get in.
      expect(await auth.authenticate(headersFor(credentials, unique('next-')), fleet)).not.toBeNull();
    });

    it('after 20 failures from one address, refuses it even with good credentials', async () => {
      const credentials = await productSecret();
      const identifier = unique('limited-');
      const attacker = address();
      const bad = { ...headersFor(credentials, identifier), 'x-nh-signature': 'SFMyNTY.AAAA.AAAA' };
      for (let i = 0; i < 20; i++) expect(await auth.authenticate(bad, attacker)).toBeNull();
      expect(await auth.authenticate(headersFor(credentials, identifier), attacker)).toBeNull();
      expect(await auth.authenticate(headersFor(credentials, identifier), address())).not.toBeNull();
    });
  });
});

describe('server secret key', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fleethub-key-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  const service = (secretKey: string | null, dataDir = dir) => new ServerKeyService({ secretKey, dataDir });

  it('generates the key once (mode 600); concurrent starts agree on it', async () => {
    const dataDir = join(dir, 'nested', 'data');
    const services = Array.from({ length: 8 }, () => service(null, dataDir));
    await Promise.all(services.map((s) => s.load()));
    const text = (await readFile(join(dataDir, SECRET_KEY_FILE), 'utf8')).trim();
    expect(Buffer.from(text, 'base64')).toHaveLength(32);
    expect((await stat(join(dataDir, SECRET_KEY_FILE))).mode & 0o777).toBe(0o600);
    const keys = new Set(services.map((s) => s.subkey('encrypt-shared-secrets').toString('hex')));
    expect(keys.size).toBe(1);
    // Only the key file is left behind (no temporary files).
    expect(await readdir(dataDir)).toEqual([SECRET_KEY_FILE]);

    // A later start reads the same key; the file's text works as FLEETHUB_SECRET_KEY too.
    const later = service(null, dataDir);
    await later.load();
    const fromEnv = service(text);
    await fromEnv.load();
    const blob = services[0].encrypt('hello');
    expect(later.decrypt(blob)).toBe('hello');
    expect(fromEnv.decrypt(blob)).toBe('hello');
  });

  it('uses FLEETHUB_SECRET_KEY when set and writes no file', async () => {
    const s = service('a'.repeat(40));
    await s.load();
    expect(s.subkey('sign-download-urls')).toHaveLength(32);
    expect(await readdir(dir)).toEqual([]);
  });

  it('derives distinct sub-keys per purpose and per server key', async () => {
    const a = service('a'.repeat(40));
    const b = service('b'.repeat(40));
    await Promise.all([a.load(), b.load()]);
    expect(a.subkey('encrypt-shared-secrets').equals(a.subkey('sign-download-urls'))).toBe(false);
    expect(a.subkey('encrypt-shared-secrets').equals(b.subkey('encrypt-shared-secrets'))).toBe(false);
  });

  it('encrypts with a fresh nonce and refuses altered blobs or another key', async () => {
    const a = service('a'.repeat(40));
    const b = service('b'.repeat(40));
    await Promise.all([a.load(), b.load()]);
    const one = a.encrypt('secret value');
    const two = a.encrypt('secret value');
    expect(one.equals(two)).toBe(false);
    expect(one[0]).toBe(1);
    expect(one).toHaveLength(1 + 12 + 'secret value'.length + 16);
    expect(a.decrypt(one)).toBe('secret value');
    expect(() => b.decrypt(one)).toThrow();
    for (const index of [0, 5, 20, one.length - 1]) {
      const altered = Buffer.from(one);
      altered[index] ^= 1;
      expect(() => a.decrypt(altered)).toThrow();
    }
    expect(() => a.decrypt(one.subarray(0, 20))).toThrow();
  });

  it('refuses to start with a key file that is too short', async () => {
    await writeFile(join(dir, SECRET_KEY_FILE), 'short\n', { mode: 0o600 });
    await expect(service(null).load()).rejects.toThrow(/at least 32 characters/);
  });
});
