import { ca, days, type Issued, leaf } from '../../test/support/cert-builder';
import { CaTrustSet, type TrustedCa } from './ca-trust';
import { type ParsedCertificate, readCertificateField } from './x509';

function read(issued: Issued): ParsedCertificate {
  const parsed = readCertificateField(issued.pem);
  if (typeof parsed === 'string') throw new Error(parsed);
  return parsed;
}

function trusted(issued: Issued, id = '1', orgId = '1'): TrustedCa {
  return { id, orgId, serial: issued.serial, cert: read(issued), jitp: null };
}

const now = () => Date.now();

describe('CaTrustSet.verify', () => {
  it('a certificate a registered CA issued', async () => {
    const root = await ca();
    const set = new CaTrustSet([trusted(root)]);
    const result = set.verify(read(await leaf(root, { cn: 'd' })), [], now());
    expect(result).toMatchObject({ ok: true, ca: { serial: root.serial }, intermediates: [] });
  });

  it('through intermediates the device sent (any order), and not without them', async () => {
    const root = await ca();
    const a = await ca({ cn: 'a' }, root);
    const b = await ca({ cn: 'b' }, a);
    const device = read(await leaf(b, { cn: 'd' }));
    const set = new CaTrustSet([trusted(root)]);
    expect(set.verify(device, [read(a), read(b)], now())).toMatchObject({ ok: true });
    expect(set.verify(device, [read(b)], now())).toEqual({ ok: false, reason: 'unknown_ca' });
    expect(set.verify(device, [], now())).toEqual({ ok: false, reason: 'unknown_ca' });
  });

  it('the nearest registered CA decides', async () => {
    const root = await ca();
    const a = await ca({ cn: 'a' }, root);
    const set = new CaTrustSet([trusted(root, '1', 'root-org'), trusted(a, '2', 'a-org')]);
    expect(set.verify(read(await leaf(a, { cn: 'd' })), [read(a)], now())).toMatchObject({
      ok: true,
      ca: { orgId: 'a-org' },
    });
  });

  it('path length, dates of the CA and of the intermediates', async () => {
    const strict = await ca({ pathLength: 0 });
    const under = await ca({ cn: 'under' }, strict);
    const set = new CaTrustSet([trusted(strict)]);
    expect(set.verify(read(await leaf(under, { cn: 'd' })), [read(under)], now())).toEqual({
      ok: false,
      reason: 'bad_chain',
    });
    const root = await ca();
    const old = await ca({ cn: 'old', notBefore: days(-10), notAfter: days(-1) }, root);
    expect(
      new CaTrustSet([trusted(root)]).verify(read(await leaf(old, { cn: 'd' })), [read(old)], now()),
    ).toEqual({ ok: false, reason: 'intermediate_expired' });
    const expired = await ca({ notBefore: days(-10), notAfter: days(-1) });
    expect(
      new CaTrustSet([trusted(expired)]).verify(read(await leaf(expired, { cn: 'd' })), [], now()),
    ).toEqual({ ok: false, reason: 'ca_expired' });
  });

  it("a certificate another key signed, under the same name, is not the CA's", async () => {
    const root = await ca({ cn: 'Same Name' });
    const impostor = await ca({ cn: 'Same Name' });
    const set = new CaTrustSet([trusted(root)]);
    expect(set.verify(read(await leaf(impostor, { cn: 'd' })), [], now())).toEqual({
      ok: false,
      reason: 'unknown_ca',
    });
  });
});
