import { Transactions } from '../src/database/transactions';
import { MEMBERSHIP_LOCK_CLASS } from '../src/deployments/deployment-groups.repository';
import { DeploymentMembershipService } from '../src/deployments/deployment-membership.service';
import { DeviceAuthenticator } from '../src/device-auth/device-authenticator';
import { semverSortKey } from '../src/firmware/fwup/semver-sort-key';
import { DeviceSocketClient } from './support/device-socket-client';
import { eventually } from './support/eventually';
import { listenOnLoopback } from './support/listening-app';
import type { FwupKeyPair } from './support/fw-builder';
import type { TestUser, UploadedFirmware } from './support/fixtures';
import { fieldError, NOT_FOUND, ROLE_TOO_LOW } from './support/contract-bodies';
import { orgScenario } from './support/scenario';
import type { TestApp } from './support/test-app';
import { FakeAuthenticator } from './support/fake-authenticator';

const ELIXIR = 'must be valid Elixir version requirement string';

describe('deployment groups', () => {
  let t: TestApp;
  let admin: TestUser;
  let org: string;
  let product: string;
  let key: FwupKeyPair;
  let fw1: UploadedFirmware;
  let fw2: UploadedFirmware;
  let otherPlatform: UploadedFirmware;

  const auth = new FakeAuthenticator();
  let url: string;

  beforeAll(async () => {
    ({ t, admin, org, product, key } = await orgScenario({
      product: 'gateway',
      signingKey: 'release',
      app: { overrides: [{ provide: DeviceAuthenticator, useValue: auth }] },
    }));
    auth.db = t.db;
    ({ url } = await listenOnLoopback(t));
    fw1 = await t.fixtures.firmware(admin, org, product, { version: '1.0.0', key });
    fw2 = await t.fixtures.firmware(admin, org, product, { version: '1.1.0', key });
    otherPlatform = await t.fixtures.firmware(admin, org, product, {
      version: '2.0.0',
      key,
      meta: { platform: 'bbb', architecture: 'arm' },
    });
  });
  afterAll(() => t.close());

  const base = () => `/api/orgs/${org}/products/${product}/deployments`;
  const create = (body: object, who = admin) => t.http().post(base()).set(who.auth).send(body);
  const patch = (name: string, body: object, who = admin) =>
    t.http().patch(`${base()}/${name}`).set(who.auth).send(body);
  const show = (name: string) => t.http().get(`${base()}/${name}`).set(admin.auth);
  const groupBody = (name: string, extra: object = {}) => ({
    name,
    firmware: fw1.uuid,
    conditions: { version: '', tags: [] },
    ...extra,
  });

  describe('CRUD', () => {
    it('creates with NervesHub defaults, 201 and Location; shows and lists it', async () => {
      const res = await create(groupBody('crud-a')).expect(201);
      expect(res.headers.location).toBe(`${base()}/crud-a`);
      expect(res.body.data).toEqual({
        name: 'crud-a',
        is_active: false,
        state: 'off',
        firmware_uuid: fw1.uuid,
        current_release: {
          number: 1,
          firmware: { version: '1.0.0', architecture: 'aarch64', platform: 'rpi4', uuid: fw1.uuid },
          inserted_at: expect.any(String),
          updated_at: expect.any(String),
        },
        conditions: { version: '', tags: [], tag_operator: 'and' },
        delta_updatable: true,
        device_count: 0,
        releases_count: 1,
        notes: null,
        platform: 'rpi4',
        architecture: 'aarch64',
        concurrent_updates: 10,
        inflight_update_expiration_minutes: 60,
        device_failure_threshold: 3,
        device_failure_rate_seconds: 180,
        device_failure_rate_amount: 5,
        failure_threshold: 50,
        penalty_timeout_minutes: 1440,
        queue_management: 'FIFO',
        lock_device_membership: false,
        paused_reason: null,
        paused_at: null,
        counts: { devices: 0, updating: 0, updated: 0, failed: 0, blocked: 0 },
        inserted_at: expect.any(String),
        updated_at: expect.any(String),
      });
      await show('crud-a').expect(200, res.body);
      const list = await t.http().get(base()).set(admin.auth).expect(200);
      expect(list.body.data.map((g: { name: string }) => g.name)).toContain('crud-a');
    });

    it('accepts a wrapped body, and a duplicate name is 422', async () => {
      await create({ deployment: groupBody('crud-b', { notes: 'n', is_active: true }) }).expect(201);
      expect((await show('crud-b')).body.data).toMatchObject({ notes: 'n', is_active: true, state: 'on' });
      await create(groupBody('crud-b')).expect(422, fieldError('name', 'has already been taken'));
    });

    it('updates settings (wrapped or not; state on/off) and deletes', async () => {
      await create(groupBody('crud-c')).expect(201);
      const res = await patch('crud-c', { deployment: { concurrent_updates: 3, state: 'on' } }).expect(200);
      expect(res.body.data).toMatchObject({ concurrent_updates: 3, is_active: true, state: 'on' });
      await t
        .http()
        .put(`${base()}/crud-c`)
        .set(admin.auth)
        .send({ is_active: false, queue_management: 'LIFO', name: 'crud-c2' })
        .expect(200);
      expect((await show('crud-c2')).body.data).toMatchObject({ state: 'off', queue_management: 'LIFO' });
      await show('crud-c').expect(404, NOT_FOUND);
      await t.http().delete(`${base()}/crud-c2`).set(admin.auth).expect(204);
      await show('crud-c2').expect(404, NOT_FOUND);
      await t.http().delete(`${base()}/crud-c2`).set(admin.auth).expect(404, NOT_FOUND);
      await patch('nope', { notes: 'x' }).expect(404, NOT_FOUND);
    });

    it('boolean settings take the strings "true" and "false", as the NervesHub CLI sends every value', async () => {
      await create(groupBody('crud-s')).expect(201);
      const put = (body: object) => t.http().put(`${base()}/crud-s`).set(admin.auth).send(body);
      const res = await put({
        deployment: { is_active: 'true', delta_updatable: 'false', lock_device_membership: 'true' },
      }).expect(200);
      expect(res.body.data).toMatchObject({
        is_active: true,
        delta_updatable: false,
        lock_device_membership: true,
      });
      await put({ deployment: { is_active: 'false' } }).expect(200);
      expect((await show('crud-s')).body.data).toMatchObject({ is_active: false, state: 'off' });
      for (const value of ['yes', 'TRUE', '1', null]) {
        await put({ deployment: { is_active: value } }).expect(
          422,
          fieldError('is_active', 'must be true or false'),
        );
      }
      expect((await show('crud-s')).body.data).toMatchObject({ is_active: false });
      // Numbers are not read from strings: a wrong type (contract §3), unlike NervesHub's casting.
      await put({ deployment: { concurrent_updates: '20' } }).expect(
        422,
        fieldError('concurrent_updates', 'is invalid'),
      );
    });

    it('turning a paused group on again clears the reason it paused', async () => {
      await create(groupBody('paused', { is_active: true })).expect(201);
      // Only the orchestrator pauses a group (failure_threshold reached): written by hand here.
      await t.db.query(
        `UPDATE deployment_groups SET is_active = false, paused_reason = 'too many failures', paused_at = now()
          WHERE name = 'paused'`,
      );
      const paused = (await show('paused').expect(200)).body.data;
      expect(paused).toMatchObject({ state: 'off', paused_reason: 'too many failures' });
      expect(paused.paused_at).toEqual(expect.any(String));
      await patch('paused', { notes: 'looking' }).expect(200);
      expect((await show('paused')).body.data.paused_reason).toBe('too many failures');
      const resumed = await patch('paused', { state: 'on' }).expect(200);
      expect(resumed.body.data).toMatchObject({ state: 'on', paused_reason: null, paused_at: null });
    });

    it('audits every change', async () => {
      await create(groupBody('audited')).expect(201);
      await patch('audited', { notes: 'x', firmware: fw2.uuid }).expect(200);
      await t.http().delete(`${base()}/audited`).set(admin.auth).expect(204);
      const rows = await t.db.query<{ action: string }[]>(
        `SELECT action FROM audit_logs WHERE target_type = 'deployment_group' AND target_id = 'audited' ORDER BY id`,
      );
      expect(rows.map((r) => r.action)).toEqual([
        'deployment_group.create',
        'deployment_group.update',
        'deployment_group.release',
        'deployment_group.delete',
      ]);
    });
  });

  describe('validation', () => {
    it.each([
      ['concurrent_updates', 0, 'must be greater than 0'],
      ['device_failure_threshold', 0, 'must be greater than 0'],
      ['device_failure_rate_seconds', 59, 'must be greater than or equal to 60'],
      ['device_failure_rate_amount', 0, 'must be greater than 0'],
      ['failure_threshold', 0, 'must be greater than 0'],
      ['penalty_timeout_minutes', 59, 'must be greater than or equal to 60'],
      ['inflight_update_expiration_minutes', 0, 'must be greater than 0'],
      ['concurrent_updates', 1.5, 'is invalid'],
      ['concurrent_updates', '3', 'is invalid'],
      ['queue_management', 'RANDOM', 'is invalid'],
    ])('%s = %p is 422 %p', async (field, value, message) => {
      await create(groupBody('bad', { [field]: value })).expect(422, fieldError(field, message));
    });

    it('accepts the bounds themselves', async () => {
      const res = await create(
        groupBody('bounds', {
          concurrent_updates: 1,
          device_failure_rate_seconds: 60,
          penalty_timeout_minutes: 60,
        }),
      ).expect(201);
      expect(res.body.data).toMatchObject({ device_failure_rate_seconds: 60, penalty_timeout_minutes: 60 });
    });

    it('requires name, firmware and conditions', async () => {
      const res = await create({}).expect(422);
      expect(res.body.errors).toMatchObject({
        name: ["can't be blank"],
        firmware: ["can't be blank"],
        conditions: ["can't be blank"],
      });
    });

    it.each(['1.2', '~> 1', '>= 1.0.0 and', 'latest', 'v1.0.0'])(
      'refuses the version requirement %p',
      async (version) => {
        await create(groupBody('badreq', { conditions: { version } })).expect(
          422,
          fieldError('conditions.version', ELIXIR),
        );
      },
    );

    it('refuses a bad tag operator and an unknown firmware', async () => {
      await create(groupBody('badop', { conditions: { tag_operator: 'xor' } })).expect(
        422,
        fieldError('conditions.tag_operator', 'is invalid'),
      );
      await create(groupBody('badfw', { firmware: '00000000-0000-0000-0000-000000000000' })).expect(
        422,
        fieldError('firmware', 'does not exist in this product'),
      );
    });
  });

  describe('releases', () => {
    it('a new firmware makes release number + 1; a firmware of another platform is 422', async () => {
      await create(groupBody('rel')).expect(201);
      const res = await patch('rel', { firmware: fw2.uuid }).expect(200);
      expect(res.body.data).toMatchObject({
        firmware_uuid: fw2.uuid,
        releases_count: 2,
        current_release: { number: 2, firmware: { version: '1.1.0' } },
      });
      await patch('rel', { firmware: otherPlatform.uuid }).expect(
        422,
        fieldError('firmware', "platform and architecture must be the deployment group's (rpi4, aarch64)"),
      );
      const releases = await t.http().get(`${base()}/rel/releases`).set(admin.auth).expect(200);
      expect(releases.body.data.map((r: { number: number }) => r.number)).toEqual([2, 1]);
      expect(releases.body.data[0]).toMatchObject({
        firmware: { uuid: fw2.uuid, version: '1.1.0', platform: 'rpi4', architecture: 'aarch64' },
        created_by: admin.user.email,
        failed_count: 0,
      });
    });

    it('a firmware a release uses cannot be deleted (422 as NervesHub)', async () => {
      await create(groupBody('holds', { firmware: fw2.uuid })).expect(201);
      await t
        .http()
        .delete(`/api/orgs/${org}/products/${product}/firmwares/${fw2.uuid}`)
        .set(admin.auth)
        .expect(422, fieldError('deployment_releases', 'Firmware has associated deployment releases'));
    });

    it('a product is deleted with its groups and the firmware their releases hold; with devices, nothing goes', async () => {
      const name = `gone-${Date.now()}`;
      await t.fixtures.product(admin, org, name);
      const firmware = await t.fixtures.firmware(admin, org, name, { version: '1.0.0', key });
      const groups = `/api/orgs/${org}/products/${name}/deployments`;
      const body = { name: 'g', firmware: firmware.uuid, conditions: { version: '', tags: [] } };
      await t.http().post(groups).set(admin.auth).send(body).expect(201);
      await t.fixtures.device(admin, org, name, `${name}-dev`);
      await t.http().delete(`/api/orgs/${org}/products/${name}`).set(admin.auth).expect(409);
      await t.http().get(`${groups}/g`).set(admin.auth).expect(200);
      await t
        .http()
        .delete(`/api/orgs/${org}/products/${name}/devices/${name}-dev`)
        .set(admin.auth)
        .expect(204);
      await t.http().delete(`/api/orgs/${org}/products/${name}`).set(admin.auth).expect(204);
      await t.http().get(`/api/orgs/${org}/products/${name}`).set(admin.auth).expect(404);
    });
  });

  describe('roles', () => {
    it('view reads, manage writes', async () => {
      const viewer = await t.fixtures.user();
      await t.fixtures.addMember(org, viewer, 'view');
      await create(groupBody('roles')).expect(201);
      await t.http().get(base()).set(viewer.auth).expect(200);
      await t.http().get(`${base()}/roles`).set(viewer.auth).expect(200);
      await t.http().get(`${base()}/roles/releases`).set(viewer.auth).expect(200);
      await create(groupBody('roles-v'), viewer).expect(403, ROLE_TOO_LOW);
      await patch('roles', { notes: 'x' }, viewer).expect(403, ROLE_TOO_LOW);
      await t.http().delete(`${base()}/roles`).set(viewer.auth).expect(403, ROLE_TOO_LOW);
      const manager = await t.fixtures.user();
      await t.fixtures.addMember(org, manager, 'manage');
      await patch('roles', { notes: 'x' }, manager).expect(200);
      const stranger = await t.fixtures.user();
      await t.http().get(base()).set(stranger.auth).expect(404, NOT_FOUND);
    });
  });

  describe('membership', () => {
    let p: string;
    let pfw1: UploadedFirmware;
    let pfw2: UploadedFirmware;
    const pbase = () => `/api/orgs/${org}/products/${p}/deployments`;
    const pcreate = (body: object) => t.http().post(pbase()).set(admin.auth).send(body);
    const ppatch = (name: string, body: object) =>
      t.http().patch(`${pbase()}/${name}`).set(admin.auth).send(body);
    const pgroupOf = async (identifier: string) =>
      (await t.http().get(`/api/orgs/${org}/products/${p}/devices/${identifier}`).set(admin.auth).expect(200))
        .body.data.deployment_group as { name: string; is_active: boolean } | null;

    /** The full recomputation finds nothing to change: the request's targeted one left the product settled. */
    const expectSettled = async () => {
      const [{ id }] = await t.db.query<{ id: string }[]>(
        `SELECT p.id FROM products p JOIN orgs o ON o.id = p.org_id WHERE o.name = $1 AND p.name = $2`,
        [org, p],
      );
      const changes = await t.app
        .get(Transactions)
        .run((tx) => t.app.get(DeploymentMembershipService).recomputeProduct(id, tx));
      expect(changes).toEqual({ left: 0, joined: 0 });
    };

    beforeAll(async () => {
      p = await t.fixtures.product(admin, org, 'members');
      pfw1 = await t.fixtures.firmware(admin, org, p, { version: '1.0.0', key });
      pfw2 = await t.fixtures.firmware(admin, org, p, { version: '2.0.0', key });
    });

    const reportIn = (identifier: string, version: string, platform = 'rpi4', architecture = 'aarch64') =>
      t.db.query(
        // Only a device can report its firmware: written as the join stores it.
        `UPDATE devices SET firmware_version = $2::text, firmware_version_key = $3, firmware_platform = $4::text,
                firmware_metadata = jsonb_build_object('version', $2::text, 'platform', $4::text,
                                                       'architecture', $5::text)
          WHERE identifier = $1`,
        [identifier, version, semverSortKey(version), platform, architecture],
      );

    it('devices join the best active group on create, leave on update, move on delete, follow their tags', async () => {
      const [a, b, c, d] = ['m-a', 'm-b', 'm-c', 'm-d'];
      await t.fixtures.device(admin, org, p, a, { tags: ['beta'] });
      await t.fixtures.device(admin, org, p, b, { tags: ['beta', 'lab'] });
      await t.fixtures.device(admin, org, p, c);
      await t.fixtures.device(admin, org, p, d);
      await reportIn(a, '1.0.0');
      await reportIn(b, '1.5.0');
      await reportIn(c, '0.9.0');
      await reportIn(d, '1.0.0', 'bbb');

      // inactive: nobody joins
      await pcreate({ name: 'all', firmware: pfw1.uuid, conditions: {} }).expect(201);
      expect(await pgroupOf(a)).toBeNull();
      // activated: every rpi4/aarch64 device joins
      const on = await ppatch('all', { is_active: true }).expect(200);
      expect(on.body.data.device_count).toBe(3);
      expect(await pgroupOf(a)).toEqual({
        name: 'all',
        is_active: true,
        firmware_uuid: pfw1.uuid,
        firmware_version: '1.0.0',
      });
      expect(await pgroupOf(d)).toBeNull();

      // a newer group does not take devices that already have one (as NervesHub)
      await pcreate({
        name: 'beta',
        firmware: pfw2.uuid,
        is_active: true,
        conditions: { version: '>= 1.0.0', tags: ['beta'] },
      }).expect(201);
      expect((await pgroupOf(a))?.name).toBe('all');
      await expectSettled();

      // deleting "all" frees its devices: a and b join "beta" (tags match), c has no match
      await t.http().delete(`${pbase()}/all`).set(admin.auth).expect(204);
      expect((await pgroupOf(a))?.name).toBe('beta');
      expect((await pgroupOf(b))?.name).toBe('beta');
      expect(await pgroupOf(c)).toBeNull();
      await expectSettled();

      // conditions change: b no longer matches and leaves
      await ppatch('beta', { conditions: { version: '~> 1.0.0' } }).expect(200);
      expect((await pgroupOf(a))?.name).toBe('beta');
      expect(await pgroupOf(b)).toBeNull();
      await expectSettled();

      // tag change: a loses "beta" and leaves; gets it back and joins again
      await t
        .http()
        .patch(`/api/orgs/${org}/products/${p}/devices/${a}`)
        .set(admin.auth)
        .send({ tags: 'x' })
        .expect(200);
      expect(await pgroupOf(a)).toBeNull();
      await t
        .http()
        .patch(`/api/orgs/${org}/products/${p}/devices/${a}`)
        .set(admin.auth)
        .send({ tags: 'beta' })
        .expect(200);
      expect((await pgroupOf(a))?.name).toBe('beta');

      // deactivation keeps the members (as NervesHub)
      await ppatch('beta', { is_active: false }).expect(200);
      expect(await pgroupOf(a)).toEqual(expect.objectContaining({ name: 'beta', is_active: false }));
      await expectSettled();

      // the device list filters on the group
      const list = await t
        .http()
        .get(`/api/orgs/${org}/products/${p}/devices?filters[deployment_group]=beta`)
        .set(admin.auth)
        .expect(200);
      expect(list.body.data.map((x: { identifier: string }) => x.identifier)).toEqual([a]);
      await t.http().delete(`${pbase()}/beta`).set(admin.auth).expect(204);
    });

    it('ties: the highest firmware version first, then more matching tags, then the older group', async () => {
      const q = await t.fixtures.product(admin, org, 'ties');
      const q1 = await t.fixtures.firmware(admin, org, q, { version: '1.0.0', key });
      const q2 = await t.fixtures.firmware(admin, org, q, { version: '2.0.0', key });
      const qbase = `/api/orgs/${org}/products/${q}/deployments`;
      const dev = 'tie-dev';
      await t.fixtures.device(admin, org, q, dev, { tags: ['a', 'b'] });
      await reportIn(dev, '1.0.0');
      const qgroup = async () =>
        (await t.http().get(`/api/orgs/${org}/products/${q}/devices/${dev}`).set(admin.auth).expect(200)).body
          .data.deployment_group?.name as string | undefined;
      // created inactive, then all turned on in one recomputation through the last one's activation
      const make = (name: string, fw: string, tags: string[], op = 'or') =>
        t
          .http()
          .post(qbase)
          .set(admin.auth)
          .send({ name, firmware: fw, conditions: { tags, tag_operator: op } })
          .expect(201);
      await make('old-one-tag', q1.uuid, ['a']);
      await make('two-tags', q1.uuid, ['a', 'b']);
      await make('newer-one-tag', q1.uuid, ['b']);
      await make('higher-version', q2.uuid, []);
      const lock = (name: string, on: boolean) =>
        t.http().patch(`${qbase}/${name}`).set(admin.auth).send({ is_active: on }).expect(200);
      await lock('old-one-tag', true);
      expect(await qgroup()).toBe('old-one-tag');
      const free = () => t.http().delete(`${qbase}/${'old-one-tag'}`).set(admin.auth);
      await lock('newer-one-tag', true);
      await lock('two-tags', true);
      await lock('higher-version', true);
      // still in its group: membership does not move a matching device
      expect(await qgroup()).toBe('old-one-tag');
      await free().expect(204);
      expect(await qgroup()).toBe('higher-version');
      await t.http().delete(`${qbase}/higher-version`).set(admin.auth).expect(204);
      expect(await qgroup()).toBe('two-tags');
      await t.http().delete(`${qbase}/two-tags`).set(admin.auth).expect(204);
      expect(await qgroup()).toBe('newer-one-tag');
    });

    it('counts its devices, those on the current release and those in the penalty box', async () => {
      const [onRelease, behind, boxed] = ['c-on', 'c-behind', 'c-boxed'];
      for (const identifier of [onRelease, behind, boxed]) {
        await t.fixtures.device(admin, org, p, identifier, { tags: ['counted'] });
        await reportIn(identifier, '1.0.0');
      }
      // runs the release's firmware (pfw2, version 2.0.0) as a join would have stored it
      await t.db.query(
        `UPDATE devices SET firmware_version = '2.0.0', firmware_version_key = $2,
                firmware_metadata = firmware_metadata || jsonb_build_object('uuid', $3::text, 'version', '2.0.0')
          WHERE identifier = $1`,
        [onRelease, semverSortKey('2.0.0'), pfw2.uuid],
      );
      await t.db.query(
        `UPDATE devices SET updates_blocked_until = now() + interval '1 hour' WHERE identifier = $1`,
        [boxed],
      );
      const created = await pcreate({
        name: 'counted',
        firmware: pfw2.uuid,
        is_active: true,
        conditions: { tags: ['counted'] },
      }).expect(201);
      expect(created.body.data).toEqual(
        expect.objectContaining({
          device_count: 3,
          counts: expect.objectContaining({ devices: 3, updated: 1, blocked: 1 }),
        }),
      );
      // the same version under another uuid is not the release
      await t.db.query(
        `UPDATE devices SET firmware_metadata = firmware_metadata || '{"uuid": "00000000-0000-0000-0000-000000000000"}'
          WHERE identifier = $1`,
        [onRelease],
      );
      const read = await t.http().get(`${pbase()}/counted`).set(admin.auth).expect(200);
      expect(read.body.data.counts).toEqual(expect.objectContaining({ devices: 3, updated: 0, blocked: 1 }));
      await t.http().delete(`${pbase()}/counted`).set(admin.auth).expect(204);
    });

    it('deleting a device or a group deletes its memberships, even while a recomputation holds the product', async () => {
      const members = async (where: string, param: string) =>
        Number(
          (
            await t.db.query<{ n: string }[]>(
              `SELECT count(*) AS n FROM deployment_group_members m WHERE ${where}`,
              [param],
            )
          )[0].n,
        );
      const gone = 'm-gone';
      const raced = 'm-raced';
      await t.fixtures.device(admin, org, p, gone, { tags: ['cleanup'] });
      await t.fixtures.device(admin, org, p, raced, { tags: ['cleanup'] });
      await reportIn(gone, '1.0.0');
      await reportIn(raced, '1.0.0');
      await pcreate({
        name: 'cleanup',
        firmware: pfw1.uuid,
        is_active: true,
        conditions: { tags: ['cleanup'] },
      }).expect(201);
      const [{ id: groupId, product_id: productId }] = await t.db.query<{ id: string; product_id: string }[]>(
        `SELECT id, product_id FROM deployment_groups WHERE name = 'cleanup'`,
      );
      const deviceId = async (identifier: string) =>
        (await t.db.query<{ id: string }[]>(`SELECT id FROM devices WHERE identifier = $1`, [identifier]))[0]
          .id;
      const goneId = await deviceId(gone);
      const racedId = await deviceId(raced);
      expect(await members('m.deployment_group_id = $1', groupId)).toBe(2);

      await t.http().delete(`/api/orgs/${org}/products/${p}/devices/${gone}`).set(admin.auth).expect(204);
      expect(await members('m.device_id = $1', goneId)).toBe(0);

      // A recomputation in flight (another connection holds the product's membership lock) has just added the
      // device it read before the delete: the delete waits for it, then removes that membership too.
      await t.db.query(`DELETE FROM deployment_group_members WHERE device_id = $1`, [racedId]);
      const recomputation = t.db.createQueryRunner();
      await recomputation.connect();
      try {
        await recomputation.startTransaction();
        await recomputation.query(`SELECT pg_advisory_xact_lock($1, hashtext($2::text))`, [
          MEMBERSHIP_LOCK_CLASS,
          productId,
        ]);
        await recomputation.query(
          `INSERT INTO deployment_group_members (device_id, deployment_group_id) VALUES ($1, $2)`,
          [racedId, groupId],
        );
        const deleting = t.http().delete(`/api/orgs/${org}/products/${p}/devices/${raced}`).set(admin.auth);
        const deleted = deleting.then((res) => res.status);
        const waiting = await eventually(
          async () =>
            Number(
              (
                await t.db.query<{ n: string }[]>(
                  `SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`,
                )
              )[0].n,
            ),
          (n) => n > 0,
        );
        expect(waiting).toBe(1);
        await recomputation.commitTransaction();
        expect(await deleted).toBe(204);
      } finally {
        await recomputation.release();
      }
      expect(await members('m.device_id = $1', racedId)).toBe(0);

      // A group's memberships go with it.
      const last = 'm-last';
      await t.fixtures.device(admin, org, p, last, { tags: ['cleanup'] });
      await reportIn(last, '1.0.0');
      await t
        .http()
        .patch(`/api/orgs/${org}/products/${p}/devices/${last}`)
        .set(admin.auth)
        .send({ tags: 'cleanup,x' })
        .expect(200);
      expect(await members('m.deployment_group_id = $1', groupId)).toBe(1);
      await t.http().delete(`${pbase()}/cleanup`).set(admin.auth).expect(204);
      expect(await members('m.deployment_group_id = $1', groupId)).toBe(0);
    });

    it('lock_device_membership keeps members that no longer match, and takes no new ones', async () => {
      const dev = 'lock-dev';
      await t.fixtures.device(admin, org, p, dev, { tags: ['locked'] });
      await reportIn(dev, '1.0.0');
      await pcreate({
        name: 'locked',
        firmware: pfw1.uuid,
        is_active: true,
        conditions: { tags: ['locked'] },
      }).expect(201);
      expect((await pgroupOf(dev))?.name).toBe('locked');
      await ppatch('locked', { lock_device_membership: true, conditions: { version: '>= 5.0.0' } }).expect(
        200,
      );
      expect((await pgroupOf(dev))?.name).toBe('locked');
      const other = 'lock-dev-2';
      await t.fixtures.device(admin, org, p, other, { tags: ['locked'] });
      await reportIn(other, '6.0.0');
      await ppatch('locked', { notes: 'poke' }).expect(200);
      await t
        .http()
        .patch(`/api/orgs/${org}/products/${p}/devices/${other}`)
        .set(admin.auth)
        .send({ tags: 'locked,x' })
        .expect(200);
      expect(await pgroupOf(other)).toBeNull();
      await t.http().delete(`${pbase()}/locked`).set(admin.auth).expect(204);
    });
  });

  describe('device join', () => {
    it('a joining device takes the best group for the firmware it reports, and leaves when it no longer matches', async () => {
      const j = await t.fixtures.product(admin, org, 'joins');
      const jfw = await t.fixtures.firmware(admin, org, j, { version: '1.0.0', key });
      const jbase = `/api/orgs/${org}/products/${j}/deployments`;
      for (const [name, tags] of [
        ['join-any', []],
        ['join-tagged', ['j']],
      ] as const) {
        await t
          .http()
          .post(jbase)
          .set(admin.auth)
          .send({ name, firmware: jfw.uuid, is_active: true, conditions: { version: '~> 1.0', tags } })
          .expect(201);
      }
      const identifier = 'joiner';
      await t.fixtures.device(admin, org, j, identifier, { tags: ['j'] });
      const groupOfJoiner = async () =>
        (
          await t
            .http()
            .get(`/api/orgs/${org}/products/${j}/devices/${identifier}`)
            .set(admin.auth)
            .expect(200)
        ).body.data.deployment_group as { name: string } | null;
      expect(await groupOfJoiner()).toBeNull();

      const params = (version: string, platform = 'rpi4') => ({
        nerves_fw_uuid: jfw.uuid,
        nerves_fw_product: j,
        nerves_fw_version: version,
        nerves_fw_platform: platform,
        nerves_fw_architecture: 'aarch64',
        device_api_version: '2.3.0',
      });
      const join = async (version: string, platform?: string) => {
        const client = await DeviceSocketClient.connect(url, { 'x-test-device': identifier });
        try {
          expect((await client.join('device', params(version, platform)))[4]).toMatchObject({ status: 'ok' });
        } finally {
          await client.close();
        }
      };
      // same firmware version on both groups: more matching tags wins
      await join('1.2.0');
      expect(await groupOfJoiner()).toEqual({
        name: 'join-tagged',
        is_active: true,
        firmware_uuid: jfw.uuid,
        firmware_version: '1.0.0',
      });
      // a version outside "~> 1.0": leaves
      await join('2.0.0');
      expect(await groupOfJoiner()).toBeNull();
      // back in range: joins again; another platform: leaves
      await join('1.0.1');
      expect((await groupOfJoiner())?.name).toBe('join-tagged');
      await join('1.0.1', 'bbb');
      expect(await groupOfJoiner()).toBeNull();
    });
  });

  describe('manual upgrade', () => {
    it("turns the device's automatic updates off, as NervesHub; PATCH turns them on again", async () => {
      const identifier = await t.fixtures.device(admin, org, product);
      const devices = `/api/orgs/${org}/products/${product}/devices/${identifier}`;
      await t.http().post(`${devices}/upgrade`).set(admin.auth).send({ uuid: fw1.uuid }).expect(204);
      expect((await t.http().get(devices).set(admin.auth).expect(200)).body.data.updates_enabled).toBe(false);
      await t.http().patch(devices).set(admin.auth).send({ updates_enabled: true }).expect(200);
      expect((await t.http().get(devices).set(admin.auth).expect(200)).body.data.updates_enabled).toBe(true);
    });
  });
});
