import { DataSource } from 'typeorm';
import { TokensService } from '../src/auth/tokens.service';
import { InstanceBus } from '../src/database/instance-bus/instance-bus';
import { ShutdownState } from '../src/health/shutdown-state';
import { eventually } from './support/eventually';
import { createTestApp, type TestApp } from './support/test-app';
import {
  ANY_DETAIL,
  fieldError,
  fieldErrors,
  FORBIDDEN,
  MALFORMED_JSON,
  NOT_A_JSON_OBJECT,
  NOT_FOUND,
  UNAUTHORIZED,
} from './support/contract-bodies';

describe('foundation: auth, errors, organizations', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  describe('GET /api/users/me', () => {
    it('answers the token owner with username, email and name', async () => {
      const ada = await t.fixtures.user({ name: 'Ada Lovelace' });
      const res = await t.http().get('/api/users/me').set(ada.auth).expect(200);
      expect(res.body).toEqual({
        data: { username: ada.user.username, email: ada.user.email, name: 'Ada Lovelace' },
      });
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    });

    it('accepts the "token" scheme and any scheme case', async () => {
      const ada = await t.fixtures.user();
      await t.http().get('/api/users/me').set('Authorization', `token ${ada.token}`).expect(200);
      await t.http().get('/api/users/me').set('Authorization', `BEARER ${ada.token}`).expect(200);
    });

    it.each([
      ['no header', undefined],
      ['another scheme', 'Basic dXNlcjpwYXNz'],
      ['no token', 'Bearer '],
      ['not a token', 'Bearer hello'],
      ['a token with a broken checksum', 'Bearer nhu_1111111111111111111111111111111111111111111111111'],
    ])('401 with the contract body for %s', async (_label, header) => {
      const req = t.http().get('/api/users/me');
      if (header !== undefined) req.set('Authorization', header);
      const res = await req.expect(401);
      expect(res.body).toEqual(UNAUTHORIZED);
    });

    it('401 for a well-formed token nobody issued', async () => {
      const ada = await t.fixtures.user();
      const other = await t.fixtures.token(ada.user);
      // Gone without a trace (revoking through the API would keep the row).
      await t.db.query('DELETE FROM access_tokens WHERE user_id = $1', [ada.user.id]);
      const res = await t.http().get('/api/users/me').set('Authorization', `Bearer ${other}`).expect(401);
      expect(res.body).toEqual(UNAUTHORIZED);
    });

    it('401 for an expired token', async () => {
      const ada = await t.fixtures.user({ expiresAt: new Date(Date.now() - 1000) });
      await t.http().get('/api/users/me').set(ada.auth).expect(401, UNAUTHORIZED);
    });

    it('401 right after the token is revoked, even though it was cached', async () => {
      const ada = await t.fixtures.user();
      await t.http().get('/api/users/me').set(ada.auth).expect(200);
      expect(await t.app.get(TokensService).revoke(ada.token)).toBe(true);
      await t.http().get('/api/users/me').set(ada.auth).expect(401, UNAUTHORIZED);
    });

    it('stores only a SHA-256 hash of the token and records last use', async () => {
      const ada = await t.fixtures.user();
      await t.http().get('/api/users/me').set(ada.auth).expect(200);
      const rows: { token_hash: Buffer; last_used_at: Date | null }[] = await t.db.query(
        'SELECT token_hash, last_used_at FROM access_tokens WHERE user_id = $1',
        [ada.user.id],
      );
      expect(rows).toHaveLength(1);
      expect(rows[0].token_hash).toHaveLength(32);
      expect(rows[0].token_hash.toString('latin1')).not.toContain(ada.token);
      await waitFor(async () => {
        const [row] = await t.db.query('SELECT last_used_at FROM access_tokens WHERE user_id = $1', [
          ada.user.id,
        ]);
        return row.last_used_at !== null;
      });
    });
  });

  describe('token scope', () => {
    it('a read-scoped token may read but not change anything', async () => {
      const ada = await t.fixtures.user({ scope: 'read' });
      await t.http().get('/api/users/me').set(ada.auth).expect(200);
      await t.http().get('/api/orgs').set(ada.auth).expect(200);
      const res = await t.http().post('/api/orgs').set(ada.auth).send({ name: 'readonly-org' }).expect(403);
      expect(res.body).toEqual(FORBIDDEN);
      const orgs = await t.db.query("SELECT 1 FROM orgs WHERE name = 'readonly-org'");
      expect(orgs).toHaveLength(0);
    });
  });

  describe('POST /api/users/auth', () => {
    it('exchanges email and password for a working token', async () => {
      const ada = await t.fixtures.user({ password: 'correct horse battery' });
      const res = await t
        .http()
        .post('/api/users/auth')
        .send({ email: ada.user.email.toUpperCase(), password: 'correct horse battery', note: 'laptop' })
        .expect(200);
      expect(res.body.data).toEqual({
        username: ada.user.username,
        email: ada.user.email,
        name: ada.user.name,
        token: expect.stringMatching(/^nhu_[0-9A-Za-z]{40,50}$/),
      });
      await t.http().get('/api/users/me').set('Authorization', `Bearer ${res.body.data.token}`).expect(200);
    });

    it('401 for a wrong password and for an unknown email, with the same body', async () => {
      const ada = await t.fixtures.user({ password: 'correct horse battery' });
      const wrong = await t
        .http()
        .post('/api/users/auth')
        .send({ email: ada.user.email, password: 'nope-nope' });
      const unknown = await t
        .http()
        .post('/api/users/auth')
        .send({ email: 'ghost@example.com', password: 'x' });
      expect(wrong.status).toBe(401);
      expect(unknown.status).toBe(401);
      expect(wrong.body).toEqual(UNAUTHORIZED);
      expect(unknown.body).toEqual(wrong.body);
    });

    it('401 for a user without a password', async () => {
      const ada = await t.fixtures.user();
      await t
        .http()
        .post('/api/users/auth')
        .send({ email: ada.user.email, password: 'anything' })
        .expect(401);
    });

    it('422 naming missing fields', async () => {
      const res = await t.http().post('/api/users/auth').send({ email: 5 }).expect(422);
      expect(res.body).toEqual(fieldErrors({ email: ['must be a string'], password: ["can't be blank"] }));
    });

    it('rate limits repeated attempts on one account with 429 and Retry-After', async () => {
      const responses = [];
      for (let i = 0; i < 12; i++) {
        responses.push(
          await t.http().post('/api/users/auth').send({ email: 'target@example.com', password: 'guess' }),
        );
      }
      expect(responses.slice(0, 10).every((r) => r.status === 401)).toBe(true);
      const last = responses[responses.length - 1];
      expect(last.status).toBe(429);
      expect(last.body).toEqual(ANY_DETAIL);
      expect(Number(last.headers['retry-after'])).toBeGreaterThan(0);
    });
  });

  describe('POST /api/users/login (deprecated alias of /api/users/auth)', () => {
    it('exchanges email and password for a working token, answering as /auth does', async () => {
      const ada = await t.fixtures.user({ password: 'correct horse battery' });
      const res = await t
        .http()
        .post('/api/users/login')
        .send({ email: ada.user.email, password: 'correct horse battery', note: 'old cli' })
        .expect(200);
      expect(res.body).toEqual({
        data: {
          username: ada.user.username,
          email: ada.user.email,
          name: ada.user.name,
          token: expect.stringMatching(/^nhu_[0-9A-Za-z]{40,50}$/),
        },
      });
      await t.http().get('/api/users/me').set('Authorization', `Bearer ${res.body.data.token}`).expect(200);
      const tokens = await t.db.query("SELECT 1 FROM access_tokens WHERE user_id = $1 AND note = 'old cli'", [
        ada.user.id,
      ]);
      expect(tokens).toHaveLength(1);
    });

    it('401 with the same body for a wrong password and an unknown email', async () => {
      const ada = await t.fixtures.user({ password: 'correct horse battery' });
      const wrong = await t
        .http()
        .post('/api/users/login')
        .send({ email: ada.user.email, password: 'nope-nope' });
      const unknown = await t
        .http()
        .post('/api/users/login')
        .send({ email: 'nobody@example.com', password: 'whatever' });
      expect([wrong.status, unknown.status]).toEqual([401, 401]);
      expect(wrong.body).toEqual(UNAUTHORIZED);
      expect(unknown.body).toEqual(UNAUTHORIZED);
    });

    it('bad input: 422 naming the fields, 400 for a body that is not JSON', async () => {
      const res = await t.http().post('/api/users/login').send({ email: 5 }).expect(422);
      expect(res.body).toEqual(fieldErrors({ email: ['must be a string'], password: ["can't be blank"] }));
      await t
        .http()
        .post('/api/users/login')
        .set('Content-Type', 'application/json')
        .send('{"email":')
        .expect(400, MALFORMED_JSON);
    });

    it('is documented as deprecated and public', async () => {
      const res = await t.http().get('/api/openapi.json').expect(200);
      const alias = res.body.paths['/api/users/login'].post;
      expect(alias.deprecated).toBe(true);
      expect(alias.security).toBeUndefined();
      expect(res.body.paths['/api/users/auth'].post.deprecated).toBeUndefined();
    });
  });

  describe('organizations', () => {
    it('POST /api/orgs creates it with the caller as admin; GET lists it', async () => {
      const ada = await t.fixtures.user();
      const res = await t.http().post('/api/orgs').set(ada.auth).send({ name: 'acme-1' }).expect(201);
      expect(res.body).toEqual({ data: { name: 'acme-1' } });
      const list = await t.http().get('/api/orgs').set(ada.auth).expect(200);
      expect(list.body).toEqual({ data: [{ name: 'acme-1', role: 'admin' }] });
    });

    it('refuses a duplicate name and a bad name with 422', async () => {
      const ada = await t.fixtures.user();
      await t.http().post('/api/orgs').set(ada.auth).send({ name: 'dup-org' }).expect(201);
      const dup = await t.http().post('/api/orgs').set(ada.auth).send({ name: 'dup-org' }).expect(422);
      expect(dup.body).toEqual(fieldError('name', 'has already been taken'));
      const bad = await t
        .http()
        .post('/api/orgs')
        .set(ada.auth)
        .send({ name: 'no spaces allowed' })
        .expect(422);
      expect(bad.body.errors.name).toHaveLength(1);
      const blank = await t.http().post('/api/orgs').set(ada.auth).send({}).expect(422);
      expect(blank.body).toEqual(fieldError('name', "can't be blank"));
    });

    it('concurrent creates of one name: exactly one 201, the rest 422', async () => {
      const ada = await t.fixtures.user();
      const results = await Promise.all(
        Array.from({ length: 8 }, () => t.http().post('/api/orgs').set(ada.auth).send({ name: 'race-org' })),
      );
      expect(results.map((r) => r.status).sort()).toEqual([201, 422, 422, 422, 422, 422, 422, 422]);
      const [{ count }] = await t.db.query("SELECT count(*)::int AS count FROM orgs WHERE name = 'race-org'");
      expect(count).toBe(1);
    });
  });

  describe('errors', () => {
    it('unknown route: 404 with the constant body', async () => {
      const ada = await t.fixtures.user();
      const res = await t.http().get('/api/does-not-exist').set(ada.auth).expect(404);
      expect(res.body).toEqual(NOT_FOUND);
      await t.http().delete('/api/users/me').set(ada.auth).expect(404, NOT_FOUND);
    });

    it('malformed JSON: 400 detail', async () => {
      const ada = await t.fixtures.user();
      const res = await t
        .http()
        .post('/api/orgs')
        .set(ada.auth)
        .set('Content-Type', 'application/json')
        .send('{"name": ')
        .expect(400);
      expect(res.body).toEqual(MALFORMED_JSON);
    });

    it.each([['[1,2]'], ['"text"'], ['42'], ['null']])(
      'a JSON body that is not an object (%s): 400',
      async (body) => {
        const ada = await t.fixtures.user();
        const res = await t
          .http()
          .post('/api/orgs')
          .set(ada.auth)
          .set('Content-Type', 'application/json')
          .send(body)
          .expect(400);
        expect(res.body).toEqual(NOT_A_JSON_OBJECT);
      },
    );

    it('body over 1 MiB: 413 detail', async () => {
      const ada = await t.fixtures.user();
      const res = await t
        .http()
        .post('/api/orgs')
        .set(ada.auth)
        .send({ name: 'x'.repeat(1024 * 1024 + 10) })
        .expect(413);
      expect(res.body).toEqual(ANY_DETAIL);
    });

    it('every response carries x-request-id: the caller’s own, or a new one', async () => {
      const mine = await t.http().get('/healthz').set('x-request-id', 'abc-123').expect(200);
      expect(mine.headers['x-request-id']).toBe('abc-123');
      const fresh = await t.http().get('/api/nope').expect(404);
      expect(fresh.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
      const bad = await t.http().get('/healthz').set('x-request-id', 'bad id with spaces');
      expect(bad.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    });

    it('a non-UTF-8 or broken percent-encoded path never answers 500', async () => {
      const ada = await t.fixtures.user();
      const res = await t.http().get('/api/orgs/%E0%A4%A/products').set(ada.auth);
      expect(res.status).toBeLessThan(500);
    });
  });

  describe('health and OpenAPI', () => {
    it('GET /healthz and /readyz are public', async () => {
      await t.http().get('/healthz').expect(200, { status: 'ok' });
      const ready = await t.http().get('/readyz').expect(200);
      expect(ready.body.status).toBe('ok');
    });

    it("/readyz does not wait for a pool connection, and fails while the instance's own connection is down", async () => {
      const db = t.app.get(DataSource);
      const poolSize = (db.driver as unknown as { master: { options: { max: number } } }).master.options.max;
      // Every pool connection busy for 3 s: the readiness answer comes from the instance bus's heartbeat.
      const busy = Array.from({ length: poolSize }, () => db.query('SELECT pg_sleep(3)'));
      try {
        await new Promise((resolve) => setTimeout(resolve, 200));
        const started = Date.now();
        await t.http().get('/readyz').expect(200);
        expect(Date.now() - started).toBeLessThan(1500);
      } finally {
        await Promise.all(busy);
      }
      const bus = t.app.get(InstanceBus);
      await db.query('SELECT pg_terminate_backend($1)', [bus.listenerPid]);
      const down = await eventually(
        () => t.http().get('/readyz'),
        (res) => res.status === 503,
      );
      expect(down.headers['retry-after']).toBe('5');
      // The bus reconnects on its own; ready again once a heartbeat is answered.
      await eventually(
        () => t.http().get('/readyz'),
        (res) => res.status === 200,
      );
    });

    it('/readyz fails while the process drains for shutdown; /healthz stays up', async () => {
      const state = t.app.get(ShutdownState);
      state.draining = true;
      try {
        const res = await t.http().get('/readyz').expect(503);
        expect(res.body).toEqual(ANY_DETAIL);
        await t.http().get('/healthz').expect(200);
      } finally {
        state.draining = false;
      }
      await t.http().get('/readyz').expect(200);
    });

    it('serves the OpenAPI document, version 2.0.0, with bearer security and shared error schemas', async () => {
      const res = await t.http().get('/api/openapi.json').expect(200);
      expect(res.body.info.version).toBe('2.0.0');
      expect(res.body.components.securitySchemes.bearer_auth).toEqual(
        expect.objectContaining({ type: 'http', scheme: 'bearer' }),
      );
      const me = res.body.paths['/api/users/me'].get;
      expect(me.security).toEqual([{ bearer_auth: [] }]);
      expect(Object.keys(me.responses)).toEqual(expect.arrayContaining(['200', '401', '403', '404']));
      expect(res.body.components.schemas.DetailErrorBody).toBeDefined();
      expect(res.body.components.schemas.FieldErrorBody).toBeDefined();
      const login = res.body.paths['/api/users/auth'].post;
      expect(login.security).toBeUndefined();
    });

    it('serves Swagger UI at /api/docs without the internet', async () => {
      const res = await t.http().get('/api/docs').redirects(1).expect(200);
      expect(res.text).toContain('swagger-ui');
      await t.http().get('/api/docs/swagger-ui-bundle.js').expect(200);
    });
  });

  it('the database is reachable through the test app', async () => {
    expect(await t.app.get(DataSource).query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
  });
});

async function waitFor(check: () => Promise<boolean>, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}
