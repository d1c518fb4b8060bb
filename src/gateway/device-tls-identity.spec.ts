import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../config/config';
import { DEVICE_TLS_DIR, loadDeviceTlsIdentity } from './device-tls-identity';

describe('the mTLS device socket server identity', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fleethub-tls-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  const config = (env: Record<string, string> = {}) =>
    loadConfig({ FLEETHUB_DATA_DIR: dir, FLEETHUB_DEVICE_TLS_PORT: '4443', ...env });

  it('generates a private CA and a server certificate on first start, and reuses them afterwards', async () => {
    const first = await loadDeviceTlsIdentity(config());
    expect(first.generated).toBe('ca');
    expect(first.caFile).toBe(join(dir, DEVICE_TLS_DIR, 'ca.pem'));
    const ca = new X509Certificate(await readFile(first.caFile!, 'utf8'));
    const server = new X509Certificate(first.cert);
    expect(ca.ca).toBe(true);
    expect(server.checkIssued(ca) && server.verify(ca.publicKey)).toBe(true);
    expect(server.checkHost('localhost')).toBe('localhost');
    expect(server.checkIP('127.0.0.1')).toBe('127.0.0.1');
    for (const key of ['ca-key.pem', 'server-key.pem']) {
      expect((await stat(join(dir, DEVICE_TLS_DIR, key))).mode & 0o777).toBe(0o600);
    }
    const again = await loadDeviceTlsIdentity(config());
    expect(again).toEqual({ ...first, generated: 'nothing' });
  });

  it('a new public host name gets a new server certificate from the same CA', async () => {
    const first = await loadDeviceTlsIdentity(config());
    const renamed = await loadDeviceTlsIdentity(config({ FLEETHUB_PUBLIC_URL: 'https://fleet.example.com' }));
    expect(renamed.generated).toBe('server');
    expect(renamed.cert).not.toBe(first.cert);
    const server = new X509Certificate(renamed.cert);
    expect(server.checkHost('fleet.example.com')).toBe('fleet.example.com');
    expect(server.checkIssued(new X509Certificate(await readFile(first.caFile!, 'utf8')))).toBe(true);
  });
});
