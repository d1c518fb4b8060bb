import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DeviceTlsListener } from '../src/gateway/device-tls-listener';
import { runCliProcess } from './support/cli-process';
import { type TestUser, unique } from './support/fixtures';
import { listenOnLoopback } from './support/listening-app';
import { orgScenario } from './support/scenario';
import type { TestApp } from './support/test-app';

/** `fleethub certs` and `fleethub simulate --cert/--key/--ca` as a user runs them (README "Devices with certificates"). */
describe('fleethub certs and simulate over mTLS', () => {
  let t: TestApp;
  let admin: TestUser;
  let org: string;
  let product: string;
  let url: string;
  let dir: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    ({ t, admin, org, product } = await orgScenario({
      product: unique('product'),
      env: { FLEETHUB_DEVICE_TLS_PORT: '0' },
    }));
    url = (await listenOnLoopback(t)).url;
    dir = await mkdtemp(join(tmpdir(), 'fleethub-certs-cli-'));
    env = { FLEETHUB_DATA_DIR: join(dir, 'data') };
  });
  afterAll(async () => {
    await t.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('makes and registers a CA with JITP, issues a device certificate, and a simulated device connects with it', async () => {
    const certs = join(dir, 'certs');
    const made = await runCliProcess(
      [
        'certs',
        'ca',
        '--url',
        url,
        '--token',
        admin.token,
        '--org',
        org,
        '--jitp-product',
        product,
        '--out',
        certs,
      ],
      env,
    );
    expect(made).toMatchObject({ code: 0, stderr: '' });
    expect(made.stdout).toMatch(
      new RegExp(`^registered CA \\d+ with organization ${org} \\(JITP into ${product}\\)`),
    );
    const listed = await t.http().get(`/api/orgs/${org}/ca_certificates`).set(admin.auth).expect(200);
    expect(listed.body.data).toHaveLength(1);
    // Not twice into the same directory.
    const again = await runCliProcess(
      ['certs', 'ca', '--url', url, '--token', admin.token, '--org', org, '--out', certs],
      env,
    );
    expect(again.code).toBe(2);

    const issued = await runCliProcess(
      ['certs', 'device', '--ca-dir', certs, '--identifier', 'cli-device-1'],
      env,
    );
    expect(issued).toMatchObject({ code: 0, stderr: '' });
    expect(existsSync(join(certs, 'cli-device-1.pem'))).toBe(true);
    expect(existsSync(join(certs, 'cli-device-1-key.pem'))).toBe(true);

    const listener = t.app.get(DeviceTlsListener);
    const simulated = await runCliProcess(
      [
        'simulate',
        '--url',
        `https://127.0.0.1:${listener.port}`,
        '--ca',
        listener.caFile!,
        '--cert',
        join(certs, 'cli-device-1.pem'),
        '--key',
        join(certs, 'cli-device-1-key.pem'),
        '--duration',
        '3',
      ],
      env,
    );
    expect(simulated.code).toBe(0);
    expect(simulated.stdout).toContain('over mTLS as cli-device-1');
    expect(simulated.stdout).toContain('stopped: 1/1 were connected');
    const device = await t
      .http()
      .get(`/api/orgs/${org}/products/${product}/devices/cli-device-1`)
      .set(admin.auth)
      .expect(200);
    expect(device.body.data.firmware_metadata).not.toBeNull();
  });

  it('usage errors: a group without its subcommand, certificates over plain http, mixed credentials', async () => {
    expect((await runCliProcess(['certs'], env)).code).toBe(2);
    const plain = await runCliProcess(
      ['simulate', '--url', url, '--cert', 'x.pem', '--key', 'x-key.pem'],
      env,
    );
    expect(plain).toMatchObject({ code: 2 });
    expect(plain.stderr).toContain('--url must be https:// or wss:// with certificates');
    const mixed = await runCliProcess(
      ['simulate', '--url', 'https://127.0.0.1:1', '--cert', 'x.pem', '--key', 'k', '--secret', 's'],
      env,
    );
    expect(mixed.stderr).toContain('--secret is for shared secrets');
    const noCa = await runCliProcess(
      ['certs', 'device', '--ca-dir', join(dir, 'nothing'), '--identifier', 'd'],
      env,
    );
    expect(noCa).toMatchObject({ code: 2 });
    expect(noCa.stderr).toContain('no CA in');
  });
});
