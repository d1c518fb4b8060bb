import { DeviceAuthenticator } from '../src/device-auth/device-authenticator';
import { DeviceSocketClient } from './support/device-socket-client';
import { fieldError, NOT_FOUND, ROLE_TOO_LOW } from './support/contract-bodies';
import { FakeAuthenticator } from './support/fake-authenticator';
import type { TestUser } from './support/fixtures';
import { listenOnLoopback } from './support/listening-app';
import { createTestApp, type TestApp } from './support/test-app';

const JOIN = { device_api_version: '2.2.0', nerves_fw_uuid: '11111111-2222-5333-8444-555555555555' };

describe('POST .../devices/{identifier}/move (NervesHub)', () => {
  const authA = new FakeAuthenticator();
  const authB = new FakeAuthenticator();
  let a: TestApp;
  let b: TestApp;
  let urlA: string;
  let ada: TestUser;
  let src: string;
  let dst: string;
  const clients: DeviceSocketClient[] = [];

  beforeAll(async () => {
    a = await createTestApp({}, { overrides: [{ provide: DeviceAuthenticator, useValue: authA }] });
    authA.db = a.db;
    b = await createTestApp(
      {},
      { databaseUrl: a.databaseUrl, overrides: [{ provide: DeviceAuthenticator, useValue: authB }] },
    );
    authB.db = b.db;
    ({ url: urlA } = await listenOnLoopback(a));
    await listenOnLoopback(b);
    ada = await a.fixtures.user();
    src = await a.fixtures.org(ada);
    dst = await a.fixtures.org(ada);
    await a.fixtures.product(ada, src, 'p');
    await a.fixtures.product(ada, src, 'q');
    await a.fixtures.product(ada, dst, 'r');
  });
  afterEach(async () => {
    await Promise.all(clients.splice(0).map((c) => c.close()));
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  const device = (tags: string[] = ['lab']) => a.fixtures.device(ada, src, 'p', undefined, { tags });
  const nested = (identifier: string) => `/api/orgs/${src}/products/p/devices/${identifier}/move`;
  const audit = async (org: string) =>
    (
      await a.db.query<{ action: string; target_id: string; details: unknown }[]>(
        `SELECT l.action, l.target_id, l.details FROM audit_logs l JOIN orgs o ON o.id = l.org_id
          WHERE o.name = $1 AND l.action = 'device.move' ORDER BY l.id`,
        [org],
      )
    ).map((row) => ({ ...row }));

  it('moves the device with its identity; audited in both organizations; the device record answers', async () => {
    const identifier = await device();
    const [before] = await a.db.query<{ id: string }[]>(`SELECT id FROM devices WHERE identifier = $1`, [
      identifier,
    ]);
    const res = await b
      .http()
      .post(nested(identifier))
      .set(ada.auth)
      .send({ new_org_name: dst, new_product_name: 'r' })
      .expect(200);
    expect(res.body.data).toMatchObject({
      identifier,
      org_name: dst,
      product_name: 'r',
      tags: 'lab',
      deployment_group: null,
    });
    const [after] = await a.db.query<{ id: string }[]>(`SELECT id FROM devices WHERE identifier = $1`, [
      identifier,
    ]);
    expect(after.id).toBe(before.id);
    const details = { from: { org: src, product: 'p' }, to: { org: dst, product: 'r' } };
    expect(await audit(src)).toContainEqual({ action: 'device.move', target_id: identifier, details });
    expect(await audit(dst)).toContainEqual({ action: 'device.move', target_id: identifier, details });
    // Found under its new product, no longer under the old one.
    await a.http().get(`/api/orgs/${dst}/products/r/devices/${identifier}`).set(ada.auth).expect(200);
    await a
      .http()
      .get(`/api/orgs/${src}/products/p/devices/${identifier}`)
      .set(ada.auth)
      .expect(404, NOT_FOUND);
    // The product counters followed.
    const counts = async (org: string, product: string) =>
      (await a.http().get(`/api/orgs/${org}/products/${product}/devices`).set(ada.auth).expect(200)).body
        .pagination;
    expect((await counts(dst, 'r')).total_entries).toBeGreaterThanOrEqual(1);
  });

  it('the device leaves its deployment group and its pending update', async () => {
    const firmware = await a.fixtures.firmware(ada, src, 'p');
    await a
      .http()
      .post(`/api/orgs/${src}/products/p/deployments`)
      .set(ada.auth)
      .send({ name: 'grp', firmware: firmware.uuid, conditions: {} })
      .expect(201);
    const identifier = await device();
    await a.db.query(
      `INSERT INTO deployment_group_members (device_id, deployment_group_id)
       SELECT d.id, g.id FROM devices d, deployment_groups g WHERE d.identifier = $1 AND g.name = 'grp'
       ON CONFLICT DO NOTHING`,
      [identifier],
    );
    await a
      .http()
      .post(`/api/devices/${identifier}/upgrade`)
      .set(ada.auth)
      .send({ uuid: firmware.uuid })
      .expect((res) => expect(res.status).toBeLessThan(300));
    const shown = await a.http().get(`/api/devices/${identifier}`).set(ada.auth).expect(200);
    expect(shown.body.data.deployment_group).toMatchObject({ name: 'grp' });
    const pending = () =>
      a.db.query(
        `SELECT 1 FROM pending_updates p JOIN devices d ON d.id = p.device_id WHERE d.identifier = $1`,
        [identifier],
      );
    expect(await pending()).toHaveLength(1);

    const moved = await a
      .http()
      .post(nested(identifier))
      .set(ada.auth)
      .send({ new_org_name: dst, new_product_name: 'r' })
      .expect(200);
    expect(moved.body.data.deployment_group).toBeNull();
    expect(await pending()).toEqual([]);
  });

  it('the short URL moves too; within one organization one audit entry', async () => {
    const identifier = await device();
    const res = await a
      .http()
      .post(`/api/devices/${identifier}/move`)
      .set(ada.auth)
      .send({ new_org_name: src, new_product_name: 'q' })
      .expect(200);
    expect(res.body.data).toMatchObject({ identifier, org_name: src, product_name: 'q' });
    expect((await audit(src)).filter((row) => row.target_id === identifier)).toHaveLength(1);
  });

  it('a connected device is asked to reconnect (from the other instance) and joins under its new product', async () => {
    const identifier = await device();
    const client = await DeviceSocketClient.connect(urlA, { 'x-test-device': identifier });
    clients.push(client);
    const reply = await client.join('device', JOIN);
    expect(reply[4]).toMatchObject({ status: 'ok' });
    await b
      .http()
      .post(`/api/devices/${identifier}/move`)
      .set(ada.auth)
      .send({ new_org_name: dst, new_product_name: 'r' })
      .expect(200);
    expect(await client.closed).toBe(1000);
    const again = await DeviceSocketClient.connect(urlA, { 'x-test-device': identifier });
    clients.push(again);
    expect((await again.join('device', JOIN))[4]).toMatchObject({ status: 'ok' });
    const shown = await a.http().get(`/api/devices/${identifier}`).set(ada.auth).expect(200);
    expect(shown.body.data).toMatchObject({ org_name: dst, product_name: 'r' });
  });

  it('the caller must manage both sides; nothing leaks whether the target exists', async () => {
    const identifier = await device();
    const bob = await a.fixtures.user();
    await a.fixtures.addMember(src, bob, 'manage');
    const send = (user: TestUser, body: object, path = nested(identifier)) =>
      a.http().post(path).set(user.auth).send(body);
    // Bob is not a member of dst; dst and an unknown organization answer alike.
    await send(bob, { new_org_name: dst, new_product_name: 'r' }).expect(404, NOT_FOUND);
    await send(bob, { new_org_name: 'no-such-org', new_product_name: 'r' }).expect(404, NOT_FOUND);
    await a.fixtures.addMember(dst, bob, 'view');
    await send(bob, { new_org_name: dst, new_product_name: 'r' }).expect(403, ROLE_TOO_LOW);
    await send(ada, { new_org_name: dst, new_product_name: 'nope' }).expect(404, NOT_FOUND);
    // A viewer of the source cannot move; a stranger does not see the device.
    const carol = await a.fixtures.user();
    await a.fixtures.addMember(src, carol, 'view');
    await send(carol, { new_org_name: src, new_product_name: 'q' }).expect(403, ROLE_TOO_LOW);
    const stranger = await a.fixtures.user();
    await send(
      stranger,
      { new_org_name: src, new_product_name: 'q' },
      `/api/devices/${identifier}/move`,
    ).expect(404, NOT_FOUND);
    await send(ada, { new_org_name: src, new_product_name: 'q' }, nested('no-such-device')).expect(
      404,
      NOT_FOUND,
    );
    // Nothing moved.
    const shown = await a.http().get(`/api/devices/${identifier}`).set(ada.auth).expect(200);
    expect(shown.body.data).toMatchObject({ org_name: src, product_name: 'p' });
    expect((await audit(src)).filter((row) => row.target_id === identifier)).toEqual([]);
  });

  it('bad input is a 422', async () => {
    const identifier = await device();
    const send = (body: unknown) =>
      a
        .http()
        .post(nested(identifier))
        .set(ada.auth)
        .send(body as object);
    await send({ new_org_name: src }).expect(422, fieldError('new_product_name', "can't be blank"));
    await send({ new_org_name: 5, new_product_name: 'q' }).expect(
      422,
      fieldError('new_org_name', 'must be a string'),
    );
    await send({ new_org_name: src, new_product_name: 'p' }).expect(
      422,
      fieldError('new_product_name', "is the device's product already"),
    );
  });
});
