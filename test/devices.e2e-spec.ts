import { randomUUID } from 'node:crypto';
import type { TestApp } from './support/test-app';
import type { TestUser } from './support/fixtures';
import type { FwupKeyPair } from './support/fw-builder';
import { orgScenario } from './support/scenario';
import { DEVICE_NOT_CONNECTED, fieldError, NOT_FOUND } from './support/contract-bodies';

describe('devices', () => {
  let t: TestApp;
  let admin: TestUser;
  let org: string;
  let key: FwupKeyPair;
  let base: string;
  beforeAll(async () => {
    ({ t, admin, org, key } = await orgScenario({ product: 'p', signingKey: 'release' }));
    base = `/api/orgs/${org}/products/p/devices`;
  });
  afterAll(() => t.close());

  const create = (body: object, url = base, who = admin) => t.http().post(url).set(who.auth).send(body);

  async function productWithDevices(count: number, name = `p${Math.random().toString(36).slice(2, 8)}`) {
    await t.fixtures.product(admin, org, name);
    const url = `/api/orgs/${org}/products/${name}/devices`;
    await t.fixtures.devices(
      admin,
      org,
      name,
      Array.from({ length: count }, (_, i) => `${name}-${i + 1}`),
    );
    return { name, url };
  }

  async function uploadFirmware(productName: string, version = '1.0.0'): Promise<string> {
    return (await t.fixtures.firmware(admin, org, productName, { version, key })).uuid;
  }

  describe('create and the Device record', () => {
    it('201, Location, and exactly the contract fields', async () => {
      const res = await create({ identifier: 'dev-1', description: 'bench', tags: 'b, a ,, b' }).expect(201);
      expect(res.headers.location).toBe(`${base}/dev-1`);
      expect(res.body).toEqual({
        data: {
          identifier: 'dev-1',
          org_name: org,
          product_name: 'p',
          description: 'bench',
          tags: 'b,a',
          version: null,
          connection_status: 'not_seen',
          online: false,
          last_communication: null,
          updates_enabled: true,
          updates_blocked_until: null,
          deployment_group: null,
          firmware_metadata: null,
        },
      });
      await t.http().get(`${base}/dev-1`).set(admin.auth).expect(200, res.body);
      await t.http().get(`/api/devices/dev-1`).set(admin.auth).expect(200, res.body);
    });

    it('shows reported firmware metadata as an object of strings, and version', async () => {
      await create({ identifier: 'meta-1' }).expect(201);
      // Reported by a connected device over its socket: no HTTP call sets these.
      await t.db.query(
        `UPDATE devices SET firmware_metadata = $2, firmware_version = '2.0.0', connection_status = 'connected',
                last_communication = '2026-11-22T01:02:03.456Z' WHERE identifier = $1`,
        ['meta-1', { uuid: 'u', version: '2.0.0', platform: 'rpi4', product: 'p', architecture: 'arm' }],
      );
      const res = await t.http().get(`/api/devices/meta-1`).set(admin.auth).expect(200);
      expect(res.body.data).toEqual(
        expect.objectContaining({
          version: '2.0.0',
          connection_status: 'connected',
          online: true,
          last_communication: '2026-11-22T01:02:03.456Z',
          firmware_metadata: {
            id: null,
            uuid: 'u',
            product: 'p',
            platform: 'rpi4',
            architecture: 'arm',
            version: '2.0.0',
            author: null,
            description: null,
            misc: null,
            vcs_identifier: null,
            fwup_version: null,
          },
        }),
      );
    });

    it.each([
      [{}, { identifier: ["can't be blank"] }],
      [
        { identifier: 'has space' },
        { identifier: ['must be 1-255 printable characters without whitespace or "/"'] },
      ],
      [
        { identifier: 'a/b' },
        { identifier: ['must be 1-255 printable characters without whitespace or "/"'] },
      ],
      [{ identifier: 'x'.repeat(256) }, { identifier: ['should be at most 255 character(s)'] }],
      [{ identifier: 7 }, { identifier: ['must be a string'] }],
      [{ identifier: 'ok-1', description: 5 }, { description: ['must be a string'] }],
      [
        { identifier: 'ok-2', tags: {} },
        { tags: ['must be a comma-separated string (or an array of strings)'] },
      ],
    ])('422 for %j', async (body, errors) => {
      const res = await create(body).expect(422);
      expect(res.body).toEqual({ errors });
    });

    it('identifiers are unique across the server (422), also under concurrency', async () => {
      await create({ identifier: 'taken' }).expect(201);
      const other = await t.fixtures.user();
      const otherOrg = await t.fixtures.org(other);
      await t.http().post(`/api/orgs/${otherOrg}/products`).set(other.auth).send({ name: 'q' }).expect(201);
      const res = await create(
        { identifier: 'taken' },
        `/api/orgs/${otherOrg}/products/q/devices`,
        other,
      ).expect(422);
      expect(res.body).toEqual(fieldError('identifier', 'has already been taken'));
      const results = await Promise.all(Array.from({ length: 8 }, () => create({ identifier: 'race-dev' })));
      expect(results.map((r) => r.status).sort()).toEqual([201, ...Array(7).fill(422)]);
    });
  });

  describe('update and delete', () => {
    it('PATCH changes description, tags, updates_enabled; DELETE removes', async () => {
      await create({ identifier: 'edit-1', tags: 'a' }).expect(201);
      const res = await t
        .http()
        .patch(`${base}/edit-1`)
        .set(admin.auth)
        .send({ description: 'new', tags: ['x', 'y'], updates_enabled: false, identifier: 'ignored' })
        .expect(200);
      expect(res.body.data).toEqual(
        expect.objectContaining({
          identifier: 'edit-1',
          description: 'new',
          tags: 'x,y',
          updates_enabled: false,
        }),
      );
      await t.http().patch(`${base}/edit-1`).set(admin.auth).send({ updates_enabled: 'no' }).expect(422);
      await t.http().delete(`${base}/edit-1`).set(admin.auth).expect(204);
      await t.http().get(`${base}/edit-1`).set(admin.auth).expect(404, NOT_FOUND);
      await t
        .http()
        .patch(`${base}/edit-1`)
        .set(admin.auth)
        .send({ description: 'x' })
        .expect(404, NOT_FOUND);
    });
  });

  describe('list', () => {
    it('default: identifier order, page size 10, exact pagination object', async () => {
      const { url } = await productWithDevices(23);
      const res = await t.http().get(url).set(admin.auth).expect(200);
      expect(res.body.data).toHaveLength(10);
      expect(res.body.pagination).toEqual({
        page_number: 1,
        page_size: 10,
        total_entries: 23,
        total_pages: 3,
      });
      const ids = res.body.data.map((d: { identifier: string }) => d.identifier);
      expect(ids).toEqual([...ids].sort());
    });

    it('an empty product: total_pages 0; a page past the end: [] with totals', async () => {
      const { url } = await productWithDevices(0);
      const res = await t.http().get(url).set(admin.auth).expect(200);
      expect(res.body).toEqual({
        data: [],
        pagination: { page_number: 1, page_size: 10, total_entries: 0, total_pages: 0 },
      });
      const { url: url5 } = await productWithDevices(5);
      const past = await t
        .http()
        .get(`${url5}?pagination[page]=3&pagination[page_size]=2`)
        .set(admin.auth)
        .expect(200);
      expect(past.body).toEqual({
        data: [expect.anything()],
        pagination: { page_number: 3, page_size: 2, total_entries: 5, total_pages: 3 },
      });
      const beyond = await t.http().get(`${url5}?page=4&page_size=2`).set(admin.auth).expect(200);
      expect(beyond.body.data).toEqual([]);
    });

    it.each(['identifier', 'inserted_at', 'last_communication', 'version', 'connection_status'])(
      'walking every page sorted by %s (both directions) visits each device exactly once',
      async (sort) => {
        const { name, url } = await productWithDevices(37);
        // Ties on purpose: few distinct values, some nulls (state a device reports; no HTTP call sets it).
        await t.db.query(
          `UPDATE devices SET
             last_communication = CASE WHEN random() < 0.3 THEN NULL ELSE now() - (floor(random() * 3) || ' hours')::interval END,
             firmware_version = CASE WHEN random() < 0.3 THEN NULL ELSE '1.' || floor(random() * 3) || '.0' END,
             connection_status = (ARRAY['connected','disconnected','not_seen'])[1 + floor(random() * 3)::int]::device_connection_status
           WHERE identifier LIKE $1`,
          [`${name}-%`],
        );
        for (const direction of ['asc', 'desc']) {
          const seen: string[] = [];
          for (let page = 1; page <= 8; page++) {
            const res = await t
              .http()
              .get(
                `${url}?sort=${sort}&sort_direction=${direction}&pagination[page]=${page}&pagination[page_size]=5`,
              )
              .set(admin.auth)
              .expect(200);
            seen.push(...res.body.data.map((d: { identifier: string }) => d.identifier));
          }
          expect(seen).toHaveLength(37);
          expect(new Set(seen).size).toBe(37);
        }
      },
    );

    it('sorts last_communication desc with the most recent first and never-seen last', async () => {
      const { name, url } = await productWithDevices(3);
      // last_communication is the time a device was last heard from: no HTTP call sets it.
      await t.db.query(
        `UPDATE devices SET last_communication = now() - interval '1 hour' WHERE identifier = $1`,
        [`${name}-1`],
      );
      await t.db.query(`UPDATE devices SET last_communication = now() WHERE identifier = $1`, [`${name}-2`]);
      const res = await t
        .http()
        .get(`${url}?sort=last_communication&sort_direction=desc`)
        .set(admin.auth)
        .expect(200);
      expect(res.body.data.map((d: { identifier: string }) => d.identifier)).toEqual([
        `${name}-2`,
        `${name}-1`,
        `${name}-3`,
      ]);
    });

    it('filters: identifier, search, tags (every tag), has_no_tags, connection, version, platform, updates', async () => {
      const { name, url } = await productWithDevices(0);
      const make = async (identifier: string, body: object, reported = '') => {
        await create({ identifier, ...body }, url).expect(201);
        // Reported state (version, platform, connection, penalty box) that no HTTP call sets.
        if (reported) await t.db.query(`UPDATE devices SET ${reported} WHERE identifier = $1`, [identifier]);
      };
      await make(`${name}-alpha`, { tags: 'beta,lab', description: 'Kitchen unit' });
      await make(`${name}-bravo`, { tags: 'beta' }, `firmware_version = '1.2.3', firmware_platform = 'rpi4'`);
      await make(`${name}-charlie`, {}, `connection_status = 'connected'`);
      await t
        .http()
        .patch(`${url}/${name}-charlie`)
        .set(admin.auth)
        .send({ updates_enabled: false })
        .expect(200);
      await make(`${name}-delta_x`, {}, `updates_blocked_until = now() + interval '1 hour'`);
      const ids = async (qs: string) => {
        const res = await t.http().get(`${url}?${qs}`).set(admin.auth).expect(200);
        expect(res.body.pagination.total_entries).toBe(res.body.data.length);
        return res.body.data.map((d: { identifier: string }) => d.identifier.replace(`${name}-`, ''));
      };
      expect(await ids('filters[identifier]=ALPHA')).toEqual(['alpha']);
      expect(await ids('filters[search]=kitchen')).toEqual(['alpha']);
      expect(await ids('filters[search]=1.2')).toEqual(['bravo']);
      expect(await ids('filters[search]=lab')).toEqual(['alpha']);
      expect(await ids('filters[tags]=beta')).toEqual(['alpha', 'bravo']);
      expect(await ids('filters[tags]=beta,lab')).toEqual(['alpha']);
      expect(await ids('filters[tags]=be')).toEqual([]);
      expect(await ids('filters[has_no_tags]=true')).toEqual(['charlie', 'delta_x']);
      expect(await ids('filters[has_no_tags]=false')).toHaveLength(4);
      expect(await ids('filters[connection]=connected')).toEqual(['charlie']);
      expect(await ids('filters[connection]=not_seen')).toEqual(['alpha', 'bravo', 'delta_x']);
      expect(await ids('filters[firmware_version]=1.2.3')).toEqual(['bravo']);
      expect(await ids('filters[platform]=rpi4')).toEqual(['bravo']);
      expect(await ids('filters[updates]=disabled')).toEqual(['charlie']);
      expect(await ids('filters[updates]=enabled')).toHaveLength(3);
      expect(await ids('filters[updates]=penalty-box')).toEqual(['delta_x']);
      expect(await ids('filters[identifier]=_')).toEqual(['delta_x']);
      expect(await ids('filters[identifier]=%25')).toEqual([]);
      expect(await ids('filters[identifier]=')).toHaveLength(4);
      expect(await ids('filters[tags]=beta&filters[search]=kitchen')).toEqual(['alpha']);
    });

    it.each([
      ['sort=name', 'sort'],
      ['sort_direction=up', 'sort_direction'],
      ['pagination[page]=0', 'pagination[page]'],
      ['pagination[page]=-1', 'pagination[page]'],
      ['pagination[page]=abc', 'pagination[page]'],
      ['pagination[page_size]=0', 'pagination[page_size]'],
      ['pagination[page_size]=501', 'pagination[page_size]'],
      ['page_size=99999999999999999999', 'page_size'],
      ['filters[color]=red', 'filters[color]'],
      ['filters[connection]=online', 'filters[connection]'],
      ['filters[updates]=maybe', 'filters[updates]'],
      ['filters[has_no_tags]=yes', 'filters[has_no_tags]'],
      ['sort=identifier&sort=version', 'sort'],
      ['filters=x', 'filters'],
      [`filters[search]=${'x'.repeat(300)}`, 'filters[search]'],
    ])('422 naming the parameter for %s', async (qs, param) => {
      const res = await t.http().get(`${base}?${qs}`).set(admin.auth).expect(422);
      expect(Object.keys(res.body.errors)).toEqual([param]);
    });
  });

  describe('upgrade', () => {
    it('records a pending update (204); a second replaces it', async () => {
      await create({ identifier: 'upg-1' }).expect(201);
      const first = await uploadFirmware('p', '1.0.0');
      const second = await uploadFirmware('p', '1.1.0');
      await t.http().post(`${base}/upg-1/upgrade`).set(admin.auth).send({ uuid: first }).expect(204);
      await t
        .http()
        .post(`/api/devices/upg-1/upgrade`)
        .set(admin.auth)
        .send({ uuid: second.toUpperCase() })
        .expect(204);
      const rows = await t.db.query(
        `SELECT f.uuid FROM pending_updates u JOIN devices d ON d.id = u.device_id JOIN firmwares f ON f.id = u.firmware_id
          WHERE d.identifier = 'upg-1'`,
      );
      expect(rows).toEqual([{ uuid: second }]);
    });

    it('422 for a missing uuid and for a uuid not of this product; 404 for unknown devices', async () => {
      await create({ identifier: 'upg-2' }).expect(201);
      const blank = await t.http().post(`${base}/upg-2/upgrade`).set(admin.auth).send({}).expect(422);
      expect(blank.body).toEqual(fieldError('uuid', "can't be blank"));
      await t.fixtures.product(admin, org, 'other-product');
      const foreign = await uploadFirmware('other-product');
      for (const uuid of [foreign, randomUUID(), 'not-a-uuid', "' OR 1=1 --"]) {
        const res = await t.http().post(`${base}/upg-2/upgrade`).set(admin.auth).send({ uuid }).expect(422);
        expect(res.body).toEqual(fieldError('uuid', 'does not match a firmware of this product'));
      }
      await t
        .http()
        .post(`${base}/nope/upgrade`)
        .set(admin.auth)
        .send({ uuid: foreign })
        .expect(404, NOT_FOUND);
      await t
        .http()
        .post(`/api/devices/nope/upgrade`)
        .set(admin.auth)
        .send({ uuid: foreign })
        .expect(404, NOT_FOUND);
    });
  });

  describe('upgrade racing a delete', () => {
    /**
     * Another transaction deletes the row (and holds it) while the upgrade is recorded: the upgrade has already
     * found the firmware and the device, and its insert waits for that transaction, which then commits.
     */
    async function upgradeWhileDeleting(identifier: string, uuid: string, deletion: string, param: string) {
      const other = t.db.createQueryRunner();
      await other.connect();
      try {
        await other.startTransaction();
        await other.query(deletion, [param]);
        const answer = t.http().post(`${base}/${identifier}/upgrade`).set(admin.auth).send({ uuid }).then();
        for (let i = 0; i < 200; i++) {
          const waiting = await t.db.query(
            `SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO pending_updates%'`,
          );
          if (waiting.length > 0) break;
          await new Promise((resolve) => setTimeout(resolve, 25));
        }
        await other.commitTransaction();
        return await answer;
      } finally {
        await other.release();
      }
    }

    it('the firmware deleted meanwhile: 422 on uuid, nothing recorded', async () => {
      await create({ identifier: 'upg-race-fw' }).expect(201);
      const uuid = await uploadFirmware('p', '9.0.0');
      const res = await upgradeWhileDeleting(
        'upg-race-fw',
        uuid,
        `DELETE FROM firmwares WHERE uuid = $1`,
        uuid,
      );
      expect(res.status).toBe(422);
      expect(res.body).toEqual({ errors: { uuid: ['does not match a firmware of this product'] } });
      const rows = await t.db.query(
        `SELECT 1 FROM pending_updates u JOIN devices d ON d.id = u.device_id WHERE d.identifier = 'upg-race-fw'`,
      );
      expect(rows).toEqual([]);
    });

    it('the device deleted meanwhile: 404', async () => {
      await create({ identifier: 'upg-race-dev' }).expect(201);
      const uuid = await uploadFirmware('p', '9.0.1');
      const res = await upgradeWhileDeleting(
        'upg-race-dev',
        uuid,
        `DELETE FROM devices WHERE identifier = $1`,
        'upg-race-dev',
      );
      expect(res.status).toBe(404);
      expect(res.body).toEqual(NOT_FOUND);
    });
  });

  describe('console code', () => {
    it('409 when the device is not connected (code or legacy body)', async () => {
      await create({ identifier: 'con-1' }).expect(201);
      for (const body of [{ code: 'IO.puts(1)' }, { body: 'IO.puts(1)' }]) {
        const res = await t.http().post('/api/devices/con-1/code').set(admin.auth).send(body).expect(409);
        expect(res.body).toEqual(DEVICE_NOT_CONNECTED);
      }
    });

    it('422 when code is missing, not a string or over 16,384 characters; 404 for unknown devices', async () => {
      await create({ identifier: 'con-2' }).expect(201);
      const res = await t
        .http()
        .post('/api/devices/con-2/code')
        .set(admin.auth)
        .send({ snoot: 'boop' })
        .expect(422);
      expect(res.body).toEqual(fieldError('code', "can't be blank"));
      await t.http().post('/api/devices/con-2/code').set(admin.auth).send({ code: 5 }).expect(422);
      for (const field of ['code', 'body']) {
        const tooLong = await t
          .http()
          .post('/api/devices/con-2/code')
          .set(admin.auth)
          .send({ [field]: 'é'.repeat(16_385) })
          .expect(422);
        expect(tooLong.body).toEqual({ errors: { [field]: ['should be at most 16384 character(s)'] } });
      }
      // At the bound, the code is accepted and only the device's absence refuses it.
      await t
        .http()
        .post('/api/devices/con-2/code')
        .set(admin.auth)
        .send({ code: 'é'.repeat(16_384) })
        .expect(409);
      await t
        .http()
        .post('/api/devices/none-such/code')
        .set(admin.auth)
        .send({ code: 'x' })
        .expect(404, NOT_FOUND);
    });
  });

  describe('roles and isolation', () => {
    let viewer: TestUser;
    let outsider: TestUser;
    beforeAll(async () => {
      [viewer, outsider] = await Promise.all([t.fixtures.user(), t.fixtures.user()]);
      await t.fixtures.addMember(org, viewer, 'view');
      await create({ identifier: 'roles-dev' }).expect(201);
    });

    it('view reads (nested and short URL) but cannot change anything', async () => {
      await t.http().get(base).set(viewer.auth).expect(200);
      await t.http().get(`${base}/roles-dev`).set(viewer.auth).expect(200);
      await t.http().get('/api/devices/roles-dev').set(viewer.auth).expect(200);
      await create({ identifier: 'by-viewer' }, base, viewer).expect(403, NOT_FOUND);
      await t
        .http()
        .patch(`${base}/roles-dev`)
        .set(viewer.auth)
        .send({ description: 'x' })
        .expect(403, NOT_FOUND);
      await t.http().delete(`${base}/roles-dev`).set(viewer.auth).expect(403, NOT_FOUND);
      await t
        .http()
        .post(`${base}/roles-dev/upgrade`)
        .set(viewer.auth)
        .send({ uuid: randomUUID() })
        .expect(403, NOT_FOUND);
      await t
        .http()
        .post('/api/devices/roles-dev/code')
        .set(viewer.auth)
        .send({ code: 'x' })
        .expect(403, NOT_FOUND);
    });

    it('outsiders cannot tell whether a device exists', async () => {
      for (const url of [
        '/api/devices/roles-dev',
        '/api/devices/no-such-device',
        `${base}/roles-dev`,
        base,
      ]) {
        await t.http().get(url).set(outsider.auth).expect(404, NOT_FOUND);
      }
      await t
        .http()
        .post('/api/devices/roles-dev/code')
        .set(outsider.auth)
        .send({ code: 'x' })
        .expect(404, NOT_FOUND);
    });
  });
});

