import { DeviceAuthenticator } from '../src/device-auth/device-authenticator';
import { BULK_WINDOW } from '../src/devices/device-bulk.service';
import { semverSortKey } from '../src/firmware/fwup/semver-sort-key';
import {
  FORBIDDEN,
  fieldError,
  MALFORMED_JSON,
  NOT_A_JSON_OBJECT,
  NOT_FOUND,
  ROLE_TOO_LOW,
} from './support/contract-bodies';
import { DeviceSocketClient } from './support/device-socket-client';
import { EventStreamClient } from './support/event-stream-client';
import { FakeAuthenticator } from './support/fake-authenticator';
import type { TestUser, UploadedFirmware } from './support/fixtures';
import { unique } from './support/fixtures';
import { listenOnLoopback } from './support/listening-app';
import { createTestApp, type TestApp } from './support/test-app';

const WINDOW = 2;
const JOIN = { device_api_version: '2.2.0', nerves_fw_uuid: '11111111-2222-5333-8444-555555555555' };

describe('POST .../devices/bulk', () => {
  const authA = new FakeAuthenticator();
  const authB = new FakeAuthenticator();
  let a: TestApp;
  let b: TestApp;
  let urlA: string;
  let ada: TestUser;
  let org: string;
  let other: string;
  const clients: DeviceSocketClient[] = [];

  beforeAll(async () => {
    // Windows of 2 devices: every change over a filter of more than two devices crosses windows.
    const window = { provide: BULK_WINDOW, useValue: WINDOW };
    a = await createTestApp({}, { overrides: [{ provide: DeviceAuthenticator, useValue: authA }, window] });
    authA.db = a.db;
    // A second instance on the same database: gateway messages cross instances through the bus.
    b = await createTestApp(
      {},
      {
        databaseUrl: a.databaseUrl,
        overrides: [{ provide: DeviceAuthenticator, useValue: authB }, window],
      },
    );
    authB.db = b.db;
    ({ url: urlA } = await listenOnLoopback(a));
    await listenOnLoopback(b);
    ada = await a.fixtures.user();
    org = await a.fixtures.org(ada);
    other = await a.fixtures.org(ada);
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  /** A product of `org` with `count` devices `<prefix>-NN` (tags as given by `tags(i)`); its name. */
  async function productWith(count: number, tags: (i: number) => string[] = () => []): Promise<string> {
    const product = await a.fixtures.product(ada, org, unique('bulk-'));
    for (let i = 1; i <= count; i++) {
      await a.fixtures.device(ada, org, product, `${product}-${String(i).padStart(2, '0')}`, {
        tags: tags(i),
      });
    }
    return product;
  }
  const bulk = (product: string, body: unknown, user: TestUser = ada, app: TestApp = a) =>
    app
      .http()
      .post(`/api/orgs/${org}/products/${product}/devices/bulk`)
      .set(user.auth)
      .send(body as object);
  const tagsOf = async (product: string) =>
    Object.fromEntries(
      (
        await a.db.query<{ identifier: string; tags: string[] }[]>(
          `SELECT d.identifier, d.tags FROM devices d JOIN products p ON p.id = d.product_id
            WHERE p.name = $1 ORDER BY d.identifier`,
          [product],
        )
      ).map((row) => [row.identifier, row.tags.join(',')]),
    );
  const total = async (product: string, query = '', orgName = org) =>
    (
      (
        await a
          .http()
          .get(`/api/orgs/${orgName}/products/${product}/devices?${query}`)
          .set(ada.auth)
          .expect(200)
      ).body as { pagination: { total_entries: number } }
    ).pagination.total_entries;
  const audits = (action: string, orgName = org) =>
    a.db.query<{ target_type: string; target_id: string; details: Record<string, unknown> }[]>(
      `SELECT l.target_type, l.target_id, l.details FROM audit_logs l JOIN orgs o ON o.id = l.org_id
        WHERE o.name = $1 AND l.action = $2 ORDER BY l.id`,
      [orgName, action],
    );
  /** The counter rows of the product agree with its devices (the triggers' job, and the bulk statement's). */
  const expectCountersExact = async (product: string) => {
    const [counted] = await a.db.query<{ counter: number; actual: number }[]>(
      `SELECT (SELECT COALESCE(sum(total), 0)::int FROM product_device_counts WHERE product_id = p.id) AS counter,
              (SELECT count(*)::int FROM devices WHERE product_id = p.id) AS actual
         FROM products p WHERE p.name = $1`,
      [product],
    );
    expect(counted.counter).toBe(counted.actual);
    const tags = await a.db.query<{ tag: string; counter: number; actual: number }[]>(
      `WITH actual AS (SELECT t.tag, count(*)::int AS n FROM devices d, products p, unnest(d.tags) AS t(tag)
                        WHERE p.name = $1 AND d.product_id = p.id GROUP BY 1),
            counter AS (SELECT c.tag, sum(c.total)::int AS n FROM product_tag_counts c JOIN products p
                          ON p.id = c.product_id WHERE p.name = $1 GROUP BY 1)
       SELECT COALESCE(actual.tag, counter.tag) AS tag, COALESCE(counter.n, 0) AS counter,
              COALESCE(actual.n, 0) AS actual
         FROM actual FULL JOIN counter ON counter.tag = actual.tag`,
      [product],
    );
    for (const row of tags) expect({ tag: row.tag, n: row.counter }).toEqual({ tag: row.tag, n: row.actual });
  };

  describe('tags', () => {
    it('adds tags to named devices: unknown ones skipped, those that had them unchanged; one audit entry', async () => {
      const p = await productWith(4, (i) => (i === 2 ? ['beta'] : ['lab']));
      const res = await bulk(p, {
        action: 'add_tags',
        identifiers: [`${p}-01`, `${p}-02`, `${p}-03`, `${p}-03`, 'no-such-device'],
        tags: ' beta , canary,beta',
      }).expect(200);
      expect(res.body).toEqual({ data: { action: 'add_tags', matched: 3, changed: 3 } });
      expect(await tagsOf(p)).toEqual({
        [`${p}-01`]: 'lab,beta,canary',
        [`${p}-02`]: 'beta,canary',
        [`${p}-03`]: 'lab,beta,canary',
        [`${p}-04`]: 'lab',
      });
      const again = await bulk(p, {
        action: 'add_tags',
        identifiers: [`${p}-01`, `${p}-02`],
        tags: ['canary'],
      }).expect(200);
      expect(again.body.data).toEqual({ action: 'add_tags', matched: 2, changed: 0 });
      expect(await total(p, 'filters[tags]=canary')).toBe(3);
      await expectCountersExact(p);
      const entries = (await audits('device.bulk_add_tags')).filter((e) => e.target_id === p);
      expect(entries).toEqual([
        {
          target_type: 'product',
          target_id: p,
          details: {
            product: p,
            identifiers: [`${p}-01`, `${p}-02`, `${p}-03`, 'no-such-device'],
            tags: ['beta', 'canary'],
            matched: 3,
            changed: 3,
          },
        },
        expect.objectContaining({ details: expect.objectContaining({ matched: 2, changed: 0 }) }),
      ]);
    });

    it('removes tags from every device matching a filter, keeping the order of the others', async () => {
      const p = await productWith(6, (i) => (i % 2 === 0 ? ['a', 'beta', 'z'] : ['a', 'z']));
      const res = await bulk(p, {
        action: 'remove_tags',
        filters: { tags: 'beta' },
        tags: 'beta,a',
      }).expect(200);
      expect(res.body.data).toEqual({ action: 'remove_tags', matched: 3, changed: 3 });
      expect(await tagsOf(p)).toEqual({
        [`${p}-01`]: 'a,z',
        [`${p}-02`]: 'z',
        [`${p}-03`]: 'a,z',
        [`${p}-04`]: 'z',
        [`${p}-05`]: 'a,z',
        [`${p}-06`]: 'z',
      });
      expect(await total(p, 'filters[tags]=a')).toBe(3);
      expect(await total(p, 'filters[tags]=beta')).toBe(0);
      await expectCountersExact(p);
      const [entry] = (await audits('device.bulk_remove_tags')).filter((e) => e.target_id === p);
      expect(entry.details).toEqual({
        product: p,
        filters: { tags: 'beta' },
        tags: ['beta', 'a'],
        matched: 3,
        changed: 3,
      });
    });

    it("an empty filter object is every device of the product, across windows, other products' devices between", async () => {
      const p = await a.fixtures.product(ada, org, unique('bulk-'));
      const q = await a.fixtures.product(ada, org, unique('bulk-'));
      // 7 devices of p (three full windows and one of one), each followed by a device of q.
      for (let i = 0; i < 7; i++) {
        await a.fixtures.device(ada, org, p, `${p}-${i}`);
        await a.fixtures.device(ada, org, q, `${q}-${i}`);
      }
      const res = await bulk(p, { action: 'add_tags', filters: {}, tags: 'everyone' }).expect(200);
      expect(res.body.data).toEqual({ action: 'add_tags', matched: 7, changed: 7 });
      expect(Object.values(await tagsOf(p))).toEqual(Array(7).fill('everyone'));
      expect(Object.values(await tagsOf(q))).toEqual(Array(7).fill(''));
      await expectCountersExact(p);
      await expectCountersExact(q);
      // One audit entry, however many windows.
      expect((await audits('device.bulk_add_tags')).filter((e) => e.target_id === p)).toHaveLength(1);
      // A filter that matches exactly two windows' worth (the last window comes back empty), then none.
      await bulk(p, {
        action: 'remove_tags',
        identifiers: [`${p}-4`, `${p}-5`, `${p}-6`],
        tags: 'everyone',
      }).expect(200);
      const four = await bulk(p, { action: 'add_tags', filters: { tags: 'everyone' }, tags: 'four' }).expect(
        200,
      );
      expect(four.body.data).toEqual({ action: 'add_tags', matched: 4, changed: 4 });
      expect(Object.values(await tagsOf(p)).filter((tags) => tags === 'everyone,four')).toHaveLength(4);
      const none = await bulk(p, { action: 'add_tags', filters: { tags: 'nobody' }, tags: 'x' }).expect(200);
      expect(none.body.data).toEqual({ action: 'add_tags', matched: 0, changed: 0 });
      expect((await audits('device.bulk_add_tags')).filter((e) => e.target_id === p)).toHaveLength(3);
    });

    it('refuses to give a device more than 100 tags, and then changes nothing', async () => {
      const p = await productWith(2, (i) =>
        i === 1 ? Array.from({ length: 99 }, (_, n) => `t${n}`) : ['few'],
      );
      const body = { action: 'add_tags', tags: 'x,y' };
      await bulk(p, { ...body, filters: {} }).expect(
        422,
        fieldError('tags', 'would give 1 device(s) more than 100 tags'),
      );
      await bulk(p, { ...body, identifiers: [`${p}-01`, `${p}-02`] }).expect(
        422,
        fieldError('tags', 'would give 1 device(s) more than 100 tags'),
      );
      expect((await tagsOf(p))[`${p}-02`]).toBe('few');
      await bulk(p, { action: 'add_tags', tags: 'x', filters: {} }).expect(200);
    });

    it('devices join and leave deployment groups as their tags change', async () => {
      const p = await productWith(3);
      const firmware = await a.fixtures.firmware(ada, org, p);
      // Only a device reports its firmware: written as the join stores it.
      await a.db.query(
        `UPDATE devices d SET firmware_version = '1.0.0', firmware_version_key = $2, firmware_platform = 'rpi4',
                firmware_metadata = '{"version": "1.0.0", "platform": "rpi4", "architecture": "aarch64"}'
           FROM products p WHERE p.id = d.product_id AND p.name = $1`,
        [p, semverSortKey('1.0.0')],
      );
      await a
        .http()
        .post(`/api/orgs/${org}/products/${p}/deployments`)
        .set(ada.auth)
        .send({
          name: 'canaries',
          firmware: firmware.uuid,
          is_active: true,
          conditions: { tags: ['canary'] },
        })
        .expect(201);
      const members = async () =>
        (await a.http().get(`/api/orgs/${org}/products/${p}/deployments/canaries`).set(ada.auth).expect(200))
          .body.data.device_count as number;
      expect(await members()).toBe(0);
      await bulk(p, { action: 'add_tags', filters: {}, tags: 'canary' }).expect(200);
      expect(await members()).toBe(3);
      await bulk(p, { action: 'remove_tags', identifiers: [`${p}-02`], tags: 'canary' }).expect(200);
      expect(await members()).toBe(2);
      expect(await total(p, 'filters[deployment_group]=canaries')).toBe(2);
    });
  });

  describe('updates and the penalty box', () => {
    it('turns automatic updates off and on; clears the penalty box as DELETE .../penalty does', async () => {
      const p = await productWith(4);
      const off = await bulk(p, { action: 'disable_updates', identifiers: [`${p}-01`, `${p}-02`] }).expect(
        200,
      );
      expect(off.body.data).toEqual({ action: 'disable_updates', matched: 2, changed: 2 });
      expect(await total(p, 'filters[updates]=disabled')).toBe(2);
      const on = await bulk(p, { action: 'enable_updates', filters: {} }).expect(200);
      expect(on.body.data).toEqual({ action: 'enable_updates', matched: 4, changed: 2 });
      expect(await total(p, 'filters[updates]=disabled')).toBe(0);

      // The orchestrator puts devices in the penalty box; no HTTP call does.
      await a.db.query(
        `UPDATE devices SET updates_blocked_until = now() + interval '1 hour', update_attempts = ARRAY[now()],
                updates_enabled = false
          WHERE identifier = ANY($1)`,
        [[`${p}-03`, `${p}-04`]],
      );
      expect(await total(p, 'filters[updates]=penalty-box')).toBe(2);
      const cleared = await bulk(p, {
        action: 'clear_penalty_box',
        filters: { updates: 'penalty-box' },
      }).expect(200);
      expect(cleared.body.data).toEqual({ action: 'clear_penalty_box', matched: 2, changed: 2 });
      expect(await total(p, 'filters[updates]=penalty-box')).toBe(0);
      const rows = await a.db.query<{ attempts: number; enabled: boolean }[]>(
        `SELECT cardinality(update_attempts) AS attempts, updates_enabled AS enabled FROM devices
          WHERE identifier = ANY($1)`,
        [[`${p}-03`, `${p}-04`]],
      );
      expect(rows).toEqual([
        { attempts: 0, enabled: true },
        { attempts: 0, enabled: true },
      ]);
    });
  });

  describe('upgrade', () => {
    let p: string;
    let firmware: UploadedFirmware;
    beforeAll(async () => {
      p = await productWith(3);
      firmware = await a.fixtures.firmware(ada, org, p, { version: '2.0.0' });
    });

    it('records the update for each device, pushes it at once to a connected one (from the other instance)', async () => {
      const client = await DeviceSocketClient.connect(urlA, { 'x-test-device': `${p}-01` });
      clients.push(client);
      expect((await client.join('device', JOIN))[4]).toMatchObject({ status: 'ok' });
      const res = await bulk(
        p,
        { action: 'upgrade', filters: {}, uuid: firmware.uuid.toUpperCase() },
        ada,
        b,
      ).expect(200);
      expect(res.body.data).toEqual({ action: 'upgrade', matched: 3, changed: 3 });
      const update = await client.next((f) => f[3] === 'update');
      expect(update[4]).toMatchObject({ update_available: true, firmware_meta: { uuid: firmware.uuid } });
      const pending = await a.db.query<{ identifier: string; enabled: boolean }[]>(
        `SELECT d.identifier, d.updates_enabled AS enabled FROM pending_updates pu
           JOIN devices d ON d.id = pu.device_id JOIN firmwares f ON f.id = pu.firmware_id
          WHERE f.uuid = $1 ORDER BY d.identifier`,
        [firmware.uuid],
      );
      expect(pending).toEqual([1, 2, 3].map((i) => ({ identifier: `${p}-0${i}`, enabled: false })));
      const [entry] = (await audits('device.bulk_upgrade')).filter((e) => e.target_id === p);
      expect(entry.details).toMatchObject({ firmware_uuid: firmware.uuid, matched: 3, changed: 3 });
    });

    it("the product's live events say each device's update is pending", async () => {
      const watched = await productWith(2);
      const target = await a.fixtures.firmware(ada, org, watched, { version: '3.0.0' });
      const stream = await EventStreamClient.open(
        `${urlA}/api/orgs/${org}/products/${watched}/events`,
        ada.auth,
      );
      try {
        expect(stream.status).toBe(200);
        await bulk(watched, { action: 'upgrade', filters: {}, uuid: target.uuid }).expect(200);
        for (const identifier of [`${watched}-01`, `${watched}-02`]) {
          const event = await stream.nextOf('device.update', (data) => data.identifier === identifier);
          expect(event.data).toEqual({
            identifier,
            status: 'pending',
            progress: null,
            firmware_uuid: target.uuid,
          });
        }
      } finally {
        stream.close();
      }
    });

    it('a uuid that is not a firmware of the product is a 422, and nothing changes', async () => {
      const elsewhere = await productWith(1);
      const foreign = await a.fixtures.firmware(ada, org, elsewhere, { version: '9.0.0' });
      const unknown = fieldError('uuid', 'does not match a firmware of this product');
      await bulk(p, { action: 'upgrade', filters: {}, uuid: foreign.uuid }).expect(422, unknown);
      await bulk(p, { action: 'upgrade', filters: {}, uuid: 'not-a-uuid' }).expect(422, unknown);
      await bulk(p, { action: 'upgrade', filters: {} }).expect(422, fieldError('uuid', "can't be blank"));
    });
  });

  describe('move', () => {
    it('moves the devices to another organization: groups, updates and counters follow; they reconnect', async () => {
      const p = await productWith(3, () => ['lab']);
      const target = await a.fixtures.product(ada, other, unique('target-'));
      const firmware = await a.fixtures.firmware(ada, org, p);
      await a
        .http()
        .post(`/api/orgs/${org}/products/${p}/devices/${p}-01/upgrade`)
        .set(ada.auth)
        .send({ uuid: firmware.uuid })
        .expect(204);
      const client = await DeviceSocketClient.connect(urlA, { 'x-test-device': `${p}-02` });
      clients.push(client);
      expect((await client.join('device', JOIN))[4]).toMatchObject({ status: 'ok' });

      const res = await bulk(
        p,
        {
          action: 'move',
          identifiers: [`${p}-01`, `${p}-02`],
          new_org_name: other,
          new_product_name: target,
        },
        ada,
        b,
      ).expect(200);
      expect(res.body.data).toEqual({ action: 'move', matched: 2, changed: 2 });
      expect(await client.closed).toBe(1000);
      expect(await total(p)).toBe(1);
      expect(await total(target, '', other)).toBe(2);
      expect(await total(target, 'filters[tags]=lab', other)).toBe(2);
      await expectCountersExact(p);
      await expectCountersExact(target);
      const pending = await a.db.query(
        `SELECT 1 FROM pending_updates pu JOIN devices d ON d.id = pu.device_id WHERE d.identifier = $1`,
        [`${p}-01`],
      );
      expect(pending).toEqual([]);
      const details = {
        product: p,
        identifiers: [`${p}-01`, `${p}-02`],
        from: { org, product: p },
        to: { org: other, product: target },
        matched: 2,
        changed: 2,
      };
      expect((await audits('device.bulk_move')).filter((e) => e.target_id === p)).toEqual([
        { target_type: 'product', target_id: p, details },
      ]);
      expect((await audits('device.bulk_move', other)).filter((e) => e.target_id === p)).toEqual([
        { target_type: 'product', target_id: p, details },
      ]);
      // It joins again, under its new product.
      const again = await DeviceSocketClient.connect(urlA, { 'x-test-device': `${p}-02` });
      clients.push(again);
      expect((await again.join('device', JOIN))[4]).toMatchObject({ status: 'ok' });
    });

    it('moved devices leave their deployment group', async () => {
      const p = await productWith(2);
      const target = await a.fixtures.product(ada, org, unique('target-'));
      const firmware = await a.fixtures.firmware(ada, org, p);
      await a
        .http()
        .post(`/api/orgs/${org}/products/${p}/deployments`)
        .set(ada.auth)
        .send({ name: 'all', firmware: firmware.uuid, conditions: {} })
        .expect(201);
      // A group takes devices that reported firmware; no API does that: its membership, as the join writes it.
      await a.db.query(
        `INSERT INTO deployment_group_members (device_id, deployment_group_id)
         SELECT d.id, g.id FROM devices d JOIN products p ON p.id = d.product_id, deployment_groups g
          WHERE p.name = $1 AND g.product_id = p.id`,
        [p],
      );
      await bulk(p, {
        action: 'move',
        identifiers: [`${p}-01`],
        new_org_name: org,
        new_product_name: target,
      }).expect(200);
      const group = await a
        .http()
        .get(`/api/orgs/${org}/products/${p}/deployments/all`)
        .set(ada.auth)
        .expect(200);
      expect(group.body.data.device_count).toBe(1);
      const moved = await a.http().get(`/api/devices/${p}-01`).set(ada.auth).expect(200);
      expect(moved.body.data).toMatchObject({ product_name: target, deployment_group: null });
    });

    it('needs manage on the target; the same product is a 422', async () => {
      const p = await productWith(1);
      const bob = await a.fixtures.user();
      await a.fixtures.addMember(org, bob, 'manage');
      const move = (user: TestUser, orgName: string, product: string) =>
        bulk(p, { action: 'move', filters: {}, new_org_name: orgName, new_product_name: product }, user);
      await move(bob, other, 'x').expect(404, NOT_FOUND);
      await move(bob, 'no-such-org', 'x').expect(404, NOT_FOUND);
      await a.fixtures.addMember(other, bob, 'view');
      await move(bob, other, 'x').expect(403, ROLE_TOO_LOW);
      await move(ada, other, 'no-such-product').expect(404, NOT_FOUND);
      await move(ada, org, p).expect(422, fieldError('new_product_name', "is the device's product already"));
      await bulk(p, { action: 'move', filters: {}, new_org_name: other }).expect(
        422,
        fieldError('new_product_name', "can't be blank"),
      );
      expect(await total(p)).toBe(1);
    });
  });

  describe('access', () => {
    it('needs manage; a stranger sees nothing; a read token may not change anything', async () => {
      const p = await productWith(1);
      const viewer = await a.fixtures.user();
      await a.fixtures.addMember(org, viewer, 'view');
      const stranger = await a.fixtures.user();
      const reader = await a.fixtures.user({ scope: 'read' });
      await a.fixtures.addMember(org, reader, 'admin');
      const body = { action: 'add_tags', filters: {}, tags: 'x' };
      await bulk(p, body, viewer).expect(403, ROLE_TOO_LOW);
      await bulk(p, body, stranger).expect(404, NOT_FOUND);
      await bulk(p, body, reader).expect(403, FORBIDDEN);
      await bulk('no-such-product', body).expect(404, NOT_FOUND);
      expect((await tagsOf(p))[`${p}-01`]).toBe('');
    });
  });

  describe('validation', () => {
    it('every bad input is a 4xx with the contract body, never a 500', async () => {
      const p = await productWith(1);
      const cases: [unknown, object][] = [
        [{}, { action: ["can't be blank"] }],
        [{ action: 'enable_updates' }, { identifiers: ["can't be blank: give identifiers or filters"] }],
        [{ action: 'explode', filters: {} }, { action: ['is invalid'] }],
        [
          { action: 'enable_updates', filters: {}, identifiers: ['x'] },
          { identifiers: ['give either identifiers or filters, not both'] },
        ],
        [
          { action: 'enable_updates', identifiers: 'x' },
          { identifiers: ['must be an array of device identifiers'] },
        ],
        [{ action: 'enable_updates', identifiers: [] }, { identifiers: ["can't be empty"] }],
        [
          { action: 'enable_updates', identifiers: [1] },
          { identifiers: ['must be an array of device identifiers'] },
        ],
        [
          { action: 'enable_updates', identifiers: Array.from({ length: 1001 }, (_, i) => `d${i}`) },
          { identifiers: ['should have at most 1000 identifiers'] },
        ],
        [
          { action: 'enable_updates', filters: ['tags'] },
          { filters: ['must be an object of the device list\'s filters, e.g. {"tags": "beta"}'] },
        ],
        [
          { action: 'enable_updates', filters: { colour: 'red' } },
          { 'filters.colour': [expect.stringMatching(/^is not a filter; filters are: identifier, /)] },
        ],
        [
          { action: 'enable_updates', filters: { connection: 'sometimes' } },
          { 'filters.connection': ['must be one of: connected, disconnected, not_seen'] },
        ],
        [{ action: 'enable_updates', filters: { tags: { a: 1 } } }, { 'filters.tags': ['must be a string'] }],
        [{ action: 'add_tags', filters: {} }, { tags: ["can't be blank"] }],
        [{ action: 'add_tags', filters: {}, tags: ' , ' }, { tags: ["can't be blank"] }],
        [
          { action: 'add_tags', filters: {}, tags: 5 },
          { tags: ['must be a comma-separated string (or an array of strings)'] },
        ],
        [{ action: 'upgrade', identifiers: ['x'], uuid: 7 }, { uuid: ['must be a string'] }],
        [
          { action: 'move', filters: {} },
          { new_org_name: ["can't be blank"], new_product_name: ["can't be blank"] },
        ],
      ];
      for (const [body, errors] of cases) {
        const res = await bulk(p, body);
        expect({ body, status: res.status, answer: res.body }).toEqual({
          body,
          status: 422,
          answer: { errors },
        });
      }
      await a
        .http()
        .post(`/api/orgs/${org}/products/${p}/devices/bulk`)
        .set(ada.auth)
        .set('Content-Type', 'application/json')
        .send('{"action":')
        .expect(400, MALFORMED_JSON);
      await bulk(p, ['add_tags']).expect(400, NOT_A_JSON_OBJECT);
      expect(await total(p, 'filters[updates]=disabled')).toBe(0);
    });
  });

  describe('concurrency', () => {
    it('bulk and single changes at once: all answered, no tag lost, counters exact', async () => {
      const p = await productWith(30, (i) => (i % 3 === 0 ? ['lab'] : []));
      const ids = (from: number, to: number) =>
        Array.from({ length: to - from + 1 }, (_, i) => `${p}-${String(from + i).padStart(2, '0')}`);
      const requests = [
        bulk(p, { action: 'add_tags', filters: {}, tags: 'one' }),
        bulk(p, { action: 'add_tags', identifiers: ids(1, 30).reverse(), tags: 'two' }),
        bulk(p, { action: 'add_tags', filters: { tags: 'lab' }, tags: 'three' }, ada, b),
        bulk(p, { action: 'disable_updates', filters: {} }, ada, b),
        bulk(p, { action: 'remove_tags', identifiers: ids(1, 10), tags: 'lab' }),
        ...ids(11, 20).map((identifier) =>
          a
            .http()
            .patch(`/api/orgs/${org}/products/${p}/devices/${identifier}`)
            .set(ada.auth)
            .send({ description: 'concurrent' }),
        ),
        ...ids(21, 25).map((identifier) =>
          b.http().delete(`/api/orgs/${org}/products/${p}/devices/${identifier}/penalty`).set(ada.auth),
        ),
      ];
      const statuses = (await Promise.all(requests)).map((res) => res.status);
      expect(statuses.every((status) => status < 300)).toBe(true);
      const tags = await tagsOf(p);
      for (const [identifier, list] of Object.entries(tags)) {
        const set = list.split(',');
        expect({ identifier, one: set.includes('one'), two: set.includes('two') }).toEqual({
          identifier,
          one: true,
          two: true,
        });
      }
      // Every device that kept "lab" got "three" (the filter ran on what it found when it got there).
      await expectCountersExact(p);
    });
  });
});
