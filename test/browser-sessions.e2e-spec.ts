import { createHash } from 'node:crypto';
import { TokenCache } from '../src/auth/token-cache';
import { detail, UNAUTHORIZED, NOT_FOUND } from './support/contract-bodies';
import { eventually } from './support/eventually';
import { type TestUser, unique } from './support/fixtures';
import { createTestApp, type TestApp } from './support/test-app';

const PASSWORD = 'correct horse battery staple';
const CSRF_REFUSED = detail('missing or invalid CSRF token');
const SECRET = /^[A-Za-z0-9_-]{43}$/;

interface Session {
  secret: string;
  /** The `Cookie` header a browser sends back. */
  cookie: { Cookie: string };
  csrf: { 'X-CSRF-Token': string };
  id: string;
}

const hashOf = (secret: string) => createHash('sha256').update(secret).digest();

async function user(t: TestApp): Promise<TestUser> {
  return t.fixtures.user({ password: PASSWORD });
}

async function signIn(t: TestApp, who: TestUser, headers: Record<string, string> = {}): Promise<Session> {
  const res = await t
    .http()
    .post('/api/session')
    .set(headers)
    .send({ email: who.user.email, password: PASSWORD })
    .expect(201);
  const cookie = (res.headers['set-cookie'] as unknown as string[])[0];
  const secret = /^fleethub_session=([^;]*);/.exec(cookie)![1];
  const rows: { id: string }[] = await t.db.query(`SELECT id FROM browser_sessions WHERE token_hash = $1`, [
    hashOf(secret),
  ]);
  return {
    secret,
    cookie: { Cookie: `fleethub_session=${secret}` },
    csrf: { 'X-CSRF-Token': (res.body as { data: { csrf_token: string } }).data.csrf_token },
    id: rows[0].id,
  };
}

const me = (t: TestApp, session: Session) => t.http().get('/api/users/me').set(session.cookie);
const orgCount = async (t: TestApp): Promise<number> =>
  Number((await t.db.query(`SELECT count(*) AS n FROM orgs`))[0].n);
const cacheKey = (session: Session) => `session:${hashOf(session.secret).toString('base64')}`;
const cachedOn = (t: TestApp, session: Session) => t.app.get(TokenCache).get(cacheKey(session)) !== undefined;
/** Makes the instance look the session up again on its next request. */
const forget = (t: TestApp, session: Session) => t.app.get(TokenCache).delete(cacheKey(session));

async function lastSeenAt(t: TestApp, session: Session): Promise<Date> {
  const rows = await t.db.query<{ last_seen_at: Date }[]>(
    `SELECT last_seen_at FROM browser_sessions WHERE id = $1`,
    [session.id],
  );
  return rows[0].last_seen_at;
}

