import { readFile } from 'node:fs/promises';
import type WebSocket from 'ws';
import { CertificateDeviceAuthenticator } from '../src/certificates/certificate-authenticator';
import { issue, loadIssuer, makeCa } from '../src/cli/cert-generator';
import { registerCa as registerCaThroughApi } from '../src/cli/certs.command';
import { Simulator } from '../src/cli/simulator';
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import {
  DeviceTlsListener,
  MAX_CONCURRENT_HANDSHAKES,
  TLS_HANDSHAKE_TIMEOUT_MS,
} from '../src/gateway/device-tls-listener';
import { MetricsService } from '../src/metrics/metrics.service';
import { ca, days, type Issued, keyPem, leaf, selfSigned, verificationCert } from './support/cert-builder';
import { DeviceSocketClient } from './support/device-socket-client';
import { eventually } from './support/eventually';
import { type TestUser, unique } from './support/fixtures';
import { listenOnLoopback } from './support/listening-app';
import { orgScenario } from './support/scenario';
import { createTestApp, type TestApp } from './support/test-app';

/**
 * The mTLS device socket over real TLS, with certificates made by cert-builder: each device connects from its own
 * loopback address (127.0.0.x), so that the failure limiter of one test cannot affect another.
 */

let addressCounter = 1;
const nextAddress = () => `127.0.0.${++addressCounter}`;

