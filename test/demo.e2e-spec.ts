import type { INestApplicationContext } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { CliModule } from '../src/cli/cli.module';
import { DemoCommand } from '../src/cli/demo.command';
import { DemoService } from '../src/cli/demo.service';
import { createTestApp, type TestApp } from './support/test-app';

/** Runs `fleethub demo` in the CLI's own module on the test app's database; returns stdout and stderr. */
async function runDemo(cli: INestApplicationContext, options: Record<string, unknown>) {
  const out: string[] = [];
  const err: string[] = [];
  const stdout = jest.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
    out.push(String(chunk));
    return true;
  });
  const stderr = jest.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
    err.push(String(chunk));
    return true;
  });
  const before = process.exitCode;
  try {
    await cli.get(DemoCommand).run([], options);
    return { stdout: out.join(''), stderr: err.join(''), exitCode: process.exitCode ?? 0 };
  } finally {
    stdout.mockRestore();
    stderr.mockRestore();
    process.exitCode = before;
  }
}

describe('fleethub demo', () => {
  let t: TestApp;
  let cli: INestApplicationContext;
  beforeAll(async () => {
    t = await createTestApp({ FLEETHUB_PUBLIC_URL: 'http://fleet.example.test:4000' });
    const moduleRef = await Test.createTestingModule({
      imports: [CliModule.register(t.config, t.config.databaseUrl)],
    }).compile();
    cli = await moduleRef.init();
  });
  afterAll(async () => {
    await cli?.close();
    await t?.close();
  });

  const count = async (sql: string) => Number((await t.db.query<{ n: string }[]>(sql))[0].n);

  it('rejects a bad --devices with a usage error', async () => {
    const run = await runDemo(cli, { devices: 'many' });
    expect(run.exitCode).toBe(2);
    expect(run.stderr).toBe('error: --devices must be a whole number from 1 to 1000000\n');
  });

  it('leaves nothing behind when a step fails', async () => {
    const spy = jest
      .spyOn(
        DemoService.prototype as unknown as { insertIrohEndpoints(): Promise<number> },
        'insertIrohEndpoints',
      )
      .mockRejectedValueOnce(new Error('disk on fire'));
    try {
      const run = await runDemo(cli, { devices: '40' });
      expect(run).toMatchObject({ exitCode: 1, stdout: '', stderr: 'error: disk on fire\n' });
    } finally {
      spy.mockRestore();
    }
    expect(await count(`SELECT count(*) AS n FROM orgs WHERE name = 'demo'`)).toBe(0);
    expect(await count(`SELECT count(*) AS n FROM users WHERE email LIKE 'demo%@example.com'`)).toBe(0);
    expect(await count(`SELECT count(*) AS n FROM devices`)).toBe(0);
    expect(await count(`SELECT count(*) AS n FROM firmwares`)).toBe(0);
  });

  describe('a seeded demo', () => {
    let stdout: string;
    let token: string;
    beforeAll(async () => {
      const run = await runDemo(cli, { devices: '1200' });
      expect(run.exitCode).toBe(0);
      stdout = run.stdout;
      token = stdout.trimEnd().split('\n').at(-1)!;
      // Over 1000 devices: progress on stderr (not a terminal here: a line per quarter), ending complete.
      expect(run.stderr).toContain('[##############################] 1200/1200 devices\n');
    });
    const api = (path: string) => t.http().get(path).set('Authorization', `Bearer ${token}`);

    it('prints the Swagger URL and, on the last line, a token of the demo user', async () => {
      expect(token).toMatch(/^nhu_[0-9A-Za-z]+$/);
      expect(stdout).toContain('Swagger UI: http://fleet.example.test:4000/api/docs');
      const me = await api('/api/users/me').expect(200);
      expect(me.body.data).toMatchObject({ email: 'demo@example.com', username: 'demo' });
      await t
        .http()
        .post('/api/users/auth')
        .send({ email: 'demo@example.com', password: 'demo password' })
        .expect(200);
    });

    it('creates the organization with members, products and signed firmware', async () => {
      const members = await api('/api/orgs/demo/users').expect(200);
      expect(members.body.data.map((m: { email: string; role: string }) => [m.email, m.role]).sort()).toEqual(
        [
          ['demo-manager@example.com', 'manage'],
          ['demo-viewer@example.com', 'view'],
          ['demo@example.com', 'admin'],
        ],
      );
      const products = await api('/api/orgs/demo/products').expect(200);
      expect(products.body.data.map((p: { name: string }) => p.name).sort()).toEqual(['gateway', 'sensor']);
      const extensions = {
        health: false,
        geo: false,
        local_shell: false,
        logging: false,
        network_identity: true,
      };
      await api('/api/orgs/demo/products/gateway/extensions').expect(200, { data: extensions });
      await api('/api/orgs/demo/products/sensor/extensions').expect(200, {
        data: { ...extensions, health: true, geo: true, logging: true },
      });
      const firmwares = await api('/api/orgs/demo/products/gateway/firmwares').expect(200);
      expect(firmwares.body.data.map((f: { version: string }) => f.version)).toEqual([
        '1.2.0',
        '1.1.0',
        '1.0.0',
      ]);
      const keys = await api('/api/orgs/demo/keys').expect(200);
      expect(keys.body.data).toHaveLength(1);
      expect(await count(`SELECT count(*) AS n FROM firmwares WHERE signed_with = 'demo-key'`)).toBe(5);
    });

    it('creates the fleet: devices with tags, versions and a connection history, readable through the API', async () => {
      expect(await count(`SELECT count(*) AS n FROM devices`)).toBe(1200);
      const gateways = await api('/api/orgs/demo/products/gateway/devices?page_size=5').expect(200);
      expect(gateways.body.pagination.total_entries).toBe(900);
      const sensors = await api('/api/orgs/demo/products/sensor/devices?page_size=5').expect(200);
      expect(sensors.body.pagination.total_entries).toBe(300);
      const device = await api('/api/devices/demo-gateway-00001').expect(200);
      expect(device.body.data).toMatchObject({ org_name: 'demo', product_name: 'gateway' });
      const statuses = await t.db.query<{ connection_status: string; n: string }[]>(
        `SELECT connection_status, count(*) AS n FROM devices GROUP BY 1`,
      );
      expect(statuses.map((s) => s.connection_status).sort()).toEqual([
        'connected',
        'disconnected',
        'not_seen',
      ]);
      expect(await count(`SELECT count(DISTINCT firmware_version) AS n FROM devices`)).toBe(5);
      expect(await count(`SELECT count(*) AS n FROM devices WHERE cardinality(tags) < 2`)).toBe(0);
      expect(stdout).toMatch(
        /1200 devices \(\d+ shown as connected\), 10 pending updates, \d+ iroh endpoints/,
      );
    });

    it('records a rollout in progress and iroh endpoints', async () => {
      expect(await count(`SELECT count(*) AS n FROM pending_updates`)).toBe(10);
      // Every pending update is the demo group's, on its current release, as the orchestrator claims them.
      expect(
        await count(
          `SELECT count(*) AS n FROM pending_updates pu JOIN deployment_groups g ON g.id = pu.deployment_group_id
            WHERE g.name = 'gateway-stable' AND pu.deployment_release_id = g.current_release_id
              AND pu.expires_at > now()`,
        ),
      ).toBe(10);
      const iroh = await api('/api/orgs/demo/iroh_endpoints').expect(200);
      expect(iroh.body.data.length).toBeGreaterThan(10);
    });

    it('creates the deployment group gateway-stable with a rollout in progress, shown through the API', async () => {
      const list = await api('/api/orgs/demo/products/gateway/deployments').expect(200);
      expect(list.body.data.map((g: { name: string }) => g.name)).toEqual(['gateway-stable']);
      const { body } = await api('/api/orgs/demo/products/gateway/deployments/gateway-stable').expect(200);
      const newest = await api('/api/orgs/demo/products/gateway/firmwares').expect(200);
      expect(body.data).toMatchObject({
        name: 'gateway-stable',
        is_active: true,
        state: 'on',
        firmware_uuid: newest.body.data[0].uuid,
        current_release: {
          number: 1,
          firmware: { version: '1.2.0', platform: 'rpi4', architecture: 'aarch64' },
        },
        conditions: { version: '~> 1.0', tags: [], tag_operator: 'and' },
        concurrent_updates: 10,
        releases_count: 1,
        paused_reason: null,
      });
      // Membership as the membership service computes it: every gateway with a 1.x firmware (all but the never seen).
      const members = await count(
        `SELECT count(*) AS n FROM devices d JOIN products p ON p.id = d.product_id
          WHERE p.name = 'gateway' AND d.firmware_version LIKE '1.%'`,
      );
      expect(members).toBeGreaterThan(700);
      const counts = body.data.counts;
      expect(counts).toMatchObject({ devices: members, updating: 10, failed: 2, blocked: 2 });
      expect(body.data.device_count).toBe(members);
      // More than the third that started on 1.2.0, fewer than all.
      expect(counts.updated).toBeGreaterThan(members / 2);
      expect(counts.updated).toBeLessThan(members);
      const filtered = await api(
        '/api/orgs/demo/products/gateway/devices?filters%5Bdeployment_group%5D=gateway-stable&page_size=1',
      ).expect(200);
      expect(filtered.body.pagination.total_entries).toBe(members);
      expect(stdout).toContain(
        `deployment group gateway-stable (product gateway, firmware 1.2.0): ${members} devices, ` +
          `${counts.updated} updated, 10 updating, 2 in the penalty box`,
      );
    });

    it('fails clearly, changing nothing, when the demo already exists', async () => {
      const run = await runDemo(cli, {});
      expect(run.exitCode).toBe(1);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(
        /^error: the demo data already exists \(organization "demo", user demo@example\.com/,
      );
      expect(await count(`SELECT count(*) AS n FROM devices`)).toBe(1200);
    });
  });
});
