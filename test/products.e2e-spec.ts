import type { TestApp } from './support/test-app';
import type { TestUser } from './support/fixtures';
import { orgScenario } from './support/scenario';
import {
  detail,
  fieldError,
  fieldErrors,
  FORBIDDEN,
  NOT_FOUND,
  UNAUTHORIZED,
} from './support/contract-bodies';

const DEFAULTS = {
  allow_unsigned_atomvm_firmware: false,
  allow_unsigned_esp_idf_firmware: false,
  allowed_update_tools: ['fwup'],
  require_unique_firmware_version: true,
};
const EXTENSION_DEFAULTS = {
  health: false,
  geo: false,
  local_shell: false,
  logging: false,
  network_identity: true,
};

describe('products', () => {
  let t: TestApp;
  let admin: TestUser;
  let org: string;
  beforeAll(async () => {
    ({ t, admin, org } = await orgScenario());
  });
  afterAll(() => t.close());

  const create = (name: unknown, who = admin, wrap = true) =>
    t
      .http()
      .post(`/api/orgs/${org}/products`)
      .set(who.auth)
      .send(wrap ? { product: { name } } : { name });

  describe('POST /api/orgs/{org}/products', () => {
    it('creates with the spec defaults, 201 and Location (wrapped body)', async () => {
      const res = await create('gateway').expect(201);
      expect(res.body).toEqual({ data: { name: 'gateway', ...DEFAULTS } });
      expect(res.headers.location).toBe(`/api/orgs/${org}/products/gateway`);
      await t.http().get(res.headers.location).set(admin.auth).expect(200, res.body);
    });

    it('accepts a top-level body and trims the name', async () => {
      const res = await create('  sensor  ', admin, false).expect(201);
      expect(res.body.data.name).toBe('sensor');
    });

    it('ignores unknown fields on create', async () => {
      const res = await t
        .http()
        .post(`/api/orgs/${org}/products`)
        .set(admin.auth)
        .send({ name: 'extra', color: 'red', allow_unsigned_atomvm_firmware: true })
        .expect(201);
      expect(res.body.data).toEqual({ name: 'extra', ...DEFAULTS });
    });

    it.each([
      [undefined, "can't be blank"],
      ['', "can't be blank"],
      ['   ', "can't be blank"],
      [null, "can't be blank"],
      [42, 'must be a string'],
      [['a'], 'must be a string'],
      ['x'.repeat(256), 'should be at most 255 character(s)'],
    ])('422 for name %p', async (name, message) => {
      const res = await create(name).expect(422);
      expect(res.body).toEqual(fieldError('name', message));
    });

    it('a name with an unpaired surrogate is a 422 and creates nothing (it could not be stored or linked)', async () => {
      const before = await t.db.query(`SELECT count(*)::int AS n FROM products`);
      for (const raw of ['{"name":"\\ud800"}', '{"product":{"name":"a\\udc00b"}}']) {
        const res = await t
          .http()
          .post(`/api/orgs/${org}/products`)
          .set(admin.auth)
          .set('Content-Type', 'application/json')
          .send(raw)
          .expect(422);
        expect(res.body).toEqual({
          errors: { name: ['must be valid Unicode text (no unpaired surrogates)'] },
        });
      }
      expect(await t.db.query(`SELECT count(*)::int AS n FROM products`)).toEqual(before);
    });

    it('an empty body is a 422, not a 500', async () => {
      const res = await t.http().post(`/api/orgs/${org}/products`).set(admin.auth).expect(422);
      expect(res.body).toEqual(fieldError('name', "can't be blank"));
    });

    it('a duplicate name is 422 "has already been taken"; names are case-sensitive', async () => {
      await create('dup').expect(201);
      const res = await create('dup').expect(422);
      expect(res.body).toEqual(fieldError('name', 'has already been taken'));
      await create('DUP').expect(201);
    });

    it('the same name in another organization is fine', async () => {
      const other = await t.fixtures.org(admin);
      await create('shared-name').expect(201);
      await t
        .http()
        .post(`/api/orgs/${other}/products`)
        .set(admin.auth)
        .send({ name: 'shared-name' })
        .expect(201);
    });

    it('concurrent creates of one name: one 201, the rest 422, one row', async () => {
      const results = await Promise.all(Array.from({ length: 10 }, () => create('racer')));
      const statuses = results.map((r) => r.status).sort();
      expect(statuses).toEqual([201, ...Array(9).fill(422)]);
      for (const r of results.filter((x) => x.status === 422)) {
        expect(r.body).toEqual(fieldError('name', 'has already been taken'));
      }
    });

    it('unicode names and names with slashes round-trip through the URL', async () => {
      const res = await create('Ürün/β 1').expect(201);
      expect(res.headers.location).toBe(`/api/orgs/${org}/products/${encodeURIComponent('Ürün/β 1')}`);
      await t.http().get(res.headers.location).set(admin.auth).expect(200);
    });
  });

  describe('PATCH / PUT /api/orgs/{org}/products/{product}', () => {
    beforeAll(async () => {
      await create('settings').expect(201);
    });
    const patch = (body: unknown, method: 'patch' | 'put' = 'patch') => {
      const agent = t.http();
      return agent[method](`/api/orgs/${org}/products/settings`)
        .set(admin.auth)
        .send(body as object);
    };

    it('changes only the settings sent', async () => {
      const res = await patch({ allowed_update_tools: ['fwup', 'atomvm'] }).expect(200);
      expect(res.body.data).toEqual({
        name: 'settings',
        ...DEFAULTS,
        allowed_update_tools: ['fwup', 'atomvm'],
      });
      const put = await patch({ require_unique_firmware_version: false }, 'put').expect(200);
      expect(put.body.data).toEqual({
        name: 'settings',
        ...DEFAULTS,
        allowed_update_tools: ['fwup', 'atomvm'],
        require_unique_firmware_version: false,
      });
      const shown = await t.http().get(`/api/orgs/${org}/products/settings`).set(admin.auth).expect(200);
      expect(shown.body).toEqual(put.body);
    });

    it('sets all four settings at once', async () => {
      const body = {
        allow_unsigned_atomvm_firmware: true,
        allow_unsigned_esp_idf_firmware: true,
        allowed_update_tools: ['esp-idf'],
        require_unique_firmware_version: true,
      };
      const res = await patch(body).expect(200);
      expect(res.body.data).toEqual({ name: 'settings', ...body });
    });

    it('an empty body changes nothing', async () => {
      const before = await t.http().get(`/api/orgs/${org}/products/settings`).set(admin.auth).expect(200);
      const res = await patch({}).expect(200);
      expect(res.body).toEqual(before.body);
    });

    it('refuses a rename and unknown fields, naming each, and changes nothing', async () => {
      const before = await t.http().get(`/api/orgs/${org}/products/settings`).set(admin.auth);
      const res = await patch({
        name: 'renamed',
        color: 'red',
        allow_unsigned_atomvm_firmware: false,
      }).expect(422);
      expect(res.body).toEqual(
        fieldErrors({
          name: ['cannot be changed: a product cannot be renamed'],
          color: ['is not a product setting'],
        }),
      );
      const after = await t.http().get(`/api/orgs/${org}/products/settings`).set(admin.auth).expect(200);
      expect(after.body).toEqual(before.body);
    });

    it.each([
      [{ allow_unsigned_atomvm_firmware: 'yes' }, 'allow_unsigned_atomvm_firmware', 'must be true or false'],
      [{ allow_unsigned_atomvm_firmware: 'TRUE' }, 'allow_unsigned_atomvm_firmware', 'must be true or false'],
      [{ allow_unsigned_esp_idf_firmware: '1' }, 'allow_unsigned_esp_idf_firmware', 'must be true or false'],
      [
        { require_unique_firmware_version: ' false' },
        'require_unique_firmware_version',
        'must be true or false',
      ],
      [{ require_unique_firmware_version: '' }, 'require_unique_firmware_version', 'must be true or false'],
      [
        { product: { require_unique_firmware_version: 0 } },
        'require_unique_firmware_version',
        'must be true or false',
      ],
      [
        { product: { allowed_update_tools: 'fwup' } },
        'allowed_update_tools',
        'must be an array of strings from: fwup, atomvm, esp-idf',
      ],
      [{ product: null }, 'product', 'must be a JSON object'],
      [{ product: 'settings' }, 'product', 'must be a JSON object'],
      [{ product: [] }, 'product', 'must be a JSON object'],
      [{ allow_unsigned_esp_idf_firmware: null }, 'allow_unsigned_esp_idf_firmware', 'must be true or false'],
      [{ require_unique_firmware_version: 1 }, 'require_unique_firmware_version', 'must be true or false'],
      [
        { allowed_update_tools: null },
        'allowed_update_tools',
        'must be an array of strings from: fwup, atomvm, esp-idf',
      ],
      [
        { allowed_update_tools: 'fwup' },
        'allowed_update_tools',
        'must be an array of strings from: fwup, atomvm, esp-idf',
      ],
      [{ allowed_update_tools: ['fwup', 'wat'] }, 'allowed_update_tools', 'unknown update tool(s): wat'],
      [{ allowed_update_tools: ['fwup', 'fwup'] }, 'allowed_update_tools', 'must not list a tool twice'],
      [
        { allowed_update_tools: [1] },
        'allowed_update_tools',
        'must be an array of strings from: fwup, atomvm, esp-idf',
      ],
    ])('422 for %j', async (body, field, message) => {
      const res = await patch(body).expect(422);
      expect(res.body).toEqual({ errors: { [field]: [message] } });
    });

    it('404 for an unknown product', async () => {
      await t.http().patch(`/api/orgs/${org}/products/nope`).set(admin.auth).send({}).expect(404, NOT_FOUND);
      await t
        .http()
        .put(`/api/orgs/${org}/products/nope`)
        .set(admin.auth)
        .send({ product: { require_unique_firmware_version: 'false' } })
        .expect(404, NOT_FOUND);
    });

    describe("what NervesHub's clients send", () => {
      const shown = async () =>
        (await t.http().get(`/api/orgs/${org}/products/settings`).set(admin.auth).expect(200)).body;

      it('the strings "true" and "false" set the boolean settings (PATCH and PUT)', async () => {
        const on = await patch({
          allow_unsigned_atomvm_firmware: 'true',
          allow_unsigned_esp_idf_firmware: 'true',
          require_unique_firmware_version: 'false',
        }).expect(200);
        expect(on.body.data).toEqual(
          expect.objectContaining({
            allow_unsigned_atomvm_firmware: true,
            allow_unsigned_esp_idf_firmware: true,
            require_unique_firmware_version: false,
          }),
        );
        const off = await patch(
          {
            allow_unsigned_atomvm_firmware: 'false',
            allow_unsigned_esp_idf_firmware: false,
            require_unique_firmware_version: 'true',
          },
          'put',
        ).expect(200);
        expect(off.body.data).toEqual(
          expect.objectContaining({
            allow_unsigned_atomvm_firmware: false,
            allow_unsigned_esp_idf_firmware: false,
            require_unique_firmware_version: true,
          }),
        );
        expect(await shown()).toEqual(off.body);
      });

      it.each(['patch', 'put'] as const)(
        '%s: the {"product": {...}} envelope, with string booleans as the CLI sends them',
        async (method) => {
          const res = await patch(
            {
              product: {
                allow_unsigned_esp_idf_firmware: 'true',
                allowed_update_tools: ['fwup', 'esp-idf'],
                require_unique_firmware_version: 'false',
              },
            },
            method,
          ).expect(200);
          expect(res.body.data).toEqual({
            name: 'settings',
            allow_unsigned_atomvm_firmware: expect.any(Boolean),
            allow_unsigned_esp_idf_firmware: true,
            allowed_update_tools: ['fwup', 'esp-idf'],
            require_unique_firmware_version: false,
          });
          expect(await shown()).toEqual(res.body);
          const reset = await patch({ product: { allow_unsigned_esp_idf_firmware: false } }, method).expect(
            200,
          );
          expect(reset.body.data.allow_unsigned_esp_idf_firmware).toBe(false);
          const empty = await patch({ product: {} }, method).expect(200);
          expect(empty.body).toEqual(reset.body);
        },
      );

      it('inside the envelope a rename or an unknown field is refused, and so is any key beside it', async () => {
        const before = await shown();
        const inside = await patch({
          product: { name: 'renamed', color: 'red', require_unique_firmware_version: 'false' },
        }).expect(422);
        expect(inside.body).toEqual(
          fieldErrors({
            name: ['cannot be changed: a product cannot be renamed'],
            color: ['is not a product setting'],
          }),
        );
        const beside = await patch(
          { product: { require_unique_firmware_version: 'false' }, name: 'renamed', color: 'red' },
          'put',
        ).expect(422);
        expect(beside.body).toEqual(
          fieldErrors({
            name: ['cannot be changed: a product cannot be renamed'],
            color: ['is not a product setting'],
          }),
        );
        expect(await shown()).toEqual(before);
      });
    });
  });

  describe('extension settings: GET / PATCH .../products/{product}/extensions', () => {
    const url = (product: string) => `/api/orgs/${org}/products/${product}/extensions`;
    const patch = (product: string, body: unknown, who = admin) =>
      t
        .http()
        .patch(url(product))
        .set(who.auth)
        .send(body as object);
    const stored = async (product: string) =>
      (await t.http().get(url(product)).set(admin.auth).expect(200)).body;
    beforeAll(async () => {
      await create('ext-bad').expect(201);
    });

    it('the Product record has exactly the spec five fields in every answer', async () => {
      const created = await create('record-shape').expect(201);
      const shown = await t.http().get(`/api/orgs/${org}/products/record-shape`).set(admin.auth).expect(200);
      const listed = await t.http().get(`/api/orgs/${org}/products`).set(admin.auth).expect(200);
      const updated = await t
        .http()
        .patch(`/api/orgs/${org}/products/record-shape`)
        .set(admin.auth)
        .send({ require_unique_firmware_version: false })
        .expect(200);
      const fields = ['name', ...Object.keys(DEFAULTS)].sort();
      for (const record of [
        created.body.data,
        shown.body.data,
        updated.body.data,
        ...listed.body.data,
      ] as object[]) {
        expect(Object.keys(record).sort()).toEqual(fields);
      }
    });

    it('a new product enables network_identity only', async () => {
      await create('ext-defaults').expect(201);
      expect(await stored('ext-defaults')).toEqual({ data: EXTENSION_DEFAULTS });
    });

    it('changes only the names sent (booleans or "true"/"false", wrapped or not) and answers every setting', async () => {
      await create('ext-change').expect(201);
      const first = await patch('ext-change', { health: true, logging: 'true' }).expect(200);
      expect(first.body).toEqual({ data: { ...EXTENSION_DEFAULTS, health: true, logging: true } });
      const second = await patch('ext-change', {
        extensions: { network_identity: 'false', geo: true },
      }).expect(200);
      const expected = {
        health: true,
        geo: true,
        local_shell: false,
        logging: true,
        network_identity: false,
      };
      expect(second.body).toEqual({ data: expected });
      expect(await stored('ext-change')).toEqual({ data: expected });
      const [row] = await t.db.query(
        `SELECT p.extensions FROM products p JOIN orgs o ON o.id = p.org_id WHERE o.name = $1 AND p.name = $2`,
        [org, 'ext-change'],
      );
      expect(row.extensions).toEqual(expected);
    });

    it('an empty body changes nothing', async () => {
      await create('ext-empty').expect(201);
      await patch('ext-empty', { geo: true }).expect(200);
      const before = await stored('ext-empty');
      expect((await patch('ext-empty', {}).expect(200)).body).toEqual(before);
      expect((await patch('ext-empty', { extensions: {} }).expect(200)).body).toEqual(before);
      expect(await stored('ext-empty')).toEqual(before);
    });

    it.each([
      [{ nope: true, health: true }, { nope: [expect.stringContaining('is not an extension')] }],
      [{ health: 'yes' }, { health: ['must be true or false'] }],
      [{ geo: null }, { geo: ['must be true or false'] }],
      [{ logging: 1 }, { logging: ['must be true or false'] }],
      [{ extensions: 'all' }, { extensions: ['must be a JSON object'] }],
      [
        { extensions: { health: true }, geo: true },
        { geo: [expect.stringContaining('is not an extension')] },
      ],
    ])('refuses %j with a 422 naming each field, and changes nothing', async (body, errors) => {
      const before = await stored('ext-bad');
      const res = await patch('ext-bad', body).expect(422);
      expect(res.body).toEqual(fieldErrors(errors));
      expect(await stored('ext-bad')).toEqual(before);
    });

    it('the product update takes no extensions: the contract 422 for an unknown field, nothing changed', async () => {
      await create('ext-moved').expect(201);
      for (const body of [
        { extensions: { health: true } },
        { product: { extensions: { health: true }, require_unique_firmware_version: false } },
      ]) {
        const res = await t
          .http()
          .patch(`/api/orgs/${org}/products/ext-moved`)
          .set(admin.auth)
          .send(body)
          .expect(422);
        expect(res.body).toEqual(fieldErrors({ extensions: ['is not a product setting'] }));
      }
      expect(await stored('ext-moved')).toEqual({ data: EXTENSION_DEFAULTS });
      const shown = await t.http().get(`/api/orgs/${org}/products/ext-moved`).set(admin.auth).expect(200);
      expect(shown.body.data.require_unique_firmware_version).toBe(true);
    });

    it('concurrent changes of different extensions all stay', async () => {
      await create('ext-race').expect(201);
      await Promise.all([
        patch('ext-race', { health: true }).expect(200),
        patch('ext-race', { geo: true }).expect(200),
        patch('ext-race', { logging: true }).expect(200),
        patch('ext-race', { local_shell: true }).expect(200),
      ]);
      expect(await stored('ext-race')).toEqual({
        data: { health: true, geo: true, local_shell: true, logging: true, network_identity: true },
      });
    });

    it('is audited with what changed', async () => {
      await create('ext-audit').expect(201);
      await patch('ext-audit', { health: 'true' }).expect(200);
      const rows = await t.db.query(
        `SELECT details FROM audit_logs WHERE action = 'product.extensions.update' AND target_id = 'ext-audit'`,
      );
      expect(rows.map((r: { details: unknown }) => r.details)).toEqual([{ health: true }]);
    });

    it('roles: view reads, manage changes; outsiders and unknown products get the constant 404', async () => {
      const [viewer, manager, outsider] = await Promise.all([
        t.fixtures.user(),
        t.fixtures.user(),
        t.fixtures.user(),
      ]);
      await t.fixtures.addMember(org, viewer, 'view');
      await t.fixtures.addMember(org, manager, 'manage');
      await create('ext-roles').expect(201);
      await t.http().get(url('ext-roles')).set(viewer.auth).expect(200, { data: EXTENSION_DEFAULTS });
      await patch('ext-roles', { health: true }, viewer).expect(403, NOT_FOUND);
      await patch('ext-roles', { health: true }, manager).expect(200);
      await t.http().get(url('ext-roles')).set(outsider.auth).expect(404, NOT_FOUND);
      await patch('ext-roles', { geo: true }, outsider).expect(404, NOT_FOUND);
      await t.http().get(url('no-such-product')).set(admin.auth).expect(404, NOT_FOUND);
      await patch('no-such-product', { geo: true }).expect(404, NOT_FOUND);
      await t.http().get(url('ext-roles')).expect(401, UNAUTHORIZED);
      expect(await stored('ext-roles')).toEqual({ data: { ...EXTENSION_DEFAULTS, health: true } });
    });
  });

  describe('GET and DELETE', () => {
    it('lists the organization’s products by name', async () => {
      const owner = await t.fixtures.user();
      const own = await t.fixtures.org(owner);
      await t.http().get(`/api/orgs/${own}/products`).set(owner.auth).expect(200, { data: [] });
      for (const name of ['b', 'a']) {
        await t.http().post(`/api/orgs/${own}/products`).set(owner.auth).send({ name }).expect(201);
      }
      const res = await t.http().get(`/api/orgs/${own}/products`).set(owner.auth).expect(200);
      expect(res.body.data.map((p: { name: string }) => p.name)).toEqual(['a', 'b']);
      expect(res.body.data[0]).toEqual({ name: 'a', ...DEFAULTS });
    });

    it('deletes a product without devices (204), then it is gone', async () => {
      await create('doomed').expect(201);
      await t.http().delete(`/api/orgs/${org}/products/doomed`).set(admin.auth).expect(204);
      await t.http().get(`/api/orgs/${org}/products/doomed`).set(admin.auth).expect(404, NOT_FOUND);
      await t.http().delete(`/api/orgs/${org}/products/doomed`).set(admin.auth).expect(404, NOT_FOUND);
    });

    it('409 while the product still has devices', async () => {
      await create('busy').expect(201);
      await t.fixtures.device(admin, org, 'busy', 'busy-device-1');
      const res = await t.http().delete(`/api/orgs/${org}/products/busy`).set(admin.auth).expect(409);
      expect(res.body).toEqual(detail(expect.stringContaining('devices')));
      await t.http().get(`/api/orgs/${org}/products/busy`).set(admin.auth).expect(200);
    });
  });

  describe('roles', () => {
    let viewer: TestUser;
    let manager: TestUser;
    let outsider: TestUser;
    beforeAll(async () => {
      [viewer, manager, outsider] = await Promise.all([
        t.fixtures.user(),
        t.fixtures.user(),
        t.fixtures.user(),
      ]);
      await t.fixtures.addMember(org, viewer, 'view');
      await t.fixtures.addMember(org, manager, 'manage');
      await create('roles-product').expect(201);
    });

    it('view: may read, may not create, change or delete (403 constant body)', async () => {
      await t.http().get(`/api/orgs/${org}/products`).set(viewer.auth).expect(200);
      await t.http().get(`/api/orgs/${org}/products/roles-product`).set(viewer.auth).expect(200);
      await create('by-viewer', viewer).expect(403, NOT_FOUND);
      await t
        .http()
        .patch(`/api/orgs/${org}/products/roles-product`)
        .set(viewer.auth)
        .send({ require_unique_firmware_version: false })
        .expect(403, NOT_FOUND);
      await t
        .http()
        .put(`/api/orgs/${org}/products/roles-product`)
        .set(viewer.auth)
        .send({ product: { require_unique_firmware_version: 'false' } })
        .expect(403, NOT_FOUND);
      await t
        .http()
        .delete(`/api/orgs/${org}/products/roles-product`)
        .set(viewer.auth)
        .expect(403, NOT_FOUND);
      const [row] = await t.db.query(
        `SELECT require_unique_firmware_version FROM products WHERE name = 'roles-product'`,
      );
      expect(row.require_unique_firmware_version).toBe(true);
    });

    it('manage: may create and change, may not delete', async () => {
      await create('by-manager', manager).expect(201);
      await t
        .http()
        .patch(`/api/orgs/${org}/products/by-manager`)
        .set(manager.auth)
        .send({ allow_unsigned_atomvm_firmware: true })
        .expect(200);
      await t.http().delete(`/api/orgs/${org}/products/by-manager`).set(manager.auth).expect(403, NOT_FOUND);
    });

    it('outsiders get 404 whether or not the organization or product exists', async () => {
      const a = await t.http().get(`/api/orgs/${org}/products/roles-product`).set(outsider.auth);
      const b = await t.http().get(`/api/orgs/${org}/products/missing`).set(outsider.auth);
      const c = await t.http().get(`/api/orgs/no-such-org/products/missing`).set(outsider.auth);
      const d = await create('by-outsider', outsider);
      for (const res of [a, b, c, d]) {
        expect(res.status).toBe(404);
        expect(res.body).toEqual(NOT_FOUND);
      }
    });

    it('no token: 401', async () => {
      await t.http().get(`/api/orgs/${org}/products`).expect(401, UNAUTHORIZED);
    });

    it('a read-scoped admin token cannot write', async () => {
      const readToken = await t.fixtures.token(admin.user, { scope: 'read' });
      const auth = { Authorization: `Bearer ${readToken}` };
      await t.http().get(`/api/orgs/${org}/products`).set(auth).expect(200);
      await t.http().post(`/api/orgs/${org}/products`).set(auth).send({ name: 'ro' }).expect(403, FORBIDDEN);
    });
  });
});
