import { totpCode } from '../src/auth/totp';
import { TestIdentityProvider } from './support/oidc-provider';
import { createTestApp, type TestApp } from './support/test-app';

const PUBLIC_URL = 'https://hub.example.com';
const CLIENT_ID = 'fleethub';
const CLIENT_SECRET = 'test-client-secret-0123456789';

/** The `Set-Cookie` values of a response, `name=value` only. */
const setCookies = (res: { headers: Record<string, unknown> }) =>
  ((res.headers['set-cookie'] as string[] | undefined) ?? []).map((c) => c.split(';')[0]);

describe('single sign-on with OpenID Connect (against a real provider started by the test)', () => {
  let idp: TestIdentityProvider;
  let t: TestApp;
  let creating: TestApp;
  beforeAll(async () => {
    idp = new TestIdentityProvider(CLIENT_ID, CLIENT_SECRET, `${PUBLIC_URL}/auth/oidc/callback`);
    await idp.start();
    const env = {
      FLEETHUB_PUBLIC_URL: PUBLIC_URL,
      FLEETHUB_OIDC_ISSUER: idp.issuerUrl,
      FLEETHUB_OIDC_CLIENT_ID: CLIENT_ID,
      FLEETHUB_OIDC_CLIENT_SECRET: CLIENT_SECRET,
      FLEETHUB_OIDC_NAME: 'Test IdP',
    };
    t = await createTestApp(env);
    creating = await createTestApp(
      { ...env, FLEETHUB_OIDC_CREATE_USERS: 'true' },
      { databaseUrl: t.databaseUrl },
    );
  });
  afterAll(async () => {
    await creating?.close();
    await t?.close();
    await idp?.stop();
  });

  /** Start on fleethub, sign in at the provider as `login`, then the callback: its answer and the cookies it set. */
  async function singleSignOn(app: TestApp, login: string) {
    const start = await app.http().get('/auth/oidc/start').expect(302);
    const stateCookie = setCookies(start).find((c) => c.startsWith('fleethub_oidc_state='))!;
    const back = await idp.signIn(start.headers.location, login);
    const callback = () => app.http().get(`/auth/oidc/callback${back.search}`).set('Cookie', stateCookie);
    const res = await callback();
    return { res, back, stateCookie, callback };
  }

  async function sessionEmail(app: TestApp, res: { headers: Record<string, unknown> }): Promise<string> {
    const session = setCookies(res).find((c) => c.startsWith('fleethub_session=') && c.length > 20)!;
    const shown = await app.http().get('/api/session').set('Cookie', session).expect(200);
    return (shown.body.data as { email: string }).email;
  }

  it('says whether it is on', async () => {
    expect((await t.http().get('/api/auth/single_sign_on').expect(200)).body).toEqual({
      data: { enabled: true, name: 'Test IdP', start_url: '/auth/oidc/start' },
    });
  });

  it('the start page sends the browser to the provider with PKCE (S256), a state and a nonce', async () => {
    const start = await t.http().get('/auth/oidc/start').expect(302);
    const url = new URL(start.headers.location);
    expect(url.origin).not.toBe(new URL(PUBLIC_URL).origin);
    expect(url.searchParams.get('client_id')).toBe(CLIENT_ID);
    expect(url.searchParams.get('response_type')).toBe('code');
    expect(url.searchParams.get('redirect_uri')).toBe(`${PUBLIC_URL}/auth/oidc/callback`);
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    expect(url.searchParams.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(url.searchParams.get('state')).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    expect(url.searchParams.get('nonce')).toMatch(/^[A-Za-z0-9_-]{20,}$/);
    expect(url.searchParams.get('scope')).toBe('openid email profile');
    const cookie = (start.headers['set-cookie'] as unknown as string[]).find((c) =>
      c.startsWith('fleethub_oidc_state='),
    )!;
    expect(cookie).toContain(`fleethub_oidc_state=${url.searchParams.get('state')};`);
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Lax/);
  });

  it('a verified email signs in the account with that email, which is linked from then on', async () => {
    const ada = await t.fixtures.user();
    idp.accounts.set('ada-sub', { email: ada.user.email.toUpperCase(), email_verified: true, name: 'Ada' });
    const { res } = await singleSignOn(t, 'ada-sub');
    expect(res.status).toBe(302);
    expect(res.headers.location).toBe('/');
    const session = (res.headers['set-cookie'] as unknown as string[]).find((c) =>
      c.startsWith('fleethub_session='),
    )!;
    expect(session).toMatch(/HttpOnly; SameSite=Strict; Secure/);
    expect(await sessionEmail(t, res)).toBe(ada.user.email);
    // Linked by subject: a later email change at the provider still signs in the same account.
    idp.accounts.set('ada-sub', { email: 'ada.new@example.com', email_verified: true });
    expect(await sessionEmail(t, (await singleSignOn(t, 'ada-sub')).res)).toBe(ada.user.email);
  });

  it('a replayed state (the same callback again) signs nobody in', async () => {
    const bea = await t.fixtures.user();
    idp.accounts.set('bea-sub', { email: bea.user.email, email_verified: true });
    const { res, callback } = await singleSignOn(t, 'bea-sub');
    expect(res.status).toBe(302);
    const again = await callback();
    expect(again.status).toBe(400);
    expect(again.text).toContain(
      'This sign-in has expired, was already used, or was started in another browser.',
    );
    expect(setCookies(again).some((c) => c.startsWith('fleethub_session=') && c.length > 20)).toBe(false);
  });

  it('a state from another browser (no cookie, or another cookie) signs nobody in', async () => {
    const cy = await t.fixtures.user();
    idp.accounts.set('cy-sub', { email: cy.user.email, email_verified: true });
    const start = await t.http().get('/auth/oidc/start').expect(302);
    const back = await idp.signIn(start.headers.location, 'cy-sub');
    const noCookie = await t.http().get(`/auth/oidc/callback${back.search}`).expect(400);
    expect(noCookie.text).toContain('started in another browser');
  });

  it('a forged ID token or one for another audience is refused', async () => {
    const dee = await t.fixtures.user();
    idp.accounts.set('dee-sub', { email: dee.user.email, email_verified: true });
    try {
      for (const tampering of ['forged', 'wrong_audience'] as const) {
        idp.tampering = tampering;
        const { res } = await singleSignOn(t, 'dee-sub');
        expect(res.status).toBe(400);
        expect(res.text).toContain('answer could not be verified, so nobody was signed in');
        expect(setCookies(res).some((c) => c.startsWith('fleethub_session=') && c.length > 20)).toBe(false);
      }
    } finally {
      idp.tampering = 'none';
    }
    expect((await singleSignOn(t, 'dee-sub')).res.status).toBe(302);
  });

  it('an unverified email is refused; an unknown one too unless the operator lets it create accounts', async () => {
    const eve = await t.fixtures.user();
    idp.accounts.set('eve-sub', { email: eve.user.email, email_verified: false });
    const unverified = (await singleSignOn(t, 'eve-sub')).res;
    expect(unverified.status).toBe(403);
    expect(unverified.text).toContain('has not verified your email address');

    idp.accounts.set('new-sub', { email: 'newcomer@example.com', email_verified: true, name: 'New Comer' });
    const unknown = (await singleSignOn(t, 'new-sub')).res;
    expect(unknown.status).toBe(403);
    expect(unknown.text).toContain('No fleethub account uses your email address');
    const created = (await singleSignOn(creating, 'new-sub')).res;
    expect(created.status).toBe(302);
    expect(await sessionEmail(creating, created)).toBe('newcomer@example.com');
    const users: { name: string; password_hash: string | null }[] = await t.db.query(
      `SELECT name, password_hash FROM users WHERE email = 'newcomer@example.com'`,
    );
    expect(users).toEqual([{ name: 'New Comer', password_hash: null }]);
  });

  it('a single sign-on session meets an organization policy that requires two-factor sign-in', async () => {
    const admin = await t.fixtures.user();
    const org = await t.fixtures.org(admin);
    const secret = (await t.http().post('/api/users/me/two_factor').set(admin.auth).expect(200)).body.data
      .secret as string;
    await t
      .http()
      .post('/api/users/me/two_factor/confirm')
      .set(admin.auth)
      .send({ code: totpCode(secret, Date.now() - 30_000) })
      .expect(200);
    await t
      .http()
      .patch(`/api/orgs/${org}/policies`)
      .set(admin.auth)
      .send({ require_two_factor: true })
      .expect(200);
    const fay = await t.fixtures.user();
    await t.fixtures.addMember(org, fay, 'view');
    await t.http().get(`/api/orgs/${org}/products`).set(fay.auth).expect(403);
    idp.accounts.set('fay-sub', { email: fay.user.email, email_verified: true });
    const { res } = await singleSignOn(t, 'fay-sub');
    const session = setCookies(res).find((c) => c.startsWith('fleethub_session=') && c.length > 20)!;
    await t.http().get(`/api/orgs/${org}/products`).set('Cookie', session).expect(200);
  });
});

describe('single sign-on off', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t?.close());

  it('says so, and its pages answer 404 in words', async () => {
    expect((await t.http().get('/api/auth/single_sign_on').expect(200)).body).toEqual({
      data: { enabled: false, name: null, start_url: null },
    });
    const page = await t.http().get('/auth/oidc/start').expect(404);
    expect(page.text).toContain('Single sign-on is not configured on this server.');
  });
});