describe('mTLS device socket', () => {
  let t: TestApp;
  let admin: TestUser;
  let org: string;
  let product: string;
  let port: number;
  let serverCa: string;

  beforeAll(async () => {
    ({ t, admin, org, product } = await orgScenario({
      product: unique('product'),
      env: { FLEETHUB_DEVICE_TLS_PORT: '0', FLEETHUB_RATE_LIMIT_API_PER_MIN: '0' },
    }));
    const listener = t.app.get(DeviceTlsListener);
    port = listener.port!;
    serverCa = await readFile(listener.caFile!, 'utf8');
  });
  afterAll(() => t.close());

  const socketUrl = () => `wss://127.0.0.1:${port}/socket/websocket?vsn=2.0.0`;

  /** TLS client options of a device presenting `device` (and `chain` after it), trusting the server's CA. */
  async function clientOptions(
    device: Issued,
    chain: Issued[] = [],
    localAddress = nextAddress(),
  ): Promise<WebSocket.ClientOptions> {
    return {
      cert: [device, ...chain].map((c) => c.pem).join('\n'),
      key: await keyPem(device),
      ca: serverCa,
      localAddress,
    };
  }

  async function connect(device: Issued, chain: Issued[] = []): Promise<DeviceSocketClient> {
    return DeviceSocketClient.open(socketUrl(), await clientOptions(device, chain));
  }

  /** Connects, joins `device`, and closes: the device got in. */
  async function joins(device: Issued, chain: Issued[] = []): Promise<void> {
    const client = await connect(device, chain);
    try {
      expect((await client.join('device', {}))[4]).toMatchObject({ status: 'ok' });
    } finally {
      await client.close();
    }
  }

  /** The connection is closed without any HTTP answer (refused before HTTP). */
  async function refused(device: Issued, chain: Issued[] = [], localAddress?: string): Promise<void> {
    const outcome = await DeviceSocketClient.outcome(
      socketUrl(),
      await clientOptions(device, chain, localAddress),
    );
    expect(outcome).toHaveProperty('closed');
  }

  async function registerCa(authority: Issued, extra: object = {}, o = org, user = admin): Promise<void> {
    const token = await t
      .http()
      .get(`/api/orgs/${o}/ca_certificates/verification_token`)
      .set(user.auth)
      .expect(200);
    const proof = await verificationCert(authority, token.body.data.verification_token as string);
    await t
      .http()
      .post(`/api/orgs/${o}/ca_certificates`)
      .set(user.auth)
      .send({ cert: authority.b64, verification_cert: proof.b64, ...extra })
      .expect(201);
  }

  const devicePath = (identifier: string) => `/api/orgs/${org}/products/${product}/devices/${identifier}`;

  /** A new device of the product with a self-signed certificate registered for it through the API. */
  async function registeredDevice(): Promise<{ identifier: string; cert: Issued }> {
    const identifier = await t.fixtures.device(admin, org, product);
    const cert = await selfSigned({ cn: identifier });
    await t
      .http()
      .post(`${devicePath(identifier)}/certificates`)
      .set(admin.auth)
      .send({ cert: cert.b64 })
      .expect(201);
    return { identifier, cert };
  }

  async function certificatesOf(identifier: string): Promise<{ serial: string; last_used: string | null }[]> {
    const res = await t
      .http()
      .get(`${devicePath(identifier)}/certificates`)
      .set(admin.auth)
      .expect(200);
    return res.body.data;
  }

  async function refusals(reason: string): Promise<number> {
    const metrics = await t.app.get(MetricsService).scrape();
    const line = metrics
      .split('\n')
      .find((l) => l.startsWith(`fleethub_device_certificate_refusals_total{reason="${reason}"}`));
    return line ? Number(line.split(' ').pop()) : 0;
  }

  it('a registered device certificate (self-signed, registered through the API) connects; last_used is kept', async () => {
    const { identifier, cert } = await registeredDevice();
    await joins(cert);
    const device = await t.http().get(devicePath(identifier)).set(admin.auth).expect(200);
    expect(device.body.data.identifier).toBe(identifier);
    // Written in batches (every 10 s, and at shutdown): flushed now.
    expect((await certificatesOf(identifier))[0].last_used).toBeNull();
    await t.app.get(CertificateDeviceAuthenticator).flushUsage();
    expect((await certificatesOf(identifier))[0].last_used).toEqual(expect.stringMatching(/^\d{4}-/));
  });

  it('a certificate signed by a registered CA (ECDSA P-256) connects as the device its subject names, and is registered', async () => {
    const authority = await ca();
    await registerCa(authority);
    const identifier = await t.fixtures.device(admin, org, product);
    const cert = await leaf(authority, { cn: identifier });
    await joins(cert);
    const registered = await certificatesOf(identifier);
    expect(registered.map((c) => c.serial)).toEqual([cert.serial]);
    // Again: found by its fingerprint now.
    await joins(cert);
  });

  it('RSA: an RSA CA and RSA device certificates', async () => {
    const authority = await ca({ kind: 'rsa' });
    await registerCa(authority);
    const identifier = await t.fixtures.device(admin, org, product);
    await joins(await leaf(authority, { cn: identifier, kind: 'rsa' }));
    // An ECDSA device certificate from the RSA CA, too.
    const other = await t.fixtures.device(admin, org, product);
    await joins(await leaf(authority, { cn: other, kind: 'ec' }));
  });

  it('a chain with an intermediate: the device sends it; without it the registered root cannot be reached', async () => {
    const root = await ca();
    await registerCa(root);
    const intermediate = await ca({ cn: 'intermediate' }, root);
    const identifier = await t.fixtures.device(admin, org, product);
    const cert = await leaf(intermediate, { cn: identifier });
    const before = await refusals('unknown_ca');
    await refused(cert);
    expect(await refusals('unknown_ca')).toBe(before + 1);
    await joins(cert, [intermediate]);
    // A registered intermediate needs nothing more from the device.
    const other = await t.fixtures.device(admin, org, product);
    const intermediate2 = await ca({ cn: 'intermediate 2' }, root);
    await registerCa(intermediate2);
    await joins(await leaf(intermediate2, { cn: other }));
  });

  it('a path longer than the root allows (pathLenConstraint 0) is refused', async () => {
    const root = await ca({ pathLength: 0 });
    await registerCa(root);
    const intermediate = await ca({ cn: 'too deep' }, root);
    const identifier = await t.fixtures.device(admin, org, product);
    const before = await refusals('bad_chain');
    await refused(await leaf(intermediate, { cn: identifier }), [intermediate]);
    expect(await refusals('bad_chain')).toBe(before + 1);
  });

  it('expired and not yet valid device certificates are refused before HTTP, and counted', async () => {
    const authority = await ca();
    await registerCa(authority);
    const identifier = await t.fixtures.device(admin, org, product);
    const expired = { before: await refusals('expired'), after: 0 };
    await refused(await leaf(authority, { cn: identifier, notBefore: days(-10), notAfter: days(-1) }));
    expect(await refusals('expired')).toBe(expired.before + 1);
    const early = await refusals('not_yet_valid');
    await refused(await leaf(authority, { cn: identifier, notBefore: days(1), notAfter: days(10) }));
    expect(await refusals('not_yet_valid')).toBe(early + 1);
    // A registered certificate that expired is refused too.
    const registered = await selfSigned({
      cn: identifier,
      notBefore: new Date(Date.now() - 60_000),
      notAfter: new Date(Date.now() + 1500),
    });
    await t
      .http()
      .post(`${devicePath(identifier)}/certificates`)
      .set(admin.auth)
      .send({ cert: registered.b64 })
      .expect(201);
    await new Promise((resolve) => setTimeout(resolve, 2000));
    await refused(registered);
  });

  it('an expired CA vouches for nothing', async () => {
    const authority = await ca({
      notBefore: new Date(Date.now() - 60_000),
      notAfter: new Date(Date.now() + 2500),
    });
    await registerCa(authority);
    const identifier = await t.fixtures.device(admin, org, product);
    const cert = await leaf(authority, { cn: identifier, notAfter: days(30) });
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const before = await refusals('ca_expired');
    await refused(cert);
    expect(await refusals('ca_expired')).toBe(before + 1);
  });

  it('unknown CA, a device that does not exist (no JITP), a device of another organization: refused', async () => {
    const unknown = await ca();
    const identifier = await t.fixtures.device(admin, org, product);
    await refused(await leaf(unknown, { cn: identifier }));
    await refused(await selfSigned({ cn: identifier }));
    const authority = await ca();
    await registerCa(authority);
    const before = await refusals('device_not_registered');
    await refused(await leaf(authority, { cn: unique('nobody-') }));
    expect(await refusals('device_not_registered')).toBe(before + 1);
    const otherAdmin = await t.fixtures.user();
    const otherOrg = await t.fixtures.org(otherAdmin);
    const otherProduct = await t.fixtures.product(otherAdmin, otherOrg);
    const foreign = await t.fixtures.device(otherAdmin, otherOrg, otherProduct);
    await refused(await leaf(authority, { cn: foreign }));
    expect(await refusals('device_in_other_org')).toBeGreaterThan(0);
    // No certificate at all.
    const outcome = await DeviceSocketClient.outcome(socketUrl(), {
      ca: serverCa,
      localAddress: nextAddress(),
    });
    expect(outcome).toHaveProperty('closed');
  });

  it('a deleted CA: its devices are refused, the certificates registered on its authority are gone', async () => {
    const authority = await ca();
    await registerCa(authority);
    const identifier = await t.fixtures.device(admin, org, product);
    const cert = await leaf(authority, { cn: identifier });
    await joins(cert);
    expect(await certificatesOf(identifier)).toHaveLength(1);
    await t.http().delete(`/api/orgs/${org}/ca_certificates/${authority.serial}`).set(admin.auth).expect(204);
    expect(await certificatesOf(identifier)).toHaveLength(0);
    await refused(cert);
  });

  it('a deleted device certificate is refused', async () => {
    const { identifier, cert } = await registeredDevice();
    await joins(cert);
    await t
      .http()
      .delete(`${devicePath(identifier)}/certificates/${cert.serial}`)
      .set(admin.auth)
      .expect(204);
    await refused(cert);
  });

  it('a device with a certificate gets no other key through a CA (only a renewal of its key)', async () => {
    const authority = await ca();
    await registerCa(authority);
    const identifier = await t.fixtures.device(admin, org, product);
    const first = await leaf(authority, { cn: identifier });
    await joins(first);
    // Renewal: same key, new certificate.
    await joins(await leaf(authority, { cn: identifier, keys: first.keys }));
    expect(await certificatesOf(identifier)).toHaveLength(2);
    const before = await refusals('unexpected_public_key');
    await refused(await leaf(authority, { cn: identifier }));
    expect(await refusals('unexpected_public_key')).toBe(before + 1);
  });

  describe('JITP', () => {
    let jitpProduct: string;
    let authority: Issued;

    beforeAll(async () => {
      jitpProduct = await t.fixtures.product(admin, org, unique('jitp'));
      authority = await ca();
      await registerCa(authority, {
        jitp: {
          product_name: jitpProduct,
          tags: ['jitp', 'field'],
          description: 'provisioned on first connect',
        },
      });
    });

    it('creates the device in the template product with its tags and description, and registers the certificate', async () => {
      const identifier = unique('jitp-');
      await joins(await leaf(authority, { cn: identifier }));
      const res = await t
        .http()
        .get(`/api/orgs/${org}/products/${jitpProduct}/devices/${identifier}`)
        .set(admin.auth)
        .expect(200);
      expect(res.body.data).toMatchObject({
        identifier,
        tags: 'jitp,field',
        description: 'provisioned on first connect',
      });
      const certs = await t
        .http()
        .get(`/api/orgs/${org}/products/${jitpProduct}/devices/${identifier}/certificates`)
        .set(admin.auth)
        .expect(200);
      expect(certs.body.data).toHaveLength(1);
      const audit = await t.db.query(`SELECT action FROM audit_logs WHERE target_id = $1 ORDER BY id`, [
        identifier,
      ]);
      expect(audit.map((row: { action: string }) => row.action)).toEqual([
        'device.register',
        'device_certificate.create',
      ]);
    });

    it('concurrent first connections create each device exactly once (one certificate connecting 40 times, 40 devices at once)', async () => {
      const same = unique('jitp-same-');
      const sameCert = await leaf(authority, { cn: same });
      const many = await Promise.all(
        Array.from({ length: 40 }, (_, i) => leaf(authority, { cn: `${same}-${i}` })),
      );
      const attempts = [...Array.from({ length: 40 }, () => sameCert), ...many];
      const clients = await Promise.all(attempts.map((cert) => connect(cert)));
      await Promise.all(clients.map((c) => c.close()));
      const rows: { identifier: string; certificates: string }[] = await t.db.query(
        `SELECT d.identifier, count(dc.id) AS certificates FROM devices d
           LEFT JOIN device_certificates dc ON dc.device_id = d.id
          WHERE d.identifier LIKE $1 GROUP BY d.identifier`,
        [`${same}%`],
      );
      expect(rows).toHaveLength(41);
      expect(rows.every((row) => Number(row.certificates) === 1)).toBe(true);
      const registrations = await t.db.query(
        `SELECT count(*)::int AS n FROM audit_logs WHERE action = 'device.register' AND target_id LIKE $1`,
        [`${same}%`],
      );
      expect(registrations[0].n).toBe(41);
    });
  });

  it('an address that keeps failing is refused before its TLS handshake', async () => {
    const address = nextAddress();
    const unknown = await selfSigned({ cn: 'whoever' });
    for (let i = 0; i < 20; i++) await refused(unknown, [], address);
    const before = await refusals('rate_limited');
    await refused(unknown, [], address);
    expect(await refusals('rate_limited')).toBe(before + 1);
    // Another address is not affected.
    const { cert } = await registeredDevice();
    await joins(cert);
  });

  it('handshakes beyond the concurrent limit wait their turn, and connections that send nothing hold no slot', async () => {
    const { cert } = await registeredDevice();
    const quiet = nextAddress();
    const silent = await Promise.all(
      Array.from(
        { length: MAX_CONCURRENT_HANDSHAKES + 20 },
        () =>
          new Promise<Socket>((resolve, reject) => {
            const socket = netConnect({ port, host: '127.0.0.1', localAddress: quiet }, () =>
              resolve(socket),
            );
            socket.once('error', reject);
          }),
      ),
    );
    try {
      const options = await clientOptions(cert);
      const started = Date.now();
      const secured = await Promise.all(
        Array.from(
          { length: MAX_CONCURRENT_HANDSHAKES * 2 },
          () =>
            new Promise<boolean>((resolve) => {
              const socket = tlsConnect({
                socket: netConnect({ port, host: '127.0.0.1', localAddress: options.localAddress }),
                cert: options.cert,
                key: options.key,
                ca: options.ca,
                servername: '127.0.0.1',
              });
              socket.once('secureConnect', () => {
                resolve(true);
                socket.destroy();
              });
              socket.once('error', () => resolve(false));
            }),
        ),
      );
      expect(secured.filter(Boolean)).toHaveLength(MAX_CONCURRENT_HANDSHAKES * 2);
      // Had the silent connections held slots, the handshakes would have waited for them to time out.
      expect(Date.now() - started).toBeLessThan(TLS_HANDSHAKE_TIMEOUT_MS);
      await joins(cert);
    } finally {
      for (const socket of silent) socket.destroy();
    }
  });

  it("fleethub certs' registration through the API, and simulated devices with certificates an issuer makes (JITP)", async () => {
    const jitpProduct = await t.fixtures.product(admin, org, unique('sim'));
    const { url } = await listenOnLoopback(t);
    const authority = await makeCa('simulated fleet CA');
    await registerCaThroughApi(url, admin.token, org, authority, {
      jitp: { product_name: jitpProduct, tags: ['sim'], description: null },
    });
    const issuer = await loadIssuer(authority.cert, authority.key);
    const simulator = new Simulator({
      url: `https://127.0.0.1:${port}`,
      devices: 3,
      prefix: unique('simcert-'),
      certificates: { ca: serverCa, forDevice: (identifier) => issue(issuer, { cn: identifier }) },
    });
    simulator.start(0);
    try {
      const joined = await eventually(
        () => simulator.connected,
        (n) => n === 3,
        15_000,
      );
      expect(joined).toBe(3);
    } finally {
      await simulator.stop();
    }
    const res = await t
      .http()
      .get(`/api/orgs/${org}/products/${jitpProduct}/devices`)
      .set(admin.auth)
      .expect(200);
    expect(res.body.data).toHaveLength(3);
  });

  describe('refused inside the TLS 1.2 handshake, with the alert that says why', () => {
    /**
     * What a TLS 1.2 client (NervesHubLink offers TLS 1.2 only; Node's client is OpenSSL's, as Erlang's reads the
     * same records) gets from the handshake: 'secure' (the server sent its Finished), or the server's alert.
     */
    async function handshake12(
      device: Issued | null,
      chain: Issued[] = [],
      target = { port, ca: serverCa },
    ): Promise<'secure' | { alert: number; code: string }> {
      const key = device ? await keyPem(device) : undefined;
      return new Promise((resolve) => {
        const socket = tlsConnect({
          socket: netConnect({ port: target.port, host: '127.0.0.1', localAddress: nextAddress() }),
          host: '127.0.0.1',
          ca: target.ca,
          cert: device ? [device, ...chain].map((c) => c.pem).join('\n') : undefined,
          key,
          minVersion: 'TLSv1.2',
          maxVersion: 'TLSv1.2',
        });
        socket.once('secureConnect', () => {
          socket.destroy();
          resolve('secure');
        });
        socket.once('error', (err: Error & { code?: string }) => {
          const alert = /SSL alert number (\d+)/.exec(err.message);
          resolve({ alert: alert ? Number(alert[1]) : 0, code: err.code ?? err.message });
        });
      });
    }

    async function joins12(device: Issued, target = { port, ca: serverCa }): Promise<void> {
      const client = await DeviceSocketClient.open(
        `wss://127.0.0.1:${target.port}/socket/websocket?vsn=2.0.0`,
        { ...(await clientOptions(device)), ca: target.ca, maxVersion: 'TLSv1.2' },
      );
      try {
        expect((await client.join('device', {}))[4]).toMatchObject({ status: 'ok' });
      } finally {
        await client.close();
      }
    }

    it('a certificate no registered CA signed (another CA, self-signed and unregistered): unknown_ca (48), counted', async () => {
      const identifier = await t.fixtures.device(admin, org, product);
      const before = await refusals('unknown_ca');
      expect(await handshake12(await leaf(await ca(), { cn: identifier }))).toEqual({
        alert: 48,
        code: 'ERR_SSL_TLSV1_ALERT_UNKNOWN_CA',
      });
      expect(await handshake12(await selfSigned({ cn: identifier }))).toEqual({
        alert: 48,
        code: 'ERR_SSL_TLSV1_ALERT_UNKNOWN_CA',
      });
      expect(await refusals('unknown_ca')).toBe(before + 2);
    });

    it('expired: the device certificate or an intermediate, certificate_expired (45); not yet valid, bad_certificate (42)', async () => {
      const root = await ca();
      await registerCa(root);
      const identifier = await t.fixtures.device(admin, org, product);
      const before = await refusals('expired');
      expect(
        await handshake12(await leaf(root, { cn: identifier, notBefore: days(-10), notAfter: days(-1) })),
      ).toEqual({ alert: 45, code: 'ERR_SSL_SSLV3_ALERT_CERTIFICATE_EXPIRED' });
      expect(await refusals('expired')).toBe(before + 1);
      const lapsed = await ca({ cn: 'lapsed intermediate', notBefore: days(-10), notAfter: days(-1) }, root);
      expect(await handshake12(await leaf(lapsed, { cn: identifier }), [lapsed])).toEqual({
        alert: 45,
        code: 'ERR_SSL_SSLV3_ALERT_CERTIFICATE_EXPIRED',
      });
      expect(
        await handshake12(await leaf(root, { cn: identifier, notBefore: days(1), notAfter: days(10) })),
      ).toEqual({ alert: 42, code: 'ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE' });
    });

    it('revocation is deletion: a deleted CA and a deleted device certificate are unknown again, unknown_ca (48)', async () => {
      // fleethub keeps no revocation list: a deleted certificate is not "revoked" but unknown, so never
      // certificate_revoked (44).
      const authority = await ca();
      await registerCa(authority);
      const identifier = await t.fixtures.device(admin, org, product);
      const cert = await leaf(authority, { cn: identifier });
      expect(await handshake12(cert)).toBe('secure');
      await t
        .http()
        .delete(`/api/orgs/${org}/ca_certificates/${authority.serial}`)
        .set(admin.auth)
        .expect(204);
      expect(await handshake12(cert)).toEqual({ alert: 48, code: 'ERR_SSL_TLSV1_ALERT_UNKNOWN_CA' });
      const registered = await registeredDevice();
      await joins12(registered.cert);
      await t
        .http()
        .delete(`${devicePath(registered.identifier)}/certificates/${registered.cert.serial}`)
        .set(admin.auth)
        .expect(204);
      expect(await handshake12(registered.cert)).toEqual({
        alert: 48,
        code: 'ERR_SSL_TLSV1_ALERT_UNKNOWN_CA',
      });
    });

    it('still accepted: a certificate registered one by one (self-signed), a registered CA’s, JITP; refused with an alert: no device (certificate_unknown, 46), no certificate (handshake_failure, 40)', async () => {
      await joins12((await registeredDevice()).cert);
      const authority = await ca();
      await registerCa(authority);
      await joins12(await leaf(authority, { cn: await t.fixtures.device(admin, org, product) }));
      const jitpProduct = await t.fixtures.product(admin, org, unique('jitp12'));
      const provisioning = await ca();
      await registerCa(provisioning, { jitp: { product_name: jitpProduct, tags: [], description: null } });
      const newcomer = unique('jitp12-');
      await joins12(await leaf(provisioning, { cn: newcomer }));
      await t
        .http()
        .get(`/api/orgs/${org}/products/${jitpProduct}/devices/${newcomer}`)
        .set(admin.auth)
        .expect(200);

      const notRegistered = await refusals('device_not_registered');
      expect(await handshake12(await leaf(authority, { cn: unique('nobody-') }))).toEqual({
        alert: 46,
        code: 'ERR_SSL_SSLV3_ALERT_CERTIFICATE_UNKNOWN',
      });
      expect(await refusals('device_not_registered')).toBe(notRegistered + 1);
      const none = await refusals('no_certificate');
      expect(await handshake12(null)).toEqual({ alert: 40, code: 'ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE' });
      expect(await refusals('no_certificate')).toBe(none + 1);
    });

    it('a CA registered on another instance is accepted here; deleted there, it is refused here with unknown_ca once the instance bus says so', async () => {
      const other = await createTestApp(
        { FLEETHUB_DEVICE_TLS_PORT: '0', FLEETHUB_RATE_LIMIT_API_PER_MIN: '0' },
        { databaseUrl: t.databaseUrl },
      );
      try {
        const otherListener = other.app.get(DeviceTlsListener);
        const there = { port: otherListener.port!, ca: await readFile(otherListener.caFile!, 'utf8') };
        const authority = await ca();
        await registerCa(authority);
        const identifier = await t.fixtures.device(admin, org, product);
        const cert = await leaf(authority, { cn: identifier });
        await joins12(cert, there);
        await t
          .http()
          .delete(`/api/orgs/${org}/ca_certificates/${authority.serial}`)
          .set(admin.auth)
          .expect(204);
        expect(
          await eventually(
            () => handshake12(cert, [], there),
            (outcome) => outcome !== 'secure' && outcome.alert === 48,
          ),
        ).toEqual({ alert: 48, code: 'ERR_SSL_TLSV1_ALERT_UNKNOWN_CA' });
      } finally {
        await other.close();
      }
    });
  });

  it('plain requests and other paths get nothing but 404', async () => {
    const { cert } = await registeredDevice();
    const outcome = await DeviceSocketClient.outcome(
      `wss://127.0.0.1:${port}/api/users/me?vsn=2.0.0`,
      await clientOptions(cert),
    );
    expect(outcome).toEqual({ status: 404 });
  });
});

