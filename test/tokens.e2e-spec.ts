import { hashToken } from '../src/auth/token-codec';
import { EVICTION_WAIT_MS, TokenCache } from '../src/auth/token-cache';
import { InstanceBus } from '../src/database/instance-bus/instance-bus';
import { runCliProcess } from './support/cli-process';
import { ANY_DETAIL, fieldError, FORBIDDEN, NOT_FOUND, UNAUTHORIZED } from './support/contract-bodies';
import { createTestApp, type TestApp } from './support/test-app';

const TOKENS = '/api/users/me/tokens';
const BAD_TIMESTAMP = 'must be an ISO 8601 date and time with a time zone, e.g. 2027-01-31T12:00:00Z';

const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });
const me = (app: TestApp, token: string) => app.http().get('/api/users/me').set(bearer(token));
/** Whether the instance would answer this token from its cache (no database lookup). */
const cached = (app: TestApp, token: string) =>
  app.app.get(TokenCache).get(hashToken(token).toString('base64')) !== undefined;

async function tokenId(app: TestApp, token: string): Promise<string> {
  const rows: { id: string }[] = await app.db.query(`SELECT id FROM access_tokens WHERE token_hash = $1`, [
    hashToken(token),
  ]);
  return rows[0].id;
}

/** Resolves once the instance's bus has answered a heartbeat sent from now on (it trusts its cache again). */
async function caughtUp(app: TestApp): Promise<void> {
  const bus = app.app.get(InstanceBus);
  const since = performance.now();
  while (bus.caughtUpAt < since) await new Promise((resolve) => setTimeout(resolve, 20));
}

/** Resolves the next time the instance's bus starts (`true`) or stops (`false`) listening. */
function nextBusState(app: TestApp, listening: boolean): Promise<void> {
  return new Promise((resolve) =>
    app.app.get(InstanceBus).onStateChange((state) => {
      if (state === listening) resolve();
    }),
  );
}

