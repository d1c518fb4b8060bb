import type { Server } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { ConfigError, loadConfig } from '../src/config/config';
import { CapturedLog } from './support/captured-log';
import { createTestApp, type TestApp } from './support/test-app';
import type { TestUser } from './support/fixtures';
import { ANY_DETAIL, detail } from './support/contract-bodies';

describe('security headers, CORS and request timeouts', () => {
  describe('defaults', () => {
    let t: TestApp;
    let ada: TestUser;
    beforeAll(async () => {
      t = await createTestApp();
      ada = await t.fixtures.user();
    });
    afterAll(() => t.close());

    it('API responses carry helmet headers and a strict CSP', async () => {
      const res = await t.http().get('/api/users/me').set(ada.auth).expect(200);
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['x-frame-options']).toBe('SAMEORIGIN');
      expect(res.headers['strict-transport-security']).toMatch(/max-age=/);
      expect(res.headers['content-security-policy']).toContain("default-src 'none'");
      expect(res.headers['content-security-policy']).not.toContain('unsafe-inline');
      expect(res.headers['x-powered-by']).toBeUndefined();
      expect(res.headers['cross-origin-resource-policy']).toBe('same-origin');
    });

    it('API responses leave out the headers that only govern a rendered page; pages get them', async () => {
      const DOCUMENT_ONLY = [
        'referrer-policy',
        'x-dns-prefetch-control',
        'cross-origin-opener-policy',
        'origin-agent-cluster',
        'x-xss-protection',
        'x-download-options',
        'x-permitted-cross-domain-policies',
      ];
      const api = await t.http().get('/api/users/me').set(ada.auth).expect(200);
      const docs = await t.http().get('/api/docs/').expect(200);
      for (const name of DOCUMENT_ONLY) {
        expect({ name, api: api.headers[name] }).toEqual({ name, api: undefined });
        expect({ name, docs: typeof docs.headers[name] }).toEqual({ name, docs: 'string' });
      }
      expect(docs.headers['referrer-policy']).toBe('no-referrer');
    });

    it("requests Node's HTTP parser refuses get the contract's error body", async () => {
      const server = t.app.getHttpServer() as Server;
      if (!server.listening) await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const { port } = server.address() as AddressInfo;
      const raw = (request: string) =>
        new Promise<string>((resolve, reject) => {
          const socket = connect(port, '127.0.0.1', () => socket.end(request));
          let answer = '';
          socket.on('data', (chunk) => (answer += chunk.toString()));
          socket.on('close', () => resolve(answer));
          socket.on('error', reject);
        });
      const tooLong = await raw(`GET /api/users/me?q=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`);
      expect(tooLong.split('\r\n')[0]).toBe('HTTP/1.1 431 Request Header Fields Too Large');
      expect(tooLong).toContain('Content-Type: application/json; charset=utf-8');
      expect(tooLong).toMatch(/\r\nx-request-id: [0-9a-f-]{36}\r\n/);
      expect(JSON.parse(tooLong.split('\r\n\r\n')[1])).toEqual(
        detail('the request line and headers are too large'),
      );
      const malformed = await raw('NOT HTTP AT ALL\r\n\r\n');
      expect(malformed.split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request');
      expect(JSON.parse(malformed.split('\r\n\r\n')[1])).toEqual(detail('malformed HTTP request'));
    });

    it('error responses carry them too', async () => {
      const res = await t.http().get('/api/users/me').expect(401);
      expect(res.headers['x-content-type-options']).toBe('nosniff');
    });

    it('Swagger UI gets a CSP that allows its inline script and styles, and its assets load', async () => {
      const res = await t.http().get('/api/docs/').expect(200);
      expect(res.headers['content-security-policy']).toMatch(/script-src 'self' 'unsafe-inline'/);
      expect(res.headers['content-security-policy']).toMatch(/style-src 'self' 'unsafe-inline'/);
      const scripts = [...res.text.matchAll(/src="([^"]+\.js)"/g)].map((m) => m[1]);
      expect(scripts.length).toBeGreaterThan(0);
      for (const src of scripts) {
        const url = new URL(src, 'http://x/api/docs/').pathname;
        await t.http().get(url).expect(200);
      }
      await t.http().get('/api/openapi.json').expect(200);
    });

    it('CORS is off by default', async () => {
      const res = await t.http().get('/api/users/me').set(ada.auth).set('Origin', 'https://evil.example');
      expect(res.headers['access-control-allow-origin']).toBeUndefined();
      const preflight = await t
        .http()
        .options('/api/users/me')
        .set('Origin', 'https://evil.example')
        .set('Access-Control-Request-Method', 'GET');
      expect(preflight.headers['access-control-allow-origin']).toBeUndefined();
    });
  });

  describe('configured CORS origins and a short request timeout', () => {
    let t: TestApp;
    let ada: TestUser;
    const log = new CapturedLog();
    beforeAll(async () => {
      t = await createTestApp(
        {
          FLEETHUB_CORS_ORIGINS: 'https://ops.example.com, http://localhost:3000',
          FLEETHUB_REQUEST_TIMEOUT_SEC: '1',
        },
        { logger: log.logger('info') },
      );
      ada = await t.fixtures.user();
    });
    afterAll(() => t.close());

    it('answers preflights for a listed origin only', async () => {
      const ok = await t
        .http()
        .options('/api/users/me')
        .set('Origin', 'https://ops.example.com')
        .set('Access-Control-Request-Method', 'GET')
        .set('Access-Control-Request-Headers', 'authorization');
      expect(ok.status).toBe(204);
      expect(ok.headers['access-control-allow-origin']).toBe('https://ops.example.com');
      expect(ok.headers['access-control-allow-headers']).toMatch(/Authorization/i);
      const get = await t.http().get('/api/users/me').set(ada.auth).set('Origin', 'http://localhost:3000');
      expect(get.headers['access-control-allow-origin']).toBe('http://localhost:3000');
      expect(get.headers['access-control-expose-headers']).toMatch(/X-Request-Id/i);
      const other = await t.http().get('/api/users/me').set(ada.auth).set('Origin', 'https://evil.example');
      expect(other.headers['access-control-allow-origin']).toBeUndefined();
      // A body refused before any route still answers the listed origin, so its script can read the error.
      const refused = await t
        .http()
        .post('/api/users/me/tokens')
        .set(ada.auth)
        .set('Origin', 'https://ops.example.com')
        .set('Content-Type', 'application/json')
        .send('{"note":');
      expect(refused.status).toBe(400);
      expect(refused.headers['access-control-allow-origin']).toBe('https://ops.example.com');
    });

    it('a call that takes too long answers 503 with the contract body', async () => {
      const org = await t.fixtures.org(ada);
      await t.fixtures.product(ada, org, 'slow');
      const blocker = t.db.createQueryRunner();
      await blocker.connect();
      await blocker.startTransaction();
      try {
        await blocker.query(`SELECT 1 FROM products WHERE name = 'slow' FOR UPDATE`);
        const started = Date.now();
        const res = await t
          .http()
          .patch(`/api/orgs/${org}/products/slow`)
          .set(ada.auth)
          .send({ require_unique_firmware_version: false });
        expect(res.status).toBe(503);
        expect(res.body).toEqual(ANY_DETAIL);
        expect(res.headers['retry-after']).toBeDefined();
        expect(Date.now() - started).toBeLessThan(5000);
        // One line for the request, the timeout's (the completion line is not written as well).
        await new Promise((r) => setTimeout(r, 100));
        expect(log.lines.filter((line) => line.requestId === res.headers['x-request-id'])).toEqual([
          expect.objectContaining({
            level: 40,
            msg: 'request timed out',
            req: {
              method: 'PATCH',
              route: '/api/orgs/:org_name/products/:product_name',
              path: expect.any(String),
            },
            res: { status: 503 },
            timeoutMs: 1000,
          }),
        ]);
      } finally {
        await blocker.rollbackTransaction();
        await blocker.release();
      }
      // The server keeps working once the handler has finished.
      await t.http().get(`/api/orgs/${org}/products/slow`).set(ada.auth).expect(200);
    });
  });

  it('refuses bad CORS origins and timeouts at start', () => {
    expect(() => loadConfig({ FLEETHUB_CORS_ORIGINS: 'ops.example.com' })).toThrow(ConfigError);
    expect(() => loadConfig({ FLEETHUB_CORS_ORIGINS: 'https://ops.example.com/path' })).toThrow(ConfigError);
    expect(() => loadConfig({ FLEETHUB_REQUEST_TIMEOUT_SEC: '-1' })).toThrow(ConfigError);
    expect(() => loadConfig({ FLEETHUB_RATE_LIMIT_API_PER_MIN: 'lots' })).toThrow(ConfigError);
    expect(loadConfig({}).corsOrigins).toEqual([]);
    expect(loadConfig({ FLEETHUB_CORS_ORIGINS: '*' }).corsOrigins).toEqual(['*']);
    expect(loadConfig({}).requestTimeoutMs).toBe(30_000);
    expect(loadConfig({ FLEETHUB_RATE_LIMIT_LOGIN_PER_MIN: '0' }).rateLimitLoginPerMin).toBe(0);
  });
});