describe('browser sessions', () => {
  // Two instances of the server on one database, as behind a load balancer.
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    a = await createTestApp();
    b = await createTestApp({}, { databaseUrl: a.databaseUrl });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  describe('sign-in', () => {
    it('answers the user and a CSRF token, and sets an HttpOnly, SameSite=Strict cookie (not Secure over http)', async () => {
      const ada = await user(a);
      const started = Date.now();
      const res = await a
        .http()
        .post('/api/session')
        .set('User-Agent', 'Mozilla/5.0 '.padEnd(400, 'x'))
        .send({ email: ada.user.email, password: PASSWORD })
        .expect(201);
      const cookies = res.headers['set-cookie'] as unknown as string[];
      expect(cookies).toHaveLength(1);
      const secret = /^fleethub_session=([^;]*);/.exec(cookies[0])![1];
      expect(secret).toMatch(SECRET);
      expect(cookies[0]).toBe(`fleethub_session=${secret}; Path=/; HttpOnly; SameSite=Strict`);
      expect(res.body).toEqual({
        data: {
          username: ada.user.username,
          email: ada.user.email,
          name: ada.user.name,
          csrf_token: expect.stringMatching(SECRET),
          expires_at: expect.any(String),
          idle_expires_at: expect.any(String),
        },
      });
      const { csrf_token, expires_at, idle_expires_at } = res.body.data as Record<string, string>;
      expect(csrf_token).not.toBe(secret);
      expect(Date.parse(expires_at) - started).toBeGreaterThanOrEqual(12 * 3600_000 - 5_000);
      expect(Date.parse(expires_at) - started).toBeLessThanOrEqual(12 * 3600_000 + 5_000);
      expect(Math.abs(Date.parse(idle_expires_at) - started - 3600_000)).toBeLessThan(5_000);

      // Stored by hash only, with what the account page shows.
      const rows: { user_id: string; user_agent: string; source_address: string }[] = await a.db.query(
        `SELECT user_id, user_agent, source_address FROM browser_sessions WHERE token_hash = $1`,
        [hashOf(secret)],
      );
      expect(rows).toEqual([
        {
          user_id: ada.user.id,
          user_agent: 'Mozilla/5.0 '.padEnd(255, 'x'),
          source_address: expect.any(String),
        },
      ]);
    });

    it('wrong credentials: the contract 401, no cookie; an unknown email answers the same', async () => {
      const ada = await user(a);
      for (const email of [ada.user.email, 'nobody@example.com']) {
        const res = await a.http().post('/api/session').send({ email, password: 'wrong password' });
        expect([res.status, res.body]).toEqual([401, UNAUTHORIZED]);
        expect(res.headers['set-cookie']).toBeUndefined();
      }
    });

    it('is refused from another site (login CSRF)', async () => {
      const ada = await user(a);
      for (const headers of [{ 'Sec-Fetch-Site': 'cross-site' }, { Origin: 'https://evil.example' }]) {
        const res = await a
          .http()
          .post('/api/session')
          .set(headers)
          .send({ email: ada.user.email, password: PASSWORD });
        expect([res.status, res.body]).toEqual([403, CSRF_REFUSED]);
        expect(res.headers['set-cookie']).toBeUndefined();
      }
    });
  });

  describe('the cookie', () => {
    it('authenticates reads; GET /api/session answers the user and the same CSRF token', async () => {
      const ada = await user(a);
      const session = await signIn(a, ada);
      await me(a, session).expect(200, {
        data: { username: ada.user.username, email: ada.user.email, name: ada.user.name },
      });
      const res = await a.http().get('/api/session').set(session.cookie).expect(200);
      expect(res.body.data).toMatchObject({
        username: ada.user.username,
        csrf_token: session.csrf['X-CSRF-Token'],
      });
      // Any other cookies beside it are fine.
      await a
        .http()
        .get('/api/users/me')
        .set('Cookie', `theme=dark; fleethub_session=${session.secret}; fleethub_csrf=x`)
        .expect(200);
    });

    it('GET /api/session without a session cookie, with an unknown one or with a bearer token only: 401', async () => {
      const ada = await user(a);
      await a.http().get('/api/session').expect(401, UNAUTHORIZED);
      await a
        .http()
        .get('/api/session')
        .set('Cookie', `fleethub_session=${'A'.repeat(43)}`)
        .expect(401, UNAUTHORIZED);
      await a.http().get('/api/session').set('Cookie', 'fleethub_session=short').expect(401, UNAUTHORIZED);
      await a.http().get('/api/session').set(ada.auth).expect(401, UNAUTHORIZED);
      await a
        .http()
        .get('/api/users/me')
        .set('Cookie', `fleethub_session=${'A'.repeat(43)}`)
        .expect(401, UNAUTHORIZED);
    });

    it('a POST, PATCH or DELETE without the CSRF token, or with a wrong one, is a 403 and changes nothing', async () => {
      const ada = await user(a);
      const session = await signIn(a, ada);
      const org = await a.fixtures.org(ada);
      const product = await a.fixtures.product(ada, org);
      const tokenRows: { id: string }[] = await a.db.query(
        `SELECT id FROM access_tokens WHERE user_id = $1`,
        [ada.user.id],
      );
      const showProduct = () =>
        a.http().get(`/api/orgs/${org}/products/${product}`).set(ada.auth).expect(200);
      const productBefore = (await showProduct()).body as unknown;
      const orgsBefore = await orgCount(a);
      for (const csrf of [
        {},
        { 'X-CSRF-Token': 'wrong' },
        { 'X-CSRF-Token': session.csrf['X-CSRF-Token'].slice(1) + 'A' },
      ]) {
        await a
          .http()
          .post('/api/orgs')
          .set(session.cookie)
          .set(csrf)
          .send({ name: unique('org') })
          .expect(403, CSRF_REFUSED);
        await a
          .http()
          .patch(`/api/orgs/${org}/products/${product}`)
          .set(session.cookie)
          .set(csrf)
          .send({ require_unique_firmware_version: 'false' })
          .expect(403, CSRF_REFUSED);
        await a
          .http()
          .delete(`/api/users/me/tokens/${tokenRows[0].id}`)
          .set(session.cookie)
          .set(csrf)
          .expect(403, CSRF_REFUSED);
      }
      expect(await orgCount(a)).toBe(orgsBefore);
      expect((await showProduct()).body).toEqual(productBefore);
      await a.http().get('/api/users/me').set(ada.auth).expect(200);
    });

    it('with the CSRF token, changes work', async () => {
      const ada = await user(a);
      const session = await signIn(a, ada);
      const org = await a.fixtures.org(ada);
      const product = await a.fixtures.product(ada, org);
      const name = unique('org');
      await a.http().post('/api/orgs').set(session.cookie).set(session.csrf).send({ name }).expect(201);
      await a
        .http()
        .patch(`/api/orgs/${org}/products/${product}`)
        .set(session.cookie)
        .set(session.csrf)
        .send({ require_unique_firmware_version: false })
        .expect(200)
        .expect((res) => expect(res.body.data.require_unique_firmware_version).toBe(false));
      const created = await a
        .http()
        .post('/api/users/me/tokens')
        .set(session.cookie)
        .set(session.csrf)
        .send({})
        .expect(201);
      await a
        .http()
        .delete(`/api/users/me/tokens/${created.body.data.id}`)
        .set(session.cookie)
        .set(session.csrf)
        .expect(204);
    });

    it('a change from another site is a 403 even with the CSRF token; Origin: null and this host are fine', async () => {
      const ada = await user(a);
      const session = await signIn(a, ada);
      const post = (headers: Record<string, string>) =>
        a
          .http()
          .post('/api/orgs')
          .set(session.cookie)
          .set(session.csrf)
          .set(headers)
          .send({ name: unique('org') });
      await post({ 'Sec-Fetch-Site': 'cross-site' }).expect(403, CSRF_REFUSED);
      await post({ Origin: 'https://evil.example' }).expect(403, CSRF_REFUSED);
      await post({ Origin: 'not a url' }).expect(403, CSRF_REFUSED);
      await post({ Origin: 'null', 'Sec-Fetch-Site': 'same-origin' }).expect(201);
      await post({ Host: 'fleet.example.com', Origin: 'https://fleet.example.com' }).expect(201);
      await post({ Host: 'fleet.example.com', Origin: 'https://fleet.example.com.evil.example' }).expect(403);
    });

    it('bearer tokens work as before: a cookie beside them is ignored and no CSRF token is needed', async () => {
      const ada = await user(a);
      const grace = await user(a);
      const graceSession = await signIn(a, grace);
      await a
        .http()
        .get('/api/users/me')
        .set(ada.auth)
        .set(graceSession.cookie)
        .expect(200)
        .expect((res) => expect(res.body.data.username).toBe(ada.user.username));
      await a
        .http()
        .post('/api/orgs')
        .set(ada.auth)
        .set(graceSession.cookie)
        .send({ name: unique('org') })
        .expect(201);
      await a
        .http()
        .post('/api/orgs')
        .set(ada.auth)
        .set('Cookie', `fleethub_session=${'A'.repeat(43)}`)
        .send({ name: unique('org') })
        .expect(201);
      // A bearer token that fails is refused, whatever cookie is beside it.
      await a
        .http()
        .get('/api/users/me')
        .set('Authorization', 'Bearer nhu_bad')
        .set(graceSession.cookie)
        .expect(401, UNAUTHORIZED);
    });
  });

  describe('ending a session', () => {
    it('sign-out: 204, the cookie is cleared and refused from then on, by every instance', async () => {
      const ada = await user(a);
      const session = await signIn(a, ada);
      await me(a, session).expect(200);
      await me(b, session).expect(200);
      expect([cachedOn(a, session), cachedOn(b, session)]).toEqual([true, true]);

      await a.http().delete('/api/session').set(session.cookie).expect(403, CSRF_REFUSED);
      await me(a, session).expect(200);

      const res = await a.http().delete('/api/session').set(session.cookie).set(session.csrf).expect(204);
      expect(res.headers['set-cookie']).toEqual([
        'fleethub_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0',
      ]);
      await me(a, session).expect(401, UNAUTHORIZED);
      await me(b, session).expect(401, UNAUTHORIZED);
      await a.http().get('/api/session').set(session.cookie).expect(401, UNAUTHORIZED);
      await b.http().delete('/api/session').set(session.cookie).set(session.csrf).expect(401, UNAUTHORIZED);
      expect(await a.db.query(`SELECT id FROM browser_sessions WHERE id = $1`, [session.id])).toEqual([]);
    });

    it('ended from the account page on another instance: the very next request to this one is a 401', async () => {
      const ada = await user(a);
      for (let round = 0; round < 5; round++) {
        const session = await signIn(a, ada);
        await me(a, session).expect(200);
        expect(cachedOn(a, session)).toBe(true);
        await b.http().delete(`/api/users/me/sessions/${session.id}`).set(ada.auth).expect(204);
        await me(a, session).expect(401, UNAUTHORIZED);
      }
    });

    it("lists the caller's live sessions with the current one marked; another user's session is a 404", async () => {
      const ada = await user(a);
      const grace = await user(a);
      const first = await signIn(a, ada, { 'User-Agent': 'first browser' });
      const second = await signIn(a, ada, { 'User-Agent': 'second browser' });
      const graces = await signIn(a, grace);

      const res = await a.http().get('/api/users/me/sessions').set(second.cookie).expect(200);
      expect(res.body).toEqual({
        data: expect.arrayContaining([
          expect.objectContaining({ id: first.id, user_agent: 'first browser', current: false }),
          expect.objectContaining({ id: second.id, user_agent: 'second browser', current: true }),
        ]),
      });
      expect(res.body.data).toHaveLength(2);
      expect(Object.keys(res.body.data[0]).sort()).toEqual([
        'current',
        'expires_at',
        'id',
        'idle_expires_at',
        'inserted_at',
        'last_seen_at',
        'source_address',
        'user_agent',
      ]);
      const listed = await a.http().get('/api/users/me/sessions').set(ada.auth).expect(200);
      expect(listed.body.data.map((s: { current: boolean }) => s.current)).toEqual([false, false]);

      await a.http().delete(`/api/users/me/sessions/${graces.id}`).set(ada.auth).expect(404, NOT_FOUND);
      await a.http().delete(`/api/users/me/sessions/nope`).set(ada.auth).expect(404, NOT_FOUND);
      await me(a, graces).expect(200);
      await a
        .http()
        .delete(`/api/users/me/sessions/${first.id}`)
        .set(second.cookie)
        .set(second.csrf)
        .expect(204);
      await a.http().delete(`/api/users/me/sessions/${first.id}`).set(ada.auth).expect(404, NOT_FOUND);
      await me(a, first).expect(401, UNAUTHORIZED);
      await me(a, second).expect(200);
    });

    it('deleting the user deletes their sessions', async () => {
      const ada = await user(a);
      const session = await signIn(a, ada);
      await a.db.query(`DELETE FROM users WHERE id = $1`, [ada.user.id]);
      expect(await a.db.query(`SELECT id FROM browser_sessions WHERE id = $1`, [session.id])).toEqual([]);
    });
  });

  describe('expiry', () => {
    it('idle: unused for FLEETHUB_SESSION_IDLE_MINUTES, the session ends; used, last_seen_at moves (once a minute)', async () => {
      const ada = await user(b);
      const idle = await signIn(b, ada);
      const used = await signIn(b, ada);
      await b.db.query(
        `UPDATE browser_sessions SET last_seen_at = now() - interval '61 minutes' WHERE id = $1`,
        [idle.id],
      );
      await b.db.query(
        `UPDATE browser_sessions SET last_seen_at = now() - interval '59 minutes' WHERE id = $1`,
        [used.id],
      );
      await me(b, idle).expect(401, UNAUTHORIZED);
      await me(b, used).expect(200);
      const lastSeen = await eventually(
        () => lastSeenAt(b, used),
        (at) => Date.now() - at.getTime() < 60_000,
      );
      expect(Date.now() - lastSeen.getTime()).toBeLessThan(60_000);
      // Used again within the minute: no write.
      await b.db.query(
        `UPDATE browser_sessions SET last_seen_at = now() - interval '30 seconds' WHERE id = $1`,
        [used.id],
      );
      const before = await lastSeenAt(b, used);
      forget(b, used);
      await me(b, used).expect(200);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(await lastSeenAt(b, used)).toEqual(before);
    });

    it('absolute: FLEETHUB_SESSION_MAX_HOURS after sign-in the session ends, however recently used; the next sign-in sweeps it', async () => {
      const ada = await user(b);
      const old = await signIn(b, ada);
      await b.db.query(
        `UPDATE browser_sessions SET inserted_at = now() - interval '12 hours 1 minute' WHERE id = $1`,
        [old.id],
      );
      await me(b, old).expect(401, UNAUTHORIZED);
      await b.http().get('/api/users/me/sessions').set(ada.auth).expect(200, { data: [] });
      await signIn(b, ada);
      expect(await b.db.query(`SELECT id FROM browser_sessions WHERE id = $1`, [old.id])).toEqual([]);
    });

    it('shorter limits from the configuration apply', async () => {
      const t = await createTestApp(
        { FLEETHUB_SESSION_IDLE_MINUTES: '5', FLEETHUB_SESSION_MAX_HOURS: '1' },
        { databaseUrl: a.databaseUrl },
      );
      try {
        const ada = await user(t);
        const started = Date.now();
        const session = await signIn(t, ada);
        const shown = await t.http().get('/api/session').set(session.cookie).expect(200);
        expect(Math.abs(Date.parse(shown.body.data.expires_at) - started - 3600_000)).toBeLessThan(5_000);
        expect(Math.abs(Date.parse(shown.body.data.idle_expires_at) - started - 300_000)).toBeLessThan(5_000);
        await t.db.query(
          `UPDATE browser_sessions SET last_seen_at = now() - interval '6 minutes' WHERE id = $1`,
          [session.id],
        );
        forget(t, session);
        await me(t, session).expect(401, UNAUTHORIZED);
      } finally {
        await t.close();
      }
    });
  });

  describe('behind https, with a strict login limit', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await createTestApp({
        FLEETHUB_PUBLIC_URL: 'https://fleet.example.com',
        FLEETHUB_RATE_LIMIT_LOGIN_PER_MIN: '2',
      });
    });
    afterAll(() => t?.close());

    it('the cookie is Secure, set and cleared', async () => {
      const ada = await user(t);
      const res = await t
        .http()
        .post('/api/session')
        .send({ email: ada.user.email, password: PASSWORD })
        .expect(201);
      const secret = (res.body as { data: { csrf_token: string } }).data.csrf_token;
      const cookie = (res.headers['set-cookie'] as unknown as string[])[0];
      expect(cookie).toMatch(
        /^fleethub_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Secure$/,
      );
      const out = await t
        .http()
        .delete('/api/session')
        .set('Cookie', cookie.split(';')[0])
        .set('X-CSRF-Token', secret)
        .expect(204);
      expect(out.headers['set-cookie']).toEqual([
        'fleethub_session=; Path=/; HttpOnly; SameSite=Strict; Secure; Max-Age=0',
      ]);
    });

    it('wrong passwords are rate limited like login, in the same per-account bucket', async () => {
      const ada = await user(t);
      const statuses: number[] = [];
      for (const path of ['/api/session', '/api/users/auth', '/api/session']) {
        statuses.push(
          (await t.http().post(path).send({ email: ada.user.email, password: 'wrong password' })).status,
        );
      }
      expect(statuses).toEqual([401, 401, 429]);
      const limited = await t.http().post('/api/session').send({ email: ada.user.email, password: PASSWORD });
      expect(limited.status).toBe(429);
      expect(limited.headers['retry-after']).toBeDefined();
      expect(limited.headers['set-cookie']).toBeUndefined();
    });
  });
});
