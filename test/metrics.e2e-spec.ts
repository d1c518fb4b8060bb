import { MetricsService } from '../src/metrics/metrics.service';
import type { TestUser } from './support/fixtures';
import { createTestApp, type TestApp } from './support/test-app';

/** The value of one sample line `name{labels} value` (labels as written, in order), or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('GET /metrics', () => {
  let t: TestApp;
  let admin: TestUser;
  let org: string;
  beforeAll(async () => {
    t = await createTestApp();
    admin = await t.fixtures.user();
    org = await t.fixtures.org(admin);
    await t.http().post(`/api/orgs/${org}/products`).set(admin.auth).send({ name: 'p' }).expect(201);
    await t.db.query(
      `INSERT INTO devices (org_id, product_id, identifier, connection_status)
       SELECT p.org_id, p.id, 'm-' || i, CASE WHEN i <= 3 THEN 'connected' ELSE 'disconnected' END::device_connection_status
         FROM products p JOIN orgs o ON o.id = p.org_id, generate_series(1, 5) AS i
        WHERE o.name = $1 AND p.name = 'p'`,
      [org],
    );
    await t.db.query(
      `INSERT INTO firmwares (product_id, uuid, version, version_sort_key, meta_product, platform, architecture,
                              tool, size, sha256, chunk_sha256, storage_key)
       SELECT p.id, gen_random_uuid(), '1.0.0', '1.0.0', p.name, 'rpi4', 'arm', 'fwup', 1, repeat('0', 64), '{}', 'k'
         FROM products p JOIN orgs o ON o.id = p.org_id WHERE o.name = $1 AND p.name = 'p'`,
      [org],
    );
    await t.db.query(
      `INSERT INTO pending_updates (device_id, firmware_id)
       SELECT d.id, f.id FROM devices d JOIN firmwares f ON f.product_id = d.product_id
        WHERE d.identifier IN ('m-1', 'm-2') AND f.storage_key = 'k'`,
    );
  });
  afterAll(() => t.close());

  const scrape = async () => {
    const res = await t.http().get('/metrics').expect(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain;.*version=0\.0\.4/);
    return res.text;
  };

  it('is public and in the Prometheus text format, with process metrics', async () => {
    const text = await scrape();
    expect(text).toContain('# TYPE fleethub_http_request_duration_seconds histogram');
    expect(text).toContain('# TYPE process_cpu_seconds_total counter');
    expect(text).toContain('# TYPE nodejs_heap_size_used_bytes gauge');
  });

  it('labels request durations by route template, method and status, never by raw path', async () => {
    await t.http().get(`/api/orgs/${org}/products/p`).set(admin.auth).expect(200);
    await t.http().get(`/api/orgs/${org}/products/nope`).set(admin.auth).expect(404);
    await t.http().get('/api/users/me').expect(401);
    await t.http().get('/no/such/path').expect(404);
    const text = await scrape();
    const count = (labels: string) => sample(text, `fleethub_http_request_duration_seconds_count{${labels}}`);
    expect(count('route="/api/orgs/:org_name/products/:product_name",method="GET",status="200"')).toBe(1);
    expect(count('route="/api/orgs/:org_name/products/:product_name",method="GET",status="404"')).toBe(1);
    expect(count('route="/api/users/me",method="GET",status="401"')).toBe(1);
    expect(count('route="<unmatched>",method="GET",status="404"')).toBe(1);
    expect(text).not.toContain(org);
    expect(text).not.toContain('/no/such/path');
  });

  it('reads connected devices and pending updates from the database at scrape time', async () => {
    let text = await scrape();
    expect(sample(text, 'fleethub_connected_devices')).toBe(3);
    expect(sample(text, 'fleethub_pending_updates')).toBe(2);
    await t.db.query(`UPDATE devices SET connection_status = 'connected' WHERE identifier = 'm-4'`);
    text = await scrape();
    expect(sample(text, 'fleethub_connected_devices')).toBe(4);
  });

  it('takes the connected count from setConnectedDevices when the gateway provides it', async () => {
    const metrics = t.app.get(MetricsService);
    metrics.setConnectedDevices(42);
    expect(sample(await scrape(), 'fleethub_connected_devices')).toBe(42);
    metrics.setConnectedDevices(null);
    expect(sample(await scrape(), 'fleethub_connected_devices')).toBe(4);
  });

  it('reports NaN for the counts, and still answers, when the database fails', async () => {
    const query = jest.spyOn(t.db, 'query').mockRejectedValue(new Error('connection refused'));
    try {
      const text = await scrape();
      expect(sample(text, 'fleethub_connected_devices')).toBeNaN();
      expect(sample(text, 'fleethub_pending_updates')).toBeNaN();
    } finally {
      query.mockRestore();
    }
  });

  it('reports the database pool', async () => {
    const text = await scrape();
    expect(sample(text, 'fleethub_db_pool_connections_total')).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'fleethub_db_pool_connections_idle')).toBeGreaterThanOrEqual(0);
    expect(sample(text, 'fleethub_db_pool_requests_waiting')).toBeGreaterThanOrEqual(0);
  });
});