describe('personal access tokens', () => {
  // Two instances of the server on one database, as behind a load balancer.
  let a: TestApp;
  let b: TestApp;
  beforeAll(async () => {
    // Many refused tokens from one address here, on purpose: no failed-authentication limit.
    const env = { FLEETHUB_RATE_LIMIT_AUTH_FAILURES_PER_MIN: '0' };
    a = await createTestApp(env);
    b = await createTestApp(env, { databaseUrl: a.databaseUrl });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  describe('revocation reaches every instance before it returns', () => {
    it('`fleethub tokens revoke` (another process): the next request to either instance is a 401', async () => {
      const ada = await a.fixtures.user();
      await me(a, ada.token).expect(200);
      await me(b, ada.token).expect(200);
      expect([cached(a, ada.token), cached(b, ada.token)]).toEqual([true, true]);

      const run = await runCliProcess(['tokens', 'revoke', '--token', ada.token], {
        DATABASE_URL: a.databaseUrl,
        FLEETHUB_DATA_DIR: a.config.dataDir,
      });
      expect(run).toEqual({ code: 0, stdout: 'token revoked\n', stderr: '' });
      await me(a, ada.token).expect(401, UNAUTHORIZED);
      await me(b, ada.token).expect(401, UNAUTHORIZED);
    }, 60_000);

    it('DELETE on another instance: the very next request to this one is a 401, every time', async () => {
      const ada = await a.fixtures.user();
      for (let round = 0; round < 20; round++) {
        const token = await a.fixtures.token(ada.user);
        await me(a, token).expect(200);
        expect(cached(a, token)).toBe(true);
        await b
          .http()
          .delete(`${TOKENS}/${await tokenId(a, token)}`)
          .set(ada.auth)
          .expect(204);
        await me(a, token).expect(401, UNAUTHORIZED);
      }
    });

    it('a token may revoke itself; it is refused from then on', async () => {
      const ada = await a.fixtures.user();
      await me(b, ada.token).expect(200);
      await a
        .http()
        .delete(`${TOKENS}/${await tokenId(a, ada.token)}`)
        .set(ada.auth)
        .expect(204);
      await me(a, ada.token).expect(401, UNAUTHORIZED);
      await me(b, ada.token).expect(401, UNAUTHORIZED);
    });

    it('an instance whose listener went down forgets its cache: revocations it could not hear count, then and after', async () => {
      const bus = a.app.get(InstanceBus);
      const ada = await a.fixtures.user();
      const grace = await a.fixtures.user();
      await me(a, ada.token).expect(200);
      await me(a, grace.token).expect(200);
      expect([cached(a, ada.token), cached(a, grace.token)]).toEqual([true, true]);

      const down = nextBusState(a, false);
      const up = nextBusState(a, true);
      await a.db.query(`SELECT pg_terminate_backend($1)`, [bus.listenerPid]);
      await down;
      // Revoked behind the bus's back: no notification reaches anyone.
      await a.db.query(`UPDATE access_tokens SET revoked_at = now() WHERE token_hash = ANY($1)`, [
        [hashToken(ada.token), hashToken(grace.token)],
      ]);
      await me(a, ada.token).expect(401, UNAUTHORIZED);
      await up;
      await me(a, grace.token).expect(401, UNAUTHORIZED);

      const alan = await a.fixtures.user();
      await me(a, alan.token).expect(200);
      expect(cached(a, alan.token)).toBe(true);
    });

    it('a listener that stops answering without disconnecting stops trusting its cache before an unanswered revocation returns', async () => {
      const bus = a.app.get(InstanceBus);
      const ada = await a.fixtures.user();
      const token = await a.fixtures.token(ada.user);
      await me(a, token).expect(200);
      expect(cached(a, token)).toBe(true);
      const id = await tokenId(a, token);

      // The listener's backend is frozen: its connection stays open, nothing is delivered or answered.
      const pid = bus.listenerPid!;
      process.kill(pid, 'SIGSTOP');
      try {
        const started = performance.now();
        await b.http().delete(`${TOKENS}/${id}`).set(ada.auth).expect(204);
        expect(performance.now() - started).toBeGreaterThanOrEqual(EVICTION_WAIT_MS - 1);
        expect(bus.listening).toBe(true);
        await me(a, token).expect(401, UNAUTHORIZED);
      } finally {
        process.kill(pid, 'SIGCONT');
        await caughtUp(a);
      }
    });
  });

  describe('membership changes', () => {
    it('a demoted member gets 403 and a removed member 404 on the very next request, on every instance', async () => {
      const owner = await a.fixtures.user();
      const org = await a.fixtures.org(owner);
      const member = await a.fixtures.user();
      await a.fixtures.addMember(org, member, 'manage');
      const products = `/api/orgs/${org}/products`;
      await a.http().post(products).set(owner.auth).send({ name: 'gateway' }).expect(201);
      await a
        .http()
        .post(`${products}/gateway/devices`)
        .set(owner.auth)
        .send({ identifier: `d-${org}` });
      const device = `/api/devices/d-${org}`;
      for (const app of [a, b]) {
        await app.http().get(products).set(member.auth).expect(200);
        await app.http().get(device).set(member.auth).expect(200);
        expect(cached(app, member.token)).toBe(true);
      }

      await b
        .http()
        .put(`/api/orgs/${org}/users/${member.user.email}`)
        .set(owner.auth)
        .send({ role: 'view' })
        .expect(200);
      for (const app of [a, b]) {
        await app.http().post(products).set(member.auth).send({ name: 'sensor' }).expect(403, NOT_FOUND);
        await app.http().post(`${device}/upgrade`).set(member.auth).send({}).expect(403, NOT_FOUND);
        await app.http().get(products).set(member.auth).expect(200);
      }

      await a.http().delete(`/api/orgs/${org}/users/${member.user.email}`).set(owner.auth).expect(204);
      for (const app of [b, a]) {
        await app.http().get(products).set(member.auth).expect(404, NOT_FOUND);
        await app.http().get(device).set(member.auth).expect(404, NOT_FOUND);
      }
    });
  });

  describe('GET, POST /api/users/me/tokens and DELETE /api/users/me/tokens/{id}', () => {
    it('creates a token: 201 with Location, shown once; it works and is listed without the token', async () => {
      const ada = await a.fixtures.user();
      const res = await a
        .http()
        .post(TOKENS)
        .set(ada.auth)
        .send({ note: '  ci   runner ', scope: 'read', expires_at: '2999-01-31T12:00:00+01:00' })
        .expect(201);
      const created = res.body.data;
      expect(created).toEqual({
        id: expect.stringMatching(/^[1-9]\d*$/),
        note: 'ci runner',
        scope: 'read',
        rendering: 'fleethub',
        expires_at: '2999-01-31T11:00:00.000Z',
        inserted_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        last_used_at: null,
        last_used_address: null,
        token: expect.stringMatching(/^nhu_[0-9A-Za-z]+$/),
      });
      expect(res.headers.location).toBe(`${TOKENS}/${created.id}`);
      await me(b, created.token).expect(200);

      const list = await b.http().get(TOKENS).set(ada.auth).expect(200);
      const { token: _shownOnce, last_used_at: _unused, last_used_address: _from, ...listed } = created;
      // The request above counted as a use (written in the background, to the minute, with its address).
      const lastUsed = list.body.data[0].last_used_at;
      const lastFrom = list.body.data[0].last_used_address;
      expect(list.body.data[0]).toEqual({ ...listed, last_used_at: lastUsed, last_used_address: lastFrom });
      expect(lastFrom === null || /127\.0\.0\.1$/.test(lastFrom)).toBe(true);
      expect(lastUsed === null || lastUsed >= created.inserted_at).toBe(true);
      expect(JSON.stringify(list.body)).not.toContain(created.token);
    });

    it('defaults: scope all, no note, no expiry (an empty body is fine)', async () => {
      const ada = await a.fixtures.user();
      const res = await a.http().post(TOKENS).set(ada.auth).expect(201);
      expect(res.body.data).toMatchObject({ note: null, scope: 'all', expires_at: null });
      const explicit = await a
        .http()
        .post(TOKENS)
        .set(ada.auth)
        .send({ note: null, scope: null, expires_at: null })
        .expect(201);
      expect(explicit.body.data).toMatchObject({ note: null, scope: 'all', expires_at: null });
      await a.http().post(TOKENS).set(bearer(res.body.data.token)).send({}).expect(201);
    });

    it.each([
      [{ scope: 'write' }, { scope: ['is invalid'] }],
      [{ note: 5 }, { note: ['must be a string'] }],
      [{ expires_at: '2000-01-01T00:00:00Z' }, { expires_at: ['must be in the future'] }],
      [{ expires_at: '2999-02-30T00:00:00Z' }, { expires_at: [BAD_TIMESTAMP] }],
      [{ expires_at: '2999-01-01' }, { expires_at: [BAD_TIMESTAMP] }],
      [{ expires_at: '2999-01-01T00:00:00' }, { expires_at: [BAD_TIMESTAMP] }],
      [{ expires_at: 1893456000 }, { expires_at: [BAD_TIMESTAMP] }],
      [{ expires_at: '2999-01-01T24:00:00Z' }, { expires_at: [BAD_TIMESTAMP] }],
    ])('refuses %j with 422', async (body, errors) => {
      const ada = await a.fixtures.user();
      await a.http().post(TOKENS).set(ada.auth).send(body).expect(422, { errors });
      expect((await a.http().get(TOKENS).set(ada.auth).expect(200)).body.data).toHaveLength(1);
    });

    it('refuses a note over 255 characters with 422', async () => {
      const ada = await a.fixtures.user();
      await a
        .http()
        .post(TOKENS)
        .set(ada.auth)
        .send({ note: 'x'.repeat(256) })
        .expect(422, fieldError('note', 'should be at most 255 character(s)'));
      await a
        .http()
        .post(TOKENS)
        .set(ada.auth)
        .send({ note: 'x'.repeat(255) })
        .expect(201);
    });

    it('a body that is not a JSON object is a 400', async () => {
      const ada = await a.fixtures.user();
      const res = await a.http().post(TOKENS).set(ada.auth).send([1]).expect(400);
      expect(res.body).toEqual(ANY_DETAIL);
    });

    it("lists the caller's tokens newest first, expired ones included, revoked ones and other users' not", async () => {
      const ada = await a.fixtures.user();
      const grace = await a.fixtures.user();
      const expired = await a.fixtures.token(ada.user, { expiresAt: new Date(Date.now() - 60_000) });
      const revoked = await a.fixtures.token(ada.user);
      await a
        .http()
        .delete(`${TOKENS}/${await tokenId(a, revoked)}`)
        .set(ada.auth)
        .expect(204);
      const list = await a.http().get(TOKENS).set(ada.auth).expect(200);
      expect(list.body.data.map((t: { id: string }) => t.id)).toEqual([
        await tokenId(a, expired),
        await tokenId(a, ada.token),
      ]);
      for (const token of list.body.data) {
        expect(Object.keys(token).sort()).toEqual([
          'expires_at',
          'id',
          'inserted_at',
          'last_used_address',
          'last_used_at',
          'note',
          'rendering',
          'scope',
        ]);
      }
      await me(a, expired).expect(401, UNAUTHORIZED);
      const graces = await a.http().get(TOKENS).set(grace.auth).expect(200);
      expect(graces.body.data.map((t: { id: string }) => t.id)).toEqual([await tokenId(a, grace.token)]);
    });

    it("DELETE: 204, again 204; unknown, malformed or another user's id: 404 with the constant body", async () => {
      const ada = await a.fixtures.user();
      const grace = await a.fixtures.user();
      const token = await a.fixtures.token(ada.user);
      const id = await tokenId(a, token);
      await a.http().delete(`${TOKENS}/${id}`).set(grace.auth).expect(404, NOT_FOUND);
      await me(a, token).expect(200);
      await a.http().delete(`${TOKENS}/${id}`).set(ada.auth).expect(204);
      await a.http().delete(`${TOKENS}/${id}`).set(ada.auth).expect(204);
      for (const bad of ['999999999999', 'abc', '0', '-1', '99999999999999999999']) {
        await a.http().delete(`${TOKENS}/${bad}`).set(ada.auth).expect(404, NOT_FOUND);
      }
      // An expired token can be revoked too; it then leaves the list.
      const expired = await a.fixtures.token(ada.user, { expiresAt: new Date(Date.now() - 60_000) });
      await a
        .http()
        .delete(`${TOKENS}/${await tokenId(a, expired)}`)
        .set(ada.auth)
        .expect(204);
      const list = await a.http().get(TOKENS).set(ada.auth).expect(200);
      expect(list.body.data.map((t: { id: string }) => t.id)).toEqual([await tokenId(a, ada.token)]);
    });

    it('a read token lists, but cannot create or revoke (403 forbidden)', async () => {
      const ada = await a.fixtures.user({ scope: 'read' });
      await a.http().get(TOKENS).set(ada.auth).expect(200);
      await a.http().post(TOKENS).set(ada.auth).send({}).expect(403, FORBIDDEN);
      const id = await tokenId(a, ada.token);
      await a.http().delete(`${TOKENS}/${id}`).set(ada.auth).expect(403, FORBIDDEN);
      await me(a, ada.token).expect(200);
    });

    it('every route needs a valid token', async () => {
      await a.http().get(TOKENS).expect(401, UNAUTHORIZED);
      await a.http().post(TOKENS).send({}).expect(401, UNAUTHORIZED);
      await a.http().delete(`${TOKENS}/1`).expect(401, UNAUTHORIZED);
    });
  });
});
