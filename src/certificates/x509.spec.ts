import { createHash } from 'node:crypto';
import { ca, leaf, selfSigned, subjectKeyId } from '../../test/support/cert-builder';
import {
  CERT_MALFORMED,
  CERT_NOT_BASE64,
  CERT_NOT_PEM,
  CERT_SEVERAL,
  isIssuedBy,
  isSerial,
  type ParsedCertificate,
  readCertificateField,
} from './x509';

function read(field: string): ParsedCertificate {
  const parsed = readCertificateField(field);
  if (typeof parsed === 'string') throw new Error(parsed);
  return parsed;
}

describe('readCertificateField', () => {
  it('reads a CA: decimal serial, dates, CA flag, key identifiers, fingerprint of the DER', async () => {
    const root = await ca({ cn: 'Root CA' });
    const parsed = read(root.b64);
    expect(parsed.serial).toBe(BigInt(`0x${root.cert.serialNumber}`).toString(10));
    expect(parsed.serial).toBe(root.serial);
    expect(parsed.notBefore).toEqual(root.cert.notBefore);
    expect(parsed.notAfter).toEqual(root.cert.notAfter);
    expect(parsed.isCa).toBe(true);
    expect(parsed.commonName).toBe('Root CA');
    expect(parsed.ski?.toString('hex')).toBe(subjectKeyId(root));
    expect(parsed.aki).toBeNull();
    expect(parsed.fingerprint).toBe(
      createHash('sha256').update(Buffer.from(root.cert.rawData)).digest('hex'),
    );
    expect(parsed.der.equals(Buffer.from(root.cert.rawData))).toBe(true);
  });

  it("reads a device certificate: not a CA, its issuer's key id, its SAN URIs, the first common name", async () => {
    const root = await ca();
    const device = await leaf(root, { cn: 'device-1', kind: 'rsa', uris: ['urn:a', 'urn:b'] });
    const parsed = read(device.b64);
    expect(parsed.isCa).toBe(false);
    expect(parsed.commonName).toBe('device-1');
    expect(parsed.aki?.toString('hex')).toBe(subjectKeyId(root));
    expect(parsed.sanUris).toEqual(['urn:a', 'urn:b']);
  });

  it('takes base64 wrapped in lines, and the PEM itself', async () => {
    const cert = await selfSigned({ cn: 'x' });
    const wrapped = cert.b64.replace(/(.{76})/g, '$1\n');
    expect(read(wrapped).serial).toBe(cert.serial);
    expect(read(`\n${cert.pem}`).serial).toBe(cert.serial);
  });

  it('names what is wrong with anything else, and never throws', async () => {
    const one = await selfSigned();
    const two = await selfSigned();
    const b64 = (text: string) => Buffer.from(text).toString('base64');
    expect(readCertificateField('')).toBe(CERT_NOT_BASE64);
    expect(readCertificateField('abc')).toBe(CERT_NOT_BASE64);
    expect(readCertificateField('a-b_')).toBe(CERT_NOT_BASE64);
    expect(readCertificateField(b64('hello'))).toBe(CERT_NOT_PEM);
    expect(readCertificateField(b64(one.pem + two.pem))).toBe(CERT_SEVERAL);
    expect(readCertificateField(b64('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n'))).toBe(
      CERT_MALFORMED,
    );
    expect(readCertificateField('-----BEGIN CERTIFICATE-----\n\u0000\n-----END CERTIFICATE-----')).toBe(
      CERT_MALFORMED,
    );
  });
});

describe('isIssuedBy', () => {
  it('follows the chain: root → intermediate → device, and not the other way', async () => {
    const root = read((await ca({ cn: 'Root' })).b64);
    const rootIssued = await ca({ cn: 'Root' });
    const intermediateIssued = await ca({ cn: 'Intermediate' }, rootIssued);
    const deviceIssued = await leaf(intermediateIssued, { cn: 'd' });
    const [r, i, d] = [rootIssued, intermediateIssued, deviceIssued].map((c) => read(c.b64));
    expect(isIssuedBy(i, r)).toBe(true);
    expect(isIssuedBy(d, i)).toBe(true);
    expect(isIssuedBy(d, r)).toBe(false);
    expect(isIssuedBy(r, i)).toBe(false);
    // Same name as the real root, another key.
    expect(isIssuedBy(i, root)).toBe(false);
  });
});

describe('isSerial', () => {
  it.each([
    ['0', true],
    ['5111552077003819958', true],
    ['1'.repeat(60), true],
    ['1'.repeat(61), false],
    ['0123', false],
    ['-1', false],
    ['1e3', false],
    ['abc', false],
    ['', false],
  ])('%s → %s', (value, expected) => {
    expect(isSerial(value)).toBe(expected);
  });
});
