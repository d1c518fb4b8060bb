import { CapturedLog } from './support/captured-log';
import { runCliProcess } from './support/cli-process';
import { fieldError, NOT_FOUND } from './support/contract-bodies';
import type { TestUser } from './support/fixtures';
import { createTestApp, type TestApp } from './support/test-app';

const START = '/api/auth/cli_session';
const PASSWORD = 'correct horse battery staple';

interface Started {
  token: string;
  url: string;
  confirmation_code: string;
}

/** A page visit's CSRF cookie (`name=value`) and the hidden field's value. */
function csrfOf(res: { headers: Record<string, unknown>; text: string }): { cookie: string; field: string } {
  const setCookie = (res.headers['set-cookie'] as string[] | undefined) ?? [];
  const cookie = setCookie.map((c) => c.split(';')[0]).find((c) => c.startsWith('fleethub_csrf='));
  const field = /name="_csrf_token" value="([^"]+)"/.exec(res.text)?.[1];
  if (!cookie || !field) throw new Error('no CSRF cookie or field');
  return { cookie, field };
}

describe('sign-in for the CLI (POST /api/auth/cli_session and its page)', () => {
  // Two instances on one database: each step may reach either.
  let a: TestApp;
  let b: TestApp;
  let ada: TestUser;
  beforeAll(async () => {
    const env = { FLEETHUB_RATE_LIMIT_LOGIN_PER_MIN: '1000', FLEETHUB_PUBLIC_URL: 'https://hub.example.com' };
    a = await createTestApp(env);
    b = await createTestApp(env, { databaseUrl: a.databaseUrl });
    ada = await a.fixtures.user({ password: PASSWORD });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  const start = async (app: TestApp, body: object = { note: 'nh on laptop' }): Promise<Started> =>
    (await app.http().post(START).send(body).expect(200)).body.data as Started;
  const poll = (app: TestApp, token: string) => app.http().get(`${START}/${token}`);
  const visit = (app: TestApp, token: string) => app.http().get(`/auth/cli/${token}`);
  /** Visits the page, then submits its form with `form`; the answer must have `status`. */
  async function submit(app: TestApp, session: Started, form: Record<string, string>, status: number) {
    const csrf = csrfOf(await visit(app, session.token).expect(200));
    return app
      .http()
      .post(`/auth/cli/${session.token}`)
      .set('Cookie', csrf.cookie)
      .type('form')
      .send({ _csrf_token: csrf.field, decision: 'approve', ...form })
      .expect(status);
  }
  const approve = (app: TestApp, session: Started, status: number, form: Record<string, string> = {}) =>
    submit(
      app,
      session,
      {
        confirmation_code: session.confirmation_code,
        email: ada.user.email,
        password: PASSWORD,
        ...form,
      },
      status,
    );

  it('start, waiting, approval on the page, then the token once: across two instances', async () => {
    const session = await start(a);
    expect(session.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(session.confirmation_code).toMatch(/^\d{6}$/);
    expect(session.url).toBe(`https://hub.example.com/auth/cli/${session.token}`);
    await poll(b, session.token).expect(200, { data: { status: 'waiting' } });

    const page = await visit(b, session.token).expect(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.headers['cache-control']).toBe('no-store');
    const csp = page.headers['content-security-policy'];
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("form-action 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toMatch(/style-src 'sha256-[A-Za-z0-9+/=]+'/);
    expect(page.text).toContain('<label for="confirmation_code">');
    // The page never shows the code: the user types what the CLI shows.
    expect(page.text).not.toContain(session.confirmation_code);

    const approved = await approve(a, session, 200);
    expect(approved.text).toContain('Sign-in approved');

    const ready = await poll(b, session.token).expect(200);
    expect(ready.body).toEqual({ data: { status: 'ready', user_token: expect.stringMatching(/^nhu_/) } });
    const token = ready.body.data.user_token as string;
    const me = await a.http().get('/api/users/me').set('Authorization', `Bearer ${token}`).expect(200);
    expect(me.body.data.email).toBe(ada.user.email);
    const tokens = await a.http().get('/api/users/me/tokens').set(ada.auth).expect(200);
    expect(tokens.body.data).toContainEqual(
      expect.objectContaining({ note: 'nh on laptop', rendering: 'nerveshub' }),
    );

    // Single use: the token is never answered again, the page is gone.
    await poll(a, session.token).expect(404, NOT_FOUND);
    await poll(b, session.token).expect(404, NOT_FOUND);
    expect((await visit(a, session.token).expect(404)).text).toContain('This sign-in link is not valid');
  });

  it('two concurrent polls of an approved session: exactly one gets the token', async () => {
    const session = await start(a, {});
    await approve(b, session, 200);
    const answers = await Promise.all([
      poll(a, session.token),
      poll(b, session.token),
      poll(a, session.token),
    ]);
    expect(answers.map((r) => r.status).sort()).toEqual([200, 404, 404]);
    const rows: { note: string }[] = await a.db.query(
      `SELECT note FROM access_tokens WHERE user_id = $1 AND note = 'nerves_hub_cli'`,
      [ada.user.id],
    );
    expect(rows).toHaveLength(1);
  });

  it('a wrong code or password says so, announced, and uses one of the 5 attempts', async () => {
    const session = await start(a);
    const wrongCode = session.confirmation_code === '123456' ? '654321' : '123456';
    const res = await approve(a, session, 422, { confirmation_code: wrongCode });
    expect(res.text).toContain('role="alert"');
    expect(res.text).toContain('does not match the one the command-line tool shows. 4 attempts left.');
    expect(res.text).toContain('aria-invalid="true"');
    expect(res.text).toContain(`value="${ada.user.email}"`);
    const badPassword = await approve(b, session, 422, { password: 'wrong' });
    expect(badPassword.text).toContain('The email or password is incorrect. 3 attempts left.');
    const unknownUser = await approve(b, session, 422, { email: 'nobody@example.com' });
    expect(unknownUser.text).toContain('The email or password is incorrect. 2 attempts left.');
    await poll(a, session.token).expect(200, { data: { status: 'waiting' } });
    await approve(a, session, 200);
    await poll(a, session.token).expect(200);
  });

  it('brute force of the code: 30 concurrent guesses get 5 comparisons, then the session is closed', async () => {
    const session = await start(a);
    const csrf = csrfOf(await visit(a, session.token).expect(200));
    const guesses = Array.from({ length: 30 }, (_, i) => String(100_000 + i));
    const answers = await Promise.all(
      guesses.map((code, i) =>
        (i % 2 ? a : b)
          .http()
          .post(`/auth/cli/${session.token}`)
          .set('Cookie', csrf.cookie)
          .type('form')
          .send({
            _csrf_token: csrf.field,
            confirmation_code: code,
            email: ada.user.email,
            password: PASSWORD,
          }),
      ),
    );
    const compared = answers.filter((r) => r.status !== 404);
    expect(compared.map((r) => r.status)).toEqual(compared.map(() => 422));
    expect(compared.length).toBeLessThanOrEqual(5);
    const rows: { attempts: number; status: string }[] = await a.db.query(
      `SELECT attempts, status FROM cli_sessions WHERE confirmation_code = $1 AND note = 'nh on laptop'
        ORDER BY id DESC LIMIT 1`,
      [session.confirmation_code],
    );
    expect(rows[0].attempts).toBe(5);
    // Out of attempts: even the right code is refused, and the CLI's poll ends.
    if (!guesses.includes(session.confirmation_code)) {
      expect(rows[0].status).toBe('closed');
      await visit(a, session.token).expect(404);
      const late = await a
        .http()
        .post(`/auth/cli/${session.token}`)
        .set('Cookie', csrf.cookie)
        .type('form')
        .send({
          _csrf_token: csrf.field,
          confirmation_code: session.confirmation_code,
          email: ada.user.email,
          password: PASSWORD,
        })
        .expect(404);
      expect(late.text).toContain('This sign-in link is not valid');
      await poll(a, session.token).expect(404, NOT_FOUND);
    }
  });

  it('CSRF: no cookie, another value or another site is refused (403) without using an attempt', async () => {
    const session = await start(a);
    const csrf = csrfOf(await visit(a, session.token).expect(200));
    const form = {
      confirmation_code: session.confirmation_code,
      email: ada.user.email,
      password: PASSWORD,
      decision: 'approve',
    };
    const url = `/auth/cli/${session.token}`;
    const noCookie = await a
      .http()
      .post(url)
      .type('form')
      .send({ ...form, _csrf_token: csrf.field })
      .expect(403);
    expect(noCookie.text).toContain('This form has expired or was sent from another site');
    await a.http().post(url).set('Cookie', csrf.cookie).type('form').send(form).expect(403);
    await a
      .http()
      .post(url)
      .set('Cookie', csrf.cookie)
      .set('Origin', 'https://evil.example.com')
      .type('form')
      .send({ ...form, _csrf_token: csrf.field })
      .expect(403);
    await a
      .http()
      .post(url)
      .set('Cookie', csrf.cookie)
      .set('Sec-Fetch-Site', 'cross-site')
      .type('form')
      .send({ ...form, _csrf_token: csrf.field })
      .expect(403);
    const rows: { attempts: number }[] = await a.db.query(
      `SELECT attempts FROM cli_sessions WHERE confirmation_code = $1 ORDER BY id DESC LIMIT 1`,
      [session.confirmation_code],
    );
    expect(rows[0].attempts).toBe(0);
    await poll(a, session.token).expect(200, { data: { status: 'waiting' } });
  });

  it('deny closes the session; an expired one is gone for the page and the poll', async () => {
    const denied = await start(a);
    const res = await submit(a, denied, { decision: 'deny' }, 200);
    expect(res.text).toContain('Sign-in denied');
    await poll(a, denied.token).expect(404, NOT_FOUND);

    const expired = await start(a);
    await approve(a, expired, 200);
    await a.db.query(
      `UPDATE cli_sessions SET expires_at = now() - interval '1 second' WHERE status = 'approved'`,
    );
    await poll(b, expired.token).expect(404, NOT_FOUND);
    await visit(b, expired.token).expect(404);
  });

  it('bad input: unknown or malformed tokens are a constant 404, a bad note a 422', async () => {
    await poll(a, 'x'.repeat(43)).expect(404, NOT_FOUND);
    await poll(a, 'not a token').expect(404, NOT_FOUND);
    await visit(a, '%3Cscript%3E').expect(404);
    await a.http().post(START).send({ note: 42 }).expect(422, fieldError('note', 'must be a string'));
    await a.http().post(START).send([]).expect(400);
    // No body at all is fine (NervesHub's CLI may send none).
    await a.http().post(START).expect(200);
    const html = await a
      .http()
      .post(`/auth/cli/${'y'.repeat(43)}`)
      .type('form')
      .send('a=%ZZ&b');
    expect([400, 403, 404]).toContain(html.status);
  });
});

describe('sign-in sessions in the logs', () => {
  it('the session token of a path is never logged', async () => {
    const log = new CapturedLog();
    const t = await createTestApp({}, { logger: log.logger('info') });
    try {
      const session = (await t.http().post(START).send({}).expect(200)).body.data as Started;
      await t.http().get(`${START}/${session.token}`).expect(200);
      await t.http().get(`/auth/cli/${session.token}`).expect(200);
      await t.http().get(`/invitations/${session.token}`).expect(404);
      expect(log.text).toContain('/auth/cli/[redacted]');
      expect(log.text).toContain('/api/auth/cli_session/[redacted]');
      expect(log.text).toContain('/invitations/[redacted]');
      expect(log.text).not.toContain(session.token);
    } finally {
      await t.close();
    }
  });
});

describe("NervesHub's renderings: tags as lists for tokens of NervesHub's sign-in routes", () => {
  let t: TestApp;
  let ada: TestUser;
  let org: string;
  beforeAll(async () => {
    t = await createTestApp({ FLEETHUB_RATE_LIMIT_LOGIN_PER_MIN: '1000' });
    ada = await t.fixtures.user({ password: PASSWORD });
    org = await t.fixtures.org(ada);
    await t.fixtures.product(ada, org, 'p');
    await t.fixtures.device(ada, org, 'p', 'dev-tags', { tags: ['beta', 'lab'] });
    await t.fixtures.device(ada, org, 'p', 'dev-none', { tags: [] });
    await t
      .http()
      .post(`/api/orgs/${org}/products/p/scripts`)
      .set(ada.auth)
      .send({ name: 's1', text: 'IO.puts(1)', tags: ['x', 'y'] })
      .expect(201);
  });
  afterAll(() => t?.close());

  const login = async (route: 'auth' | 'login') =>
    (
      await t
        .http()
        .post(`/api/users/${route}`)
        .send({ email: ada.user.email, password: PASSWORD, note: route })
        .expect(200)
    ).body.data.token as string;
  const get = (token: string, path: string) =>
    t.http().get(path).set('Authorization', `Bearer ${token}`).expect(200);

  it("a users/auth token: the spec's comma-separated strings; a users/login token: lists", async () => {
    const spec = await login('auth');
    const nerveshub = await login('login');
    const devices = `/api/orgs/${org}/products/p/devices`;
    const scripts = `/api/orgs/${org}/products/p/scripts`;

    const specList = (await get(spec, devices)).body.data as { identifier: string; tags: unknown }[];
    expect(specList.find((d) => d.identifier === 'dev-tags')?.tags).toBe('beta,lab');
    expect(specList.find((d) => d.identifier === 'dev-none')?.tags).toBe('');
    expect((await get(spec, `${devices}/dev-tags`)).body.data.tags).toBe('beta,lab');
    expect((await get(spec, scripts)).body.data[0].tags).toBe('x,y');

    const nhList = (await get(nerveshub, devices)).body.data as { identifier: string; tags: unknown }[];
    expect(nhList.find((d) => d.identifier === 'dev-tags')?.tags).toEqual(['beta', 'lab']);
    expect(nhList.find((d) => d.identifier === 'dev-none')?.tags).toEqual([]);
    expect((await get(nerveshub, `${devices}/dev-tags`)).body.data.tags).toEqual(['beta', 'lab']);
    expect((await get(nerveshub, '/api/devices/dev-tags')).body.data.tags).toEqual(['beta', 'lab']);
    expect((await get(nerveshub, '/api/devices/dev-tags/scripts')).body.data[0].tags).toEqual(['x', 'y']);
    expect((await get(nerveshub, scripts)).body.data[0].tags).toEqual(['x', 'y']);
    // Writes answer in the token's rendering too.
    const updated = await t
      .http()
      .put(`${devices}/dev-tags`)
      .set('Authorization', `Bearer ${nerveshub}`)
      .send({ tags: ['qa'] })
      .expect(201);
    expect(updated.body.data.tags).toEqual(['qa']);

    const listed = (await get(spec, '/api/users/me/tokens')).body.data as {
      note: string;
      rendering: string;
    }[];
    expect(listed.find((x) => x.note === 'auth')?.rendering).toBe('fleethub');
    expect(listed.find((x) => x.note === 'login')?.rendering).toBe('nerveshub');
  });

  it('the token API mints either rendering; anything else is a 422', async () => {
    const created = await t
      .http()
      .post('/api/users/me/tokens')
      .set(ada.auth)
      .send({ rendering: 'nerveshub' })
      .expect(201);
    expect(created.body.data.rendering).toBe('nerveshub');
    const devices = (await get(created.body.data.token as string, '/api/devices/dev-none')).body.data;
    expect(devices.tags).toEqual([]);
    const plain = await t.http().post('/api/users/me/tokens').set(ada.auth).send({}).expect(201);
    expect(plain.body.data.rendering).toBe('fleethub');
    await t
      .http()
      .post('/api/users/me/tokens')
      .set(ada.auth)
      .send({ rendering: 'xml' })
      .expect(422, fieldError('rendering', 'is invalid'));
  });

  it('`fleethub tokens create --rendering nerveshub`', async () => {
    const env = { DATABASE_URL: t.databaseUrl, FLEETHUB_DATA_DIR: t.config.dataDir };
    const run = await runCliProcess(
      ['tokens', 'create', '--email', ada.user.email, '--rendering', 'nerveshub'],
      env,
    );
    expect(run.code).toBe(0);
    expect(run.stderr).toContain('rendering nerveshub');
    const token = run.stdout.trim().split('\n').pop()!;
    expect((await get(token, '/api/devices/dev-tags')).body.data.tags).toEqual(['qa']);
    const bad = await runCliProcess(
      ['tokens', 'create', '--email', ada.user.email, '--rendering', 'xml'],
      env,
    );
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('--rendering must be fleethub or nerveshub');
  }, 120_000);
});
