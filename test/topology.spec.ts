import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findHaproxy, haproxyConfig } from '../scripts/topology';

const template = readFileSync(join(__dirname, '..', 'docker/haproxy.cfg'), 'utf8');
const params = {
  port: 41000,
  servers: [{ port: 41001 }, { port: 41002 }],
  interMs: 500,
  statsSocket: '/tmp/fleethub-test-haproxy.sock',
  fdLimit: 20_000,
};

describe('scripts/topology.ts: the HAProxy configuration of the no-container topology', () => {
  it("is docker/haproxy.cfg with this machine's addresses, a fast check interval and a stats socket", () => {
    const cfg = haproxyConfig(template, params);
    expect(cfg).toMatch(/^\s*bind 127\.0\.0\.1:41000$/m);
    expect(cfg).not.toMatch(/bind :4000/);
    expect(cfg).toMatch(/^\s*default-server check inter 500ms fastinter 250ms fall 2 rise 2$/m);
    expect(cfg).toMatch(/^\s*stats socket \/tmp\/fleethub-test-haproxy\.sock mode 600 level admin$/m);
    // maxconn fits the descriptors HAProxy may open (two per proxied connection).
    expect(cfg).toMatch(/^\s*maxconn 9950$/m);
    expect(cfg).toMatch(/^\s*server fleethub-1 127\.0\.0\.1:41001$/m);
    expect(cfg).toMatch(/^\s*server fleethub-2 127\.0\.0\.1:41002$/m);
    expect(cfg).toMatch(/^\s*server fleethub-1-fallback 127\.0\.0\.1:41001 backup no-check$/m);
    expect(cfg).toMatch(/^\s*server fleethub-2-fallback 127\.0\.0\.1:41002 backup no-check$/m);
    expect(cfg).not.toMatch(/fleethub-\d:4000/);
    // Everything else is the file's, line for line.
    const rest = (text: string) =>
      text
        .split('\n')
        .filter((l) => !/^\s*(bind|server|default-server|maxconn|stats socket) /.test(l))
        .join('\n')
        .trim();
    expect(rest(cfg)).toBe(rest(template));
    for (const setting of [
      'balance leastconn',
      'option httpchk GET /readyz',
      'option redispatch 1',
      'retries 3',
      'retry-on conn-failure empty-response',
      'timeout tunnel 1h',
    ]) {
      expect(cfg).toContain(`  ${setting}\n`);
    }
  });

  it('refuses a topology whose instances the file does not name', () => {
    expect(() => haproxyConfig(template, { ...params, servers: [{ port: 1 }] })).toThrow(
      'docker/haproxy.cfg names fleethub-2: the topology has 1 instances',
    );
    expect(() =>
      haproxyConfig(template, { ...params, servers: [{ port: 1 }, { port: 2 }, { port: 3 }] }),
    ).toThrow('docker/haproxy.cfg names 2 instances, the topology has 3');
    expect(() => haproxyConfig(template.replace('bind :4000', 'bind :80'), params)).toThrow(
      'docker/haproxy.cfg: no line matching',
    );
  });

  it('says how to install haproxy when it is missing', () => {
    expect(() => findHaproxy(['/nonexistent/haproxy'], '/nonexistent')).toThrow(
      'haproxy is not installed: `apt-get install -y haproxy`',
    );
  });

  it('is accepted by haproxy -c where haproxy is installed (the check script runs it)', () => {
    const bin = ['/usr/sbin/haproxy', '/usr/local/sbin/haproxy'].find((p) => existsSync(p));
    // Without haproxy the check script itself stops with the install hint above; the file's structure is checked.
    if (!bin) return expect(haproxyConfig(template, params)).toContain('backend fleethub');
    expect(findHaproxy([bin], '')).toBe(bin);
    const dir = mkdtempSync(join(tmpdir(), 'fleethub-haproxy-cfg-'));
    try {
      const file = join(dir, 'haproxy.cfg');
      writeFileSync(file, haproxyConfig(template, { ...params, statsSocket: join(dir, 'stats.sock') }));
      const check = spawnSync(bin, ['-c', '-f', file], { encoding: 'utf8' });
      expect({ status: check.status, output: check.stderr }).toEqual({
        status: 0,
        output: expect.any(String),
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
