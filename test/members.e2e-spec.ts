import { createTestApp, type TestApp } from './support/test-app';
import type { TestUser } from './support/fixtures';
import { detail, fieldError, fieldErrors, NOT_FOUND } from './support/contract-bodies';

describe('organization members', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  async function setup() {
    const admin = await t.fixtures.user({ name: 'Admin' });
    const org = await t.fixtures.org(admin);
    return { admin, org, base: `/api/orgs/${org}/users` };
  }

  it('POST (deprecated) adds a registered user: 201 {email, name, role}', async () => {
    const { admin, base } = await setup();
    const grace = await t.fixtures.user({ name: 'Grace Hopper' });
    const res = await t
      .http()
      .post(base)
      .set(admin.auth)
      .send({ email: grace.user.email.toUpperCase(), role: 'manage' })
      .expect(201);
    expect(res.body).toEqual({ data: { email: grace.user.email, name: 'Grace Hopper', role: 'manage' } });
    const list = await t.http().get(base).set(grace.auth).expect(200);
    expect(list.body.data).toEqual(
      expect.arrayContaining([
        { email: admin.user.email, name: 'Admin', role: 'admin' },
        { email: grace.user.email, name: 'Grace Hopper', role: 'manage' },
      ]),
    );
  });

  it('GET one member: {email, name, role}, found by its email in any case', async () => {
    const { admin, base, org } = await setup();
    const grace = await t.fixtures.user({ name: 'Grace Hopper' });
    await t.fixtures.addMember(org, grace, 'manage');
    const res = await t.http().get(`${base}/${grace.user.email.toUpperCase()}`).set(admin.auth).expect(200);
    expect(res.body).toEqual({ data: { email: grace.user.email, name: 'Grace Hopper', role: 'manage' } });
    await t
      .http()
      .get(`${base}/${admin.user.email}`)
      .set(grace.auth)
      .expect(200, { data: { email: admin.user.email, name: 'Admin', role: 'admin' } });
  });

  it('GET one member: 404 with the constant body for a registered non-member, an unknown email or junk', async () => {
    const { admin, base } = await setup();
    const stranger = await t.fixtures.user();
    for (const email of [stranger.user.email, 'ghost@example.com', 'not an email', '%00', 'x'.repeat(400)]) {
      await t
        .http()
        .get(`${base}/${encodeURIComponent(email)}`)
        .set(admin.auth)
        .expect(404, NOT_FOUND);
    }
  });

  it('every 422 of the contract', async () => {
    const { admin, base } = await setup();
    const member = await t.fixtures.user();
    const unknown = await t
      .http()
      .post(base)
      .set(admin.auth)
      .send({ email: 'ghost@example.com', role: 'view' });
    expect(unknown.status).toBe(422);
    expect(unknown.body).toEqual(fieldError('email', 'does not belong to a registered user'));
    const badRole = await t
      .http()
      .post(base)
      .set(admin.auth)
      .send({ email: member.user.email, role: 'bogus' });
    expect(badRole.status).toBe(422);
    expect(badRole.body).toEqual(fieldError('role', 'is invalid'));
    const missing = await t.http().post(base).set(admin.auth).send({});
    expect(missing.body).toEqual(fieldErrors({ email: ["can't be blank"], role: ["can't be blank"] }));
    await t.http().post(base).set(admin.auth).send({ email: member.user.email, role: 'view' }).expect(201);
    const again = await t.http().post(base).set(admin.auth).send({ email: member.user.email, role: 'admin' });
    expect(again.status).toBe(422);
    expect(again.body).toEqual(fieldError('email', 'is already a member'));
  });

  it('concurrent adds of one user: one 201, the rest 422', async () => {
    const { admin, base } = await setup();
    const member = await t.fixtures.user();
    const results = await Promise.all(
      Array.from({ length: 6 }, () =>
        t.http().post(base).set(admin.auth).send({ email: member.user.email, role: 'view' }),
      ),
    );
    expect(results.map((r) => r.status).sort()).toEqual([201, 422, 422, 422, 422, 422]);
  });

  it('PUT changes a role; DELETE removes a member', async () => {
    const { admin, base, org } = await setup();
    const member = await t.fixtures.user();
    await t.fixtures.addMember(org, member, 'view');
    const res = await t
      .http()
      .put(`${base}/${member.user.email}`)
      .set(admin.auth)
      .send({ role: 'admin' })
      .expect(200);
    expect(res.body.data.role).toBe('admin');
    await t.http().put(`${base}/${member.user.email}`).set(admin.auth).send({ role: 'x' }).expect(422);
    await t.http().delete(`${base}/${member.user.email}`).set(admin.auth).expect(204);
    await t.http().get(`/api/orgs/${org}/products`).set(member.auth).expect(404, NOT_FOUND);
    await t.http().delete(`${base}/${member.user.email}`).set(admin.auth).expect(404, NOT_FOUND);
    await t
      .http()
      .put(`${base}/nobody@example.com`)
      .set(admin.auth)
      .send({ role: 'view' })
      .expect(404, NOT_FOUND);
  });

  it('the last admin can be neither removed nor demoted (409)', async () => {
    const { admin, base, org } = await setup();
    const demote = await t
      .http()
      .put(`${base}/${admin.user.email}`)
      .set(admin.auth)
      .send({ role: 'view' })
      .expect(409);
    expect(demote.body).toEqual(detail(expect.stringContaining('admin')));
    await t.http().delete(`${base}/${admin.user.email}`).set(admin.auth).expect(409);
    const second = await t.fixtures.user();
    await t.fixtures.addMember(org, second, 'admin');
    await t.http().put(`${base}/${admin.user.email}`).set(admin.auth).send({ role: 'manage' }).expect(200);
    await t.http().delete(`${base}/${second.user.email}`).set(second.auth).expect(409);
  });

  it('two admins demoting each other at once: one stays admin', async () => {
    const { admin, base, org } = await setup();
    const second = await t.fixtures.user();
    await t.fixtures.addMember(org, second, 'admin');
    const results = await Promise.all([
      t.http().put(`${base}/${second.user.email}`).set(admin.auth).send({ role: 'view' }),
      t.http().put(`${base}/${admin.user.email}`).set(second.auth).send({ role: 'view' }),
    ]);
    // The loser either passed the guard as an admin and then met the lock (409), or arrived after its own
    // demotion and is no longer an admin (403); either way exactly one demotion happens.
    const statuses = results.map((r) => r.status).sort();
    expect([
      [200, 403],
      [200, 409],
    ]).toContainEqual(statuses);
    const [{ count }] = await t.db.query(
      `SELECT count(*)::int AS count FROM org_memberships m JOIN orgs o ON o.id = m.org_id
        WHERE o.name = $1 AND m.role = 'admin'`,
      [org],
    );
    expect(count).toBe(1);
  });

  describe('roles', () => {
    let admin: TestUser;
    let base: string;
    let org: string;
    beforeAll(async () => {
      ({ admin, base, org } = await setup());
    });

    it.each(['view', 'manage'] as const)('%s may list but not add, change or remove', async (role) => {
      const member = await t.fixtures.user();
      const target = await t.fixtures.user();
      await t.fixtures.addMember(org, member, role);
      await t.http().get(base).set(member.auth).expect(200);
      await t.http().get(`${base}/${admin.user.email}`).set(member.auth).expect(200);
      await t
        .http()
        .post(base)
        .set(member.auth)
        .send({ email: target.user.email, role: 'view' })
        .expect(403, NOT_FOUND);
      await t
        .http()
        .put(`${base}/${admin.user.email}`)
        .set(member.auth)
        .send({ role: 'view' })
        .expect(403, NOT_FOUND);
      await t.http().delete(`${base}/${admin.user.email}`).set(member.auth).expect(403, NOT_FOUND);
    });

    it('outsiders: 404 on every call', async () => {
      const outsider = await t.fixtures.user();
      await t.http().get(base).set(outsider.auth).expect(404, NOT_FOUND);
      await t.http().get(`${base}/${admin.user.email}`).set(outsider.auth).expect(404, NOT_FOUND);
      await t.http().get(`${base}/${outsider.user.email}`).set(outsider.auth).expect(404, NOT_FOUND);
      await t
        .http()
        .post(base)
        .set(outsider.auth)
        .send({ email: outsider.user.email, role: 'admin' })
        .expect(404, NOT_FOUND);
    });
  });

  it('OpenAPI marks POST /api/orgs/{org_name}/users deprecated', async () => {
    const res = await t.http().get('/api/openapi.json').expect(200);
    expect(res.body.paths['/api/orgs/{org_name}/users'].post.deprecated).toBe(true);
  });
});
