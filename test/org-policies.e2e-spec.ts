import { totpCode } from '../src/auth/totp';
import { fieldError, FORBIDDEN, ROLE_TOO_LOW } from './support/contract-bodies';
import type { TestUser } from './support/fixtures';
import { eventually } from './support/eventually';
import { createTestApp, type TestApp } from './support/test-app';

const PASSWORD = 'correct horse battery staple';
const TWO_FACTOR_REQUIRED = {
  errors: {
    detail:
      'this organization requires two-factor sign-in: turn it on for your account (POST /api/users/me/two_factor) to work in it',
  },
};
const DEFAULTS = {
  require_two_factor: false,
  max_token_lifetime_days: null,
  allowed_token_scopes: ['all', 'read'],
  updated_at: null,
};

describe('organization policies: two-factor sign-in, token age and scopes', () => {
  // Two instances: a policy changed on one holds on the other from the next request on.
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    a = await createTestApp({ FLEETHUB_RATE_LIMIT_LOGIN_PER_MIN: '1000' });
    b = await createTestApp({ FLEETHUB_RATE_LIMIT_LOGIN_PER_MIN: '1000' }, { databaseUrl: a.databaseUrl });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  const policies = (org: string) => `/api/orgs/${org}/policies`;

  /** Turns two-factor sign-in on for `who` (through the API, as a user would). */
  async function enrol(who: TestUser): Promise<void> {
    const secret = (await a.http().post('/api/users/me/two_factor').set(who.auth).expect(200)).body.data
      .secret as string;
    await a
      .http()
      .post('/api/users/me/two_factor/confirm')
      .set(who.auth)
      .send({ code: totpCode(secret, Date.now() - 30_000) })
      .expect(200);
  }

  async function orgWithMember(role: 'view' | 'manage' | 'admin' = 'view') {
    const admin = await a.fixtures.user({ password: PASSWORD });
    const org = await a.fixtures.org(admin);
    const product = await a.fixtures.product(admin, org);
    const member = await a.fixtures.user({ password: PASSWORD });
    await a.fixtures.addMember(org, member, role);
    return { admin, org, product, member };
  }

  it('defaults until changed; any member reads them, only an admin changes them, with every value checked', async () => {
    const { admin, org, member } = await orgWithMember('manage');
    expect((await a.http().get(policies(org)).set(member.auth).expect(200)).body).toEqual({ data: DEFAULTS });
    await a
      .http()
      .patch(policies(org))
      .set(member.auth)
      .send({ max_token_lifetime_days: 30 })
      .expect(403)
      .expect(ROLE_TOO_LOW);
    // Nothing sent, nothing changed.
    expect((await a.http().patch(policies(org)).set(admin.auth).send({}).expect(200)).body).toEqual({
      data: DEFAULTS,
    });
    for (const [body, field] of [
      [{ max_token_lifetime_days: 0 }, 'max_token_lifetime_days'],
      [{ max_token_lifetime_days: 3651 }, 'max_token_lifetime_days'],
      [{ max_token_lifetime_days: 1.5 }, 'max_token_lifetime_days'],
      [{ max_token_lifetime_days: '30' }, 'max_token_lifetime_days'],
      [{ allowed_token_scopes: [] }, 'allowed_token_scopes'],
      [{ allowed_token_scopes: ['admin'] }, 'allowed_token_scopes'],
      [{ allowed_token_scopes: 'read' }, 'allowed_token_scopes'],
      [{ require_two_factor: 'yes' }, 'require_two_factor'],
      [{ require_two_factor: null }, 'require_two_factor'],
      [{ color: 'blue' }, 'color'],
    ] as const) {
      const res = await a.http().patch(policies(org)).set(admin.auth).send(body).expect(422);
      expect(Object.keys((res.body as { errors: object }).errors)).toEqual([field]);
    }
    // An admin without two-factor sign-in cannot require it (it would lock itself out).
    await a
      .http()
      .patch(policies(org))
      .set(admin.auth)
      .send({ require_two_factor: true })
      .expect(422)
      .expect(
        fieldError(
          'require_two_factor',
          'can be turned on only by an admin whose own two-factor sign-in is on',
        ),
      );
    const changed = await a
      .http()
      .patch(policies(org))
      .set(admin.auth)
      .send({ max_token_lifetime_days: 90, allowed_token_scopes: ['read', 'all', 'read'] })
      .expect(200);
    expect(changed.body.data).toEqual({
      require_two_factor: false,
      max_token_lifetime_days: 90,
      allowed_token_scopes: ['all', 'read'],
      updated_at: expect.any(String),
    });
    // Only what is sent changes; null lifts the age limit.
    const lifted = await a
      .http()
      .patch(policies(org))
      .set(admin.auth)
      .send({ max_token_lifetime_days: null })
      .expect(200);
    expect(lifted.body.data.allowed_token_scopes).toEqual(['all', 'read']);
    expect(lifted.body.data.max_token_lifetime_days).toBeNull();
    const audit = await a.http().get(`/api/orgs/${org}/audit_logs`).set(admin.auth).expect(200);
    expect(
      (audit.body.data as { action: string; details: object }[])
        .filter((e) => e.action === 'org.policy_update')
        .map((e) => e.details),
    ).toEqual([
      { max_token_lifetime_days: null },
      { max_token_lifetime_days: 90, allowed_token_scopes: ['read', 'all', 'read'] },
    ]);
  });

  it('two-factor required: a member without it is refused in the organization (and only there) until it turns it on', async () => {
    const { admin, org, product, member } = await orgWithMember('view');
    const device = await a.fixtures.device(admin, org, product);
    await enrol(admin);
    await a.http().patch(policies(org)).set(admin.auth).send({ require_two_factor: true }).expect(200);

    // The next request, on either instance: every route of the organization, the short device routes too.
    for (const app of [a, b]) {
      await app
        .http()
        .get(`/api/orgs/${org}/products`)
        .set(member.auth)
        .expect(403)
        .expect(TWO_FACTOR_REQUIRED);
      await app
        .http()
        .get(`/api/orgs/${org}/products/${product}/devices`)
        .set(member.auth)
        .expect(403)
        .expect(TWO_FACTOR_REQUIRED);
      await app.http().get(`/api/devices/${device}`).set(member.auth).expect(403).expect(TWO_FACTOR_REQUIRED);
    }
    // Its own account still works: it can set up what is missing. Another organization is not concerned.
    await a.http().get('/api/users/me').set(member.auth).expect(200);
    const own = await a.fixtures.org(member);
    await a.http().get(`/api/orgs/${own}/products`).set(member.auth).expect(200);
    // A browser session is refused as a token is.
    const session = await a
      .http()
      .post('/api/session')
      .send({ email: member.user.email, password: PASSWORD })
      .expect(201);
    const cookie = (session.headers['set-cookie'] as unknown as string[])[0].split(';')[0];
    await a
      .http()
      .get(`/api/orgs/${org}/products`)
      .set('Cookie', cookie)
      .expect(403)
      .expect(TWO_FACTOR_REQUIRED);

    const listed = await a
      .http()
      .get(`${policies(org)}/members`)
      .set(admin.auth)
      .expect(200);
    expect(listed.body.data).toEqual(
      [
        { email: admin.user.email, name: admin.user.name, role: 'admin', two_factor: true, compliant: true },
        {
          email: member.user.email,
          name: member.user.name,
          role: 'view',
          two_factor: false,
          compliant: false,
        },
      ].sort((x, y) => x.email.localeCompare(y.email)),
    );
    await a
      .http()
      .get(`${policies(org)}/members`)
      .set(member.auth)
      .expect(403);

    await enrol(member);
    await b.http().get(`/api/orgs/${org}/products`).set(member.auth).expect(200);
    await a.http().get(`/api/devices/${device}`).set(member.auth).expect(200);
    const after = await a
      .http()
      .get(`${policies(org)}/members`)
      .set(admin.auth)
      .expect(200);
    expect((after.body.data as { compliant: boolean }[]).every((m) => m.compliant)).toBe(true);

    // Lifted: a member that turns two-factor off is welcome again.
    await a.http().patch(policies(org)).set(admin.auth).send({ require_two_factor: false }).expect(200);
    const other = await a.fixtures.user();
    await a.fixtures.addMember(org, other, 'view');
    await a.http().get(`/api/orgs/${org}/products`).set(other.auth).expect(200);
  });

  it('token scopes: a token of a scope the organization does not accept is refused there; a browser session is not a token', async () => {
    const { admin, org, member } = await orgWithMember('manage');
    await a
      .http()
      .patch(policies(org))
      .set(admin.auth)
      .send({ allowed_token_scopes: ['read'] })
      .expect(200);
    await a
      .http()
      .get(`/api/orgs/${org}/products`)
      .set(member.auth)
      .expect(403)
      .expect({
        errors: { detail: 'this organization accepts personal access tokens with scope read only' },
      });
    const reader = await a.fixtures.token(member.user, { scope: 'read' });
    await b.http().get(`/api/orgs/${org}/products`).set('Authorization', `Bearer ${reader}`).expect(200);
    // A read token still cannot change anything (the scope's own rule comes first).
    await a
      .http()
      .post(`/api/orgs/${org}/products`)
      .set('Authorization', `Bearer ${reader}`)
      .send({ name: 'nope' })
      .expect(403)
      .expect(FORBIDDEN);
    const session = await a
      .http()
      .post('/api/session')
      .send({ email: member.user.email, password: PASSWORD })
      .expect(201);
    const cookie = (session.headers['set-cookie'] as unknown as string[])[0].split(';')[0];
    await a.http().get(`/api/orgs/${org}/products`).set('Cookie', cookie).expect(200);
  });

  it('token age: a token created longer ago than the organization allows is refused there; a new one works', async () => {
    const { admin, org, member } = await orgWithMember('view');
    await a.http().patch(policies(org)).set(admin.auth).send({ max_token_lifetime_days: 7 }).expect(200);
    const old = await a.fixtures.token(member.user);
    await a.db.query(
      `UPDATE access_tokens SET inserted_at = now() - interval '8 days' WHERE user_id = $1 AND id = (
         SELECT max(id) FROM access_tokens WHERE user_id = $1)`,
      [member.user.id],
    );
    await a
      .http()
      .get(`/api/orgs/${org}/products`)
      .set('Authorization', `Bearer ${old}`)
      .expect(403)
      .expect({
        errors: {
          detail: 'this organization accepts personal access tokens up to 7 days old: create a new token',
        },
      });
    await a.http().get('/api/users/me').set('Authorization', `Bearer ${old}`).expect(200);
    await a.http().get(`/api/orgs/${org}/products`).set(member.auth).expect(200);
    await a.http().patch(policies(org)).set(admin.auth).send({ max_token_lifetime_days: 30 }).expect(200);
    await b.http().get(`/api/orgs/${org}/products`).set('Authorization', `Bearer ${old}`).expect(200);
  });

  // Sign-ins visible and revocable: where tokens were used; an admin ends a member's sessions and tokens.
  it('tokens say when and from where they were last used', async () => {
    const who = await a.fixtures.user();
    await a.http().get('/api/users/me').set(who.auth).expect(200);
    const listed = await eventually(
      async () =>
        (await a.http().get('/api/users/me/tokens').set(who.auth).expect(200)).body.data as {
          last_used_at: string | null;
          last_used_address: string | null;
        }[],
      (tokens) => tokens[0]?.last_used_address != null,
    );
    expect(listed[0].last_used_address).toMatch(/127\.0\.0\.1$/);
    expect(listed[0].last_used_at).not.toBeNull();
  });

  it('every session and token of the member ends on every instance; the member stays; audited', async () => {
    const admin = await a.fixtures.user();
    const org = await a.fixtures.org(admin);
    const member = await a.fixtures.user({ password: PASSWORD });
    await a.fixtures.addMember(org, member, 'manage');
    const second = await a.fixtures.token(member.user, { scope: 'read' });
    const session = await a
      .http()
      .post('/api/session')
      .send({ email: member.user.email, password: PASSWORD })
      .expect(201);
    const cookie = (session.headers['set-cookie'] as unknown as string[])[0].split(';')[0];
    // Cached on both instances first: the end must reach their caches.
    for (const app of [a, b]) {
      await app.http().get('/api/users/me').set(member.auth).expect(200);
      await app.http().get('/api/users/me').set('Authorization', `Bearer ${second}`).expect(200);
      await app.http().get('/api/users/me').set('Cookie', cookie).expect(200);
    }
    const credentials = `/api/orgs/${org}/users/${member.user.email.toUpperCase()}/credentials`;
    await a.http().delete(credentials).set(member.auth).expect(403).expect(ROLE_TOO_LOW);
    const ended = await a.http().delete(credentials).set(admin.auth).expect(200);
    expect(ended.body).toEqual({ data: { sessions_ended: 1, tokens_revoked: 2 } });
    for (const app of [a, b]) {
      await app.http().get('/api/users/me').set(member.auth).expect(401);
      await app.http().get('/api/users/me').set('Authorization', `Bearer ${second}`).expect(401);
      await app.http().get('/api/users/me').set('Cookie', cookie).expect(401);
    }
    // Still a member, and it can sign in again.
    const members = await a.http().get(`/api/orgs/${org}/users`).set(admin.auth).expect(200);
    expect((members.body.data as { email: string }[]).map((m) => m.email)).toContain(member.user.email);
    await a.http().post('/api/users/auth').send({ email: member.user.email, password: PASSWORD }).expect(200);
    await a
      .http()
      .delete(`/api/orgs/${org}/users/nobody@example.com/credentials`)
      .set(admin.auth)
      .expect(404);
    const audit = await a.http().get(`/api/orgs/${org}/audit_logs`).set(admin.auth).expect(200);
    expect(
      (audit.body.data as { action: string; target_id: string; details: object }[]).find(
        (e) => e.action === 'member.credentials_end',
      ),
    ).toMatchObject({ target_id: member.user.email, details: { sessions_ended: 1, tokens_revoked: 2 } });
  });
});
