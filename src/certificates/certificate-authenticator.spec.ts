import { Registry } from 'prom-client';
import { ca, leaf } from '../../test/support/cert-builder';
import { fake, fakeTransactions } from '../../test/support/unit-fakes';
import type { AuditService } from '../audit/audit.service';
import { loadConfig } from '../config/config';
import type { DeviceRecordsService } from '../devices/device-records.service';
import type { MetricsService } from '../metrics/metrics.service';
import { CaTrustSet } from './ca-trust';
import type { CaTrustStore } from './ca-trust.store';
import type { CertificateAuthRepository } from './certificate-auth.repository';
import { CertificateDeviceAuthenticator, readProxiedCertificates } from './certificate-authenticator';
import type { DeviceCertificatesRepository } from './device-certificates.repository';
import { readCertificateField } from './x509';

describe("readProxiedCertificates (the proxy mode's header)", () => {
  it('reads URL-encoded PEM, PEM with spaces for line breaks, and base64 DER; the device certificate first', async () => {
    const authority = await ca();
    const device = await leaf(authority, { cn: 'd' });
    const der = Buffer.from(device.cert.rawData);
    expect(readProxiedCertificates(encodeURIComponent(device.pem))).toEqual([der]);
    expect(readProxiedCertificates(device.pem.replace(/\n/g, ' '))).toEqual([der]);
    expect(readProxiedCertificates(der.toString('base64'))).toEqual([der]);
    const chain = readProxiedCertificates(encodeURIComponent(`${device.pem}\n${authority.pem}`));
    expect(chain).toEqual([der, Buffer.from(authority.cert.rawData)]);
  });

  it('anything else is nothing', () => {
    for (const value of ['', 'not a certificate', '%E0%A4%A', 'x'.repeat(40_000)]) {
      expect(readProxiedCertificates(value)).toBeNull();
    }
  });
});

describe('CertificateDeviceAuthenticator.resolve and a trust set loaded meanwhile', () => {
  it('judges the chain again against the set loaded between the inspection and the lookup', async () => {
    const authority = await ca();
    const device = await leaf(authority, { cn: 'd' });
    const parsed = readCertificateField(authority.pem);
    if (typeof parsed === 'string') throw new Error(parsed);
    const store = { set: CaTrustSet.empty(), enabled: true, reload: jest.fn(async () => undefined) };
    const repository = {
      findRegistered: jest.fn(async () => ({
        registered: {
          certificate_id: '5',
          ca_certificate_id: '1',
          device_id: '9',
          identifier: 'd',
          product_id: '2',
          org_id: '3',
        },
        maxCaId: 1n,
      })),
    };
    const auth = new CertificateDeviceAuthenticator(
      fake<CaTrustStore>(store),
      fake<CertificateAuthRepository>(repository),
      fake<DeviceCertificatesRepository>({}),
      fake<DeviceRecordsService>({}),
      fakeTransactions(),
      fake<AuditService>({}),
      fake<MetricsService>({ registry: new Registry() }),
      loadConfig({ FLEETHUB_DEVICE_TLS_PORT: '0' }),
    );
    const inspected = auth.inspect(Buffer.from(device.cert.rawData), []);
    if (typeof inspected === 'string') throw new Error(inspected);
    expect(inspected.chain).toEqual({ ok: false, reason: 'unknown_ca' });
    // The CA's notification was heard and its load finished before the lookup came back.
    store.set = new CaTrustSet([{ id: '1', orgId: '3', serial: authority.serial, cert: parsed, jitp: null }]);
    expect(await auth.resolve(inspected)).toEqual({
      deviceId: '9',
      identifier: 'd',
      productId: '2',
      orgId: '3',
      registered: false,
    });
    expect(store.reload).not.toHaveBeenCalled();
  });
});
