import { csvCell } from '../src/audit/audit.service';
import { createTestApp, type TestApp } from './support/test-app';
import { fieldError } from './support/contract-bodies';
import type { TestUser } from './support/fixtures';

interface Entry {
  action: string;
  target_type: string;
  target_id: string;
  actor: { type: string; email?: string | null };
  request_id: string | null;
  details: Record<string, unknown>;
  inserted_at: string;
}

describe('audit log', () => {
  let t: TestApp;
  let admin: TestUser;
  let viewer: TestUser;
  let outsider: TestUser;
  let org: string;

  beforeAll(async () => {
    t = await createTestApp();
    admin = await t.fixtures.user();
    viewer = await t.fixtures.user();
    outsider = await t.fixtures.user();
    const created = await t
      .http()
      .post('/api/orgs')
      .set(admin.auth)
      .set('x-request-id', 'req-org-create')
      .send({ name: `audit-${Date.now()}` })
      .expect(201);
    org = created.body.data.name;
    await t.fixtures.addMember(org, viewer, 'view');
  });
  afterAll(() => t.close());

  const entries = async (query = ''): Promise<Entry[]> =>
    (await t.http().get(`/api/orgs/${org}/audit_logs${query}`).set(admin.auth).expect(200)).body.data;

  it('records org creation with actor and request id', async () => {
    const all = await entries();
    const created = all.find((e) => e.action === 'org.create');
    expect(created).toMatchObject({
      target_type: 'org',
      target_id: org,
      actor: { type: 'user', email: admin.user.email },
      request_id: 'req-org-create',
    });
  });

  it('records writes across the services, newest first, with pagination', async () => {
    const api = t.http();
    await api
      .post(`/api/orgs/${org}/products`)
      .set(admin.auth)
      .set('x-request-id', 'p1')
      .send({ name: 'p' })
      .expect(201);
    await t
      .http()
      .patch(`/api/orgs/${org}/products/p`)
      .set(admin.auth)
      .send({ require_unique_firmware_version: false })
      .expect(200);
    const script = await t
      .http()
      .post(`/api/orgs/${org}/products/p/scripts`)
      .set(admin.auth)
      .send({ name: 's', text: 'x' })
      .expect(201);
    await t
      .http()
      .put(`/api/orgs/${org}/products/p/scripts/${script.body.data.id}`)
      .set(admin.auth)
      .send({ name: 's2' })
      .expect(200);
    await t
      .http()
      .delete(`/api/orgs/${org}/products/p/scripts/${script.body.data.id}`)
      .set(admin.auth)
      .expect(204);
    await t
      .http()
      .post(`/api/orgs/${org}/products/p/devices`)
      .set(admin.auth)
      .send({ identifier: `dev-${org}` })
      .expect(201);
    await t
      .http()
      .patch(`/api/orgs/${org}/products/p/devices/dev-${org}`)
      .set(admin.auth)
      .send({ tags: 'a' })
      .expect(200);
    await t.http().delete(`/api/orgs/${org}/products/p/devices/dev-${org}`).set(admin.auth).expect(204);
    await t
      .http()
      .post(`/api/orgs/${org}/keys`)
      .set(admin.auth)
      .send({ name: 'k', key: Buffer.alloc(32, 1).toString('base64') })
      .expect(201);
    await t.http().delete(`/api/orgs/${org}/keys/k`).set(admin.auth).expect(204);
    await t
      .http()
      .put(`/api/orgs/${org}/users/${encodeURIComponent(viewer.user.email)}`)
      .set(admin.auth)
      .send({ role: 'manage' })
      .expect(200);
    const iroh = 'ab'.repeat(32);
    await t
      .http()
      .post(`/api/orgs/${org}/iroh_endpoints`)
      .set(admin.auth)
      .send({ identifier: iroh })
      .expect(201);
    await t.http().delete(`/api/orgs/${org}/iroh_endpoints/${iroh}`).set(admin.auth).expect(204);
    await t.http().delete(`/api/orgs/${org}/products/p`).set(admin.auth).expect(204);

    const all = await entries('?pagination[page_size]=100');
    expect(all.map((e) => e.action)).toEqual([
      'product.delete',
      'iroh_endpoint.delete',
      'iroh_endpoint.create',
      'member.update',
      'signing_key.delete',
      'signing_key.create',
      'device.delete',
      'device.update',
      'device.create',
      'script.delete',
      'script.update',
      'script.create',
      'product.update',
      'product.create',
      'org.create',
    ]);
    expect(all.find((e) => e.action === 'product.create')!.request_id).toBe('p1');

    const page = await t
      .http()
      .get(`/api/orgs/${org}/audit_logs?pagination[page]=2&pagination[page_size]=4`)
      .set(admin.auth)
      .expect(200);
    expect(page.body.pagination).toEqual({ page_number: 2, page_size: 4, total_entries: 15, total_pages: 4 });
    expect(page.body.data.map((e: Entry) => e.action)).toEqual(all.slice(4, 8).map((e) => e.action));
  });

  it('filters by actor, target and time', async () => {
    expect((await entries('?target_type=device')).every((e) => e.target_type === 'device')).toBe(true);
    expect((await entries(`?target_type=product&target_id=p`)).length).toBe(3);
    expect(
      (await entries(`?actor=${encodeURIComponent(admin.user.email.toUpperCase())}`)).length,
    ).toBeGreaterThan(0);
    expect(await entries(`?actor=${encodeURIComponent(viewer.user.email)}`)).toEqual([]);
    expect(await entries('?from=2999-01-01T00:00:00Z')).toEqual([]);
    expect((await entries('?to=2999-01-01T00:00:00Z')).length).toBeGreaterThan(0);
  });

  it.each(['from', 'to'])('a bad %s is a 422 naming it', async (name) => {
    const res = await t
      .http()
      .get(`/api/orgs/${org}/audit_logs?${name}=yesterday`)
      .set(admin.auth)
      .expect(422);
    expect(Object.keys(res.body.errors)).toEqual([name]);
  });

  it('an unknown parameter is a 422 naming it', async () => {
    const res = await t.http().get(`/api/orgs/${org}/audit_logs?colour=red`).set(admin.auth).expect(422);
    expect(res.body).toEqual(fieldError('colour', 'is not a known parameter'));
  });

  it('needs admin; outsiders get the constant 404', async () => {
    await t.http().get(`/api/orgs/${org}/audit_logs`).set(viewer.auth).expect(403);
    await t.http().get(`/api/orgs/${org}/audit_logs.csv`).set(viewer.auth).expect(403);
    await t.http().get(`/api/orgs/${org}/audit_logs`).set(outsider.auth).expect(404);
    await t.http().get(`/api/orgs/${org}/audit_logs`).expect(401);
  });

  it('a failed change records nothing (same transaction)', async () => {
    const before = (await entries('?pagination[page_size]=500')).length;
    await t.http().post(`/api/orgs/${org}/products`).set(admin.auth).send({ name: 'dup' }).expect(201);
    await t.http().post(`/api/orgs/${org}/products`).set(admin.auth).send({ name: 'dup' }).expect(422);
    expect((await entries('?pagination[page_size]=500')).length).toBe(before + 1);
  });

  it('exports CSV with the same filters, quoted and injection-safe', async () => {
    await t
      .http()
      .post(`/api/orgs/${org}/products`)
      .set(admin.auth)
      .send({ name: '=HYPERLINK("x","y"),z' })
      .expect(201);
    const res = await t
      .http()
      .get(`/api/orgs/${org}/audit_logs.csv?target_type=product`)
      .set(admin.auth)
      .expect(200);
    expect(res.headers['content-type']).toMatch(/^text\/csv/);
    const lines = res.text.trimEnd().split('\r\n');
    expect(lines[0]).toBe('id,inserted_at,actor_type,actor,action,target_type,target_id,details,request_id');
    expect(lines[1]).toContain(`"'=HYPERLINK(""x"",""y""),z"`);
    expect(lines.length).toBe(1 + (await entries('?target_type=product&pagination[page_size]=500')).length);
    await t.http().get(`/api/orgs/${org}/audit_logs.csv?from=nope`).set(admin.auth).expect(422);
  });

  it('exports every entry when more than a batch share one timestamp (microseconds, not milliseconds)', async () => {
    // One statement: every row gets the same inserted_at, with microseconds a JavaScript Date cannot hold.
    await t.db.query(
      `INSERT INTO audit_logs (org_id, actor_type, action, target_type, target_id, details, inserted_at)
       SELECT o.id, 'system', 'bulk.test', 'bulk', 'b-' || i, '{}', '2026-11-25T10:00:00.123456Z'
         FROM orgs o, generate_series(1, 1204) AS i WHERE o.name = $1`,
      [org],
    );
    const res = await t
      .http()
      .get(`/api/orgs/${org}/audit_logs.csv?target_type=bulk`)
      .set(admin.auth)
      .expect(200);
    const targets = res.text
      .trimEnd()
      .split('\r\n')
      .slice(1)
      .map((line) => line.split(',')[6]);
    expect(targets).toHaveLength(1204);
    expect(new Set(targets).size).toBe(1204);
  });

  it('csvCell quotes per RFC 4180 and neutralises formulas', () => {
    expect(csvCell('plain')).toBe('plain');
    expect(csvCell('a,b')).toBe('"a,b"');
    expect(csvCell('say "hi"')).toBe('"say ""hi"""');
    expect(csvCell('line\nbreak')).toBe('"line\nbreak"');
    for (const c of ['=', '+', '-', '@']) expect(csvCell(`${c}1`)).toBe(`'${c}1`);
    expect(csvCell(null)).toBe('');
  });
});
