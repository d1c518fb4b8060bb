import { generateKeyPairSync } from 'node:crypto';
import type { TestApp } from './support/test-app';
import { orgScenario } from './support/scenario';
import type { TestUser } from './support/fixtures';
import { fieldError, NOT_FOUND } from './support/contract-bodies';

function fwupPublicKey(): string {
  const { publicKey } = generateKeyPairSync('ed25519');
  return publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString('base64');
}

describe('signing keys', () => {
  let t: TestApp;
  let admin: TestUser;
  let org: string;
  let base: string;
  beforeAll(async () => {
    ({ t, admin, org } = await orgScenario());
    base = `/api/orgs/${org}/keys`;
  });
  afterAll(() => t.close());

  it('adds (201), lists and deletes (204) a key', async () => {
    const key = fwupPublicKey();
    const res = await t.http().post(base).set(admin.auth).send({ name: 'release', key }).expect(201);
    expect(res.body).toEqual({ data: { name: 'release', key, inserted_at: expect.stringMatching(/Z$/) } });
    const list = await t.http().get(base).set(admin.auth).expect(200);
    expect(list.body).toEqual({ data: [res.body.data] });
    await t.http().get(`${base}/release`).set(admin.auth).expect(200, res.body);
    await t.http().delete(`${base}/release`).set(admin.auth).expect(204);
    await t.http().delete(`${base}/release`).set(admin.auth).expect(404, NOT_FOUND);
    await t.http().get(base).set(admin.auth).expect(200, { data: [] });
    await t.http().get(`${base}/release`).set(admin.auth).expect(404, NOT_FOUND);
  });

  it('GET one key: names match exactly; anything else is 404 with the constant body', async () => {
    await t.http().post(base).set(admin.auth).send({ name: 'Exact', key: fwupPublicKey() }).expect(201);
    await t.http().get(`${base}/Exact`).set(admin.auth).expect(200);
    for (const name of ['exact', 'Exact ', 'missing', '%00', 'x'.repeat(300)]) {
      await t
        .http()
        .get(`${base}/${encodeURIComponent(name)}`)
        .set(admin.auth)
        .expect(404, NOT_FOUND);
    }
  });

  it('GET one key: a key of another organization of the same member is 404 there', async () => {
    const owner = await t.fixtures.user();
    const otherOrg = await t.fixtures.org(owner);
    await t.fixtures.addMember(otherOrg, admin, 'admin');
    await t.http().post(base).set(admin.auth).send({ name: 'mine', key: fwupPublicKey() }).expect(201);
    await t.http().get(`${base}/mine`).set(admin.auth).expect(200);
    await t.http().get(`/api/orgs/${otherOrg}/keys/mine`).set(admin.auth).expect(404, NOT_FOUND);
  });

  it.each([
    ['not base64 at all', 'not a key!'],
    ['31 bytes', Buffer.alloc(31, 1).toString('base64')],
    ['33 bytes', Buffer.alloc(33, 1).toString('base64')],
    ['unpadded', Buffer.alloc(32, 1).toString('base64').replace(/=$/, '')],
    ['a PEM key', '-----BEGIN PUBLIC KEY-----'],
  ])('422 naming key for %s', async (_label, key) => {
    const res = await t.http().post(base).set(admin.auth).send({ name: 'bad', key }).expect(422);
    expect(res.body).toEqual({
      errors: { key: ['must be a base64 ed25519 public key (32 bytes, 44 characters)'] },
    });
  });

  it('422 naming name for a duplicate or a blank name', async () => {
    await t.http().post(base).set(admin.auth).send({ name: 'dup', key: fwupPublicKey() }).expect(201);
    const dup = await t
      .http()
      .post(base)
      .set(admin.auth)
      .send({ name: 'dup', key: fwupPublicKey() })
      .expect(422);
    expect(dup.body).toEqual(fieldError('name', 'has already been taken'));
    const blank = await t
      .http()
      .post(base)
      .set(admin.auth)
      .send({ name: ' ', key: fwupPublicKey() })
      .expect(422);
    expect(blank.body).toEqual(fieldError('name', "can't be blank"));
  });

  it('roles: view lists and shows, manage cannot add or delete, outsiders 404', async () => {
    const [viewer, manager, outsider] = await Promise.all([
      t.fixtures.user(),
      t.fixtures.user(),
      t.fixtures.user(),
    ]);
    await t.fixtures.addMember(org, viewer, 'view');
    await t.fixtures.addMember(org, manager, 'manage');
    await t.http().post(base).set(admin.auth).send({ name: 'roles', key: fwupPublicKey() }).expect(201);
    await t.http().get(base).set(viewer.auth).expect(200);
    await t.http().get(`${base}/roles`).set(viewer.auth).expect(200);
    await t
      .http()
      .post(base)
      .set(manager.auth)
      .send({ name: 'm', key: fwupPublicKey() })
      .expect(403, NOT_FOUND);
    await t.http().delete(`${base}/roles`).set(manager.auth).expect(403, NOT_FOUND);
    await t.http().get(base).set(outsider.auth).expect(404, NOT_FOUND);
    await t.http().get(`${base}/roles`).set(outsider.auth).expect(404, NOT_FOUND);
  });
});
