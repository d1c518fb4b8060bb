import { MetricsService } from '../src/metrics/metrics.service';
import type { TestUser } from './support/fixtures';
import type { TestApp } from './support/test-app';
import { orgScenario } from './support/scenario';

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
    ({ t, admin, org } = await orgScenario({ product: 'p' }));
    await t.fixtures.devices(admin, org, 'p', ['m-1', 'm-2', 'm-3', 'm-4', 'm-5']);
    // The connection status is what the device gateway records: no HTTP call sets it.
    await t.db.query(
      `UPDATE devices SET connection_status = CASE WHEN identifier <= 'm-3' THEN 'connected' ELSE 'disconnected' END::device_connection_status
        WHERE identifier LIKE 'm-_'`,
    );
    const { uuid } = await t.fixtures.firmware(admin, org, 'p', { version: '1.0.0' });
    for (const device of ['m-1', 'm-2']) {
      await t.http().post(`/api/devices/${device}/upgrade`).set(admin.auth).send({ uuid }).expect(204);
    }
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