describe('certificate proxy mode', () => {
  const SECRET = 'proxy-secret-proxy-secret-proxy-secret-0123';
  let t: TestApp;
  let admin: TestUser;
  let org: string;
  let product: string;
  let base: string;

  beforeAll(async () => {
    ({ t, admin, org, product } = await orgScenario({
      product: unique('product'),
      env: { FLEETHUB_DEVICE_CERT_PROXY_SECRET: SECRET },
    }));
    base = (await listenOnLoopback(t)).url;
  });
  afterAll(() => t.close());

  const url = () => `${base.replace(/^http/, 'ws')}/socket/websocket?vsn=2.0.0`;

  async function registeredCert(): Promise<Issued> {
    const identifier = await t.fixtures.device(admin, org, product);
    const cert = await selfSigned({ cn: identifier });
    await t
      .http()
      .post(`/api/orgs/${org}/products/${product}/devices/${identifier}/certificates`)
      .set(admin.auth)
      .send({ cert: cert.b64 })
      .expect(201);
    return cert;
  }

  it("with the proxy's secret, the certificate in X-Client-Cert (URL-encoded PEM, as nginx sends it) authenticates", async () => {
    const cert = await registeredCert();
    const client = await DeviceSocketClient.open(url(), {
      headers: {
        'x-client-cert': encodeURIComponent(cert.pem),
        'x-fleethub-proxy-secret': SECRET,
        'x-forwarded-for': '203.0.113.7',
      },
    });
    expect((await client.join('device', {}))[4]).toMatchObject({ status: 'ok' });
    await client.close();
    // Base64 of the DER (HAProxy) too.
    const der = Buffer.from(cert.cert.rawData).toString('base64');
    const again = await DeviceSocketClient.open(url(), {
      headers: { 'x-client-cert': der, 'x-fleethub-proxy-secret': SECRET },
    });
    await again.close();
  });

  it('without the right secret the header is worth nothing: 401', async () => {
    const cert = await registeredCert();
    const header = { 'x-client-cert': encodeURIComponent(cert.pem) };
    expect(await DeviceSocketClient.outcome(url(), { headers: header })).toEqual({ status: 401 });
    expect(
      await DeviceSocketClient.outcome(url(), {
        headers: { ...header, 'x-fleethub-proxy-secret': `${SECRET}x` },
      }),
    ).toEqual({ status: 401 });
  });

  it('off by default: the header is ignored', async () => {
    const plain = await orgScenario({ product: unique('product') });
    try {
      const identifier = await plain.t.fixtures.device(plain.admin, plain.org, plain.product);
      const cert = await selfSigned({ cn: identifier });
      await plain.t
        .http()
        .post(`/api/orgs/${plain.org}/products/${plain.product}/devices/${identifier}/certificates`)
        .set(plain.admin.auth)
        .send({ cert: cert.b64 })
        .expect(201);
      const where = (await listenOnLoopback(plain.t)).url.replace(/^http/, 'ws');
      expect(
        await DeviceSocketClient.outcome(`${where}/socket/websocket?vsn=2.0.0`, {
          headers: { 'x-client-cert': encodeURIComponent(cert.pem), 'x-fleethub-proxy-secret': SECRET },
        }),
      ).toEqual({ status: 401 });
    } finally {
      await plain.t.close();
    }
  });
});
