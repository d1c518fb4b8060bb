import type { DataSource } from 'typeorm';
import { RateLimitBucketsRepository } from '../src/common/http/rate-limit-buckets.repository';
import { RateLimiter } from '../src/common/http/rate-limiter';
import { createTestApp, type TestApp } from './support/test-app';
import type { TestUser } from './support/fixtures';
import { ANY_DETAIL, UNAUTHORIZED } from './support/contract-bodies';

const BAD_TOKEN = 'Bearer nhu_notavalidtokenatall';

describe('rate limits (rate_limit_buckets, shared by instances)', () => {
  let t: TestApp;
  let ada: TestUser;

  beforeAll(async () => {
    t = await createTestApp({
      FLEETHUB_RATE_LIMIT_LOGIN_PER_MIN: '3',
      FLEETHUB_RATE_LIMIT_API_PER_MIN: '5',
      FLEETHUB_RATE_LIMIT_AUTH_FAILURES_PER_MIN: '4',
    });
    ada = await t.fixtures.user({ password: 'correct horse battery' });
  });
  afterAll(() => t.close());

  const expect429 = (res: { status: number; body: unknown; headers: Record<string, string> }) => {
    expect(res.status).toBe(429);
    expect(res.body).toEqual(ANY_DETAIL);
    const retryAfter = Number(res.headers['retry-after']);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
  };

  it('login: per account, strict', async () => {
    const responses = [];
    for (let i = 0; i < 4; i++) {
      responses.push(
        await t.http().post('/api/users/auth').send({ email: 'victim@example.com', password: 'guess' }),
      );
    }
    expect(responses.map((r) => r.status)).toEqual([401, 401, 401, 429]);
    expect429(responses[3]);
    // Another account from the same address is still allowed (the address limit is three times higher).
    await t
      .http()
      .post('/api/users/auth')
      .send({ email: ada.user.email, password: 'correct horse battery' })
      .expect(200);
  });

  it('login: the deprecated /api/users/login counts in the same per-account bucket as /api/users/auth', async () => {
    const statuses: number[] = [];
    for (const path of ['auth', 'login', 'auth', 'login']) {
      const res = await t
        .http()
        .post(`/api/users/${path}`)
        .send({ email: 'alias-victim@example.com', password: 'guess' });
      statuses.push(res.status);
      if (res.status === 429) expect429(res);
    }
    expect(statuses).toEqual([401, 401, 401, 429]);
  });

  it('general API: per token, with the contract body and Retry-After', async () => {
    const other = await t.fixtures.user();
    for (let i = 0; i < 5; i++) await t.http().get('/api/users/me').set(ada.auth).expect(200);
    expect429(await t.http().get('/api/users/me').set(ada.auth));
    // Another token is counted on its own.
    await t.http().get('/api/users/me').set(other.auth).expect(200);
  });

  it('failed bearer authentication: per source address, then every credential is refused', async () => {
    await t.http().get('/api/users/me').expect(401); // no credential: not counted
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      statuses.push((await t.http().get('/api/orgs').set('Authorization', BAD_TOKEN)).status);
    }
    expect(statuses).toEqual([401, 401, 401, 401, 429]);
    const fresh = await t.fixtures.user();
    expect429(await t.http().get('/api/orgs').set(fresh.auth));
    // Without a credential the answer stays 401.
    await t.http().get('/api/orgs').expect(401, UNAUTHORIZED);
  });

  describe('RateLimiter', () => {
    let db: DataSource;
    beforeAll(() => {
      db = t.db;
    });

    it('counts one window across instances (one atomic upsert per hit)', async () => {
      const a = new RateLimiter(new RateLimitBucketsRepository(db));
      const b = new RateLimiter(new RateLimitBucketsRepository(db));
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).hit('test:shared', 10, 60_000)),
      );
      expect(results.map((r) => r.hits).sort((x, y) => x - y)).toEqual(
        Array.from({ length: 20 }, (_, i) => i + 1),
      );
      expect(results.filter((r) => r.allowed)).toHaveLength(10);
    });

    it('buffered hits (the API limit) decide in memory and are shared at the next flush', async () => {
      const a = new RateLimiter(new RateLimitBucketsRepository(db));
      const b = new RateLimiter(new RateLimitBucketsRepository(db));
      for (let i = 0; i < 3; i++) expect(a.hitBuffered('test:buffered', 5).allowed).toBe(true);
      expect(await db.query(`SELECT 1 FROM rate_limit_buckets WHERE key = 'test:buffered'`)).toEqual([]);
      await a.flush();
      expect(b.hitBuffered('test:buffered', 5).allowed).toBe(true);
      await b.flush();
      // b now knows the shared 4 hits: one more is allowed, the next is not.
      expect(b.hitBuffered('test:buffered', 5)).toEqual(expect.objectContaining({ allowed: true, hits: 5 }));
      const refused = b.hitBuffered('test:buffered', 5);
      expect(refused.allowed).toBe(false);
      expect(refused.retryAfter).toBeGreaterThan(0);
      await b.flush();
      const [row] = await db.query(`SELECT hits FROM rate_limit_buckets WHERE key = 'test:buffered'`);
      expect(row.hits).toBe(6);
      expect(a.hitBuffered('test:off', 0).allowed).toBe(true);
    });

    it('starts a new window when the old one has expired, and sweeps expired rows', async () => {
      const limiter = new RateLimiter(new RateLimitBucketsRepository(db));
      await limiter.hit('test:expire', 1, 60_000);
      expect((await limiter.hit('test:expire', 1, 60_000)).allowed).toBe(false);
      await db.query(
        `UPDATE rate_limit_buckets SET expires_at = now() - interval '1 second' WHERE key = $1`,
        ['test:expire'],
      );
      const again = await limiter.hit('test:expire', 1, 60_000);
      expect(again).toMatchObject({ allowed: true, hits: 1 });
      await db.query(
        `UPDATE rate_limit_buckets SET expires_at = now() - interval '1 second' WHERE key = $1`,
        ['test:expire'],
      );
      expect(await limiter.sweep()).toBeGreaterThanOrEqual(1);
      expect(await db.query(`SELECT 1 FROM rate_limit_buckets WHERE key = 'test:expire'`)).toEqual([]);
    });

    it('a limit of 0 disables the check and writes nothing', async () => {
      const limiter = new RateLimiter(new RateLimitBucketsRepository(db));
      expect((await limiter.hit('test:off', 0)).allowed).toBe(true);
      expect(await db.query(`SELECT 1 FROM rate_limit_buckets WHERE key = 'test:off'`)).toEqual([]);
    });

    it('fails open when the database is down or slow', async () => {
      const down = new RateLimiter(
        new RateLimitBucketsRepository({
          query: () =>
            Promise.reject(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })),
        }),
      );
      expect((await down.hit('k', 1)).allowed).toBe(true);
      const slow = new RateLimiter(
        new RateLimitBucketsRepository({ query: () => new Promise(() => undefined) }),
      );
      const started = Date.now();
      expect((await slow.hit('k', 1)).allowed).toBe(true);
      expect(Date.now() - started).toBeLessThan(3000);
      expect(await down.sweep()).toBe(0);
    });
  });
});