describe('device totals kept by triggers', () => {
  let t: TestApp;
  let admin: TestUser;
  let org: string;
  beforeAll(async () => {
    ({ t, admin, org } = await orgScenario());
    for (const name of ['one', 'two']) await t.fixtures.product(admin, org, name);
  });
  afterAll(() => t.close());

  const total = async (product: string, qs = '') => {
    const res = await t
      .http()
      .get(`/api/orgs/${org}/products/${product}/devices?${qs}`)
      .set(admin.auth)
      .expect(200);
    return res.body.pagination.total_entries as number;
  };
  const actual = async (product: string, tag?: string) => {
    const [{ count }] = await t.db.query(
      `SELECT count(*)::int AS count FROM devices d JOIN products p ON p.id = d.product_id
        WHERE p.name = $1 AND ($2::text IS NULL OR d.tags @> ARRAY[$2::text])`,
      [product, tag ?? null],
    );
    return count as number;
  };

  it('stay exact through API writes, bulk SQL, tag changes, moves and deletes', async () => {
    const base = `/api/orgs/${org}/products/one/devices`;
    await t.http().post(base).set(admin.auth).send({ identifier: 'c-1', tags: 'a,b' }).expect(201);
    await t.http().post(base).set(admin.auth).send({ identifier: 'c-2', tags: 'a' }).expect(201);
    // Bulk SQL on purpose: the triggers must keep the totals exact for writes that bypass the API too.
    await t.db.query(
      `INSERT INTO devices (org_id, product_id, identifier, tags)
       SELECT p.org_id, p.id, 'bulk-' || i, CASE WHEN i % 2 = 0 THEN ARRAY['a','a'] ELSE '{}' END
         FROM products p, generate_series(1, 50) i WHERE p.name = 'one' AND p.org_id = (SELECT id FROM orgs WHERE name = $1)`,
      [org],
    );
    await t.http().patch(`${base}/c-1`).set(admin.auth).send({ tags: 'b,c' }).expect(200);
    await t.db
      .query(`UPDATE devices SET product_id = (SELECT id FROM products WHERE name = 'two' AND org_id = devices.org_id)
                       WHERE identifier IN ('bulk-1', 'bulk-2')`);
    await t.db.query(`UPDATE devices SET last_communication = now() WHERE identifier LIKE 'bulk-%'`);
    await t.http().delete(`${base}/c-2`).set(admin.auth).expect(204);
    await t.db.query(`DELETE FROM devices WHERE identifier IN ('bulk-3', 'bulk-4')`);

    for (const product of ['one', 'two']) {
      expect(await total(product)).toBe(await actual(product));
      for (const tag of ['a', 'b', 'c', 'zzz']) {
        expect({ product, tag, total: await total(product, `filters[tags]=${tag}`) }).toEqual({
          product,
          tag,
          total: await actual(product, tag),
        });
      }
    }
    expect(await total('one')).toBe(47);
    expect(await total('one', 'filters[tags]=a')).toBe(23);
  });

  it('concurrent registrations in one product are all counted', async () => {
    const base = `/api/orgs/${org}/products/two/devices`;
    const before = await total('two');
    await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        t
          .http()
          .post(base)
          .set(admin.auth)
          .send({ identifier: `par-${i}`, tags: 'x,y' })
          .expect(201),
      ),
    );
    expect(await total('two')).toBe(before + 20);
    expect(await total('two', 'filters[tags]=y')).toBe(20);
  });
});
