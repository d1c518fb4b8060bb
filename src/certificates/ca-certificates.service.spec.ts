import { ca, leaf, verificationCert } from '../../test/support/cert-builder';
import {
  expectInvalid,
  expectNotFound,
  fake,
  fakeTransactions,
  fakeTx,
  orgAccess,
  pgError,
} from '../../test/support/unit-fakes';
import type { AuditService } from '../audit/audit.service';
import type { ServerKeyService } from '../device-auth/server-key.service';
import type { ProductsService } from '../products/products.service';
import type { CaCertificatesRepository } from './ca-certificates.repository';
import { CaCertificatesService } from './ca-certificates.service';
import { CA_KEY_HELD_ELSEWHERE, NOT_A_CA, NOT_A_PRODUCT, NOT_SIGNED_BY_CA } from './certificates.errors';
import { VerificationTokens } from './verification-tokens';

function setup() {
  const cas = {
    lockKey: jest.fn(async () => undefined),
    keyHeldElsewhere: jest.fn(async () => false),
    insert: jest.fn(async (values: { serial: string }) => ({ serial: values.serial })),
    deleteBySerial: jest.fn(async () => true),
    findBySerial: jest.fn(async () => null),
    notifyChanged: jest.fn(async () => undefined),
  };
  const products = { findByName: jest.fn(async (): Promise<{ id: string } | null> => ({ id: '9' })) };
  const audit = { record: jest.fn(async () => undefined) };
  const transactions = fakeTransactions();
  const tokens = new VerificationTokens(fake<ServerKeyService>({ subkey: () => Buffer.alloc(32, 1) }));
  const service = new CaCertificatesService(
    fake<CaCertificatesRepository>(cas),
    tokens,
    fake<ProductsService>(products),
    transactions,
    fake<AuditService>(audit),
  );
  /** A CA and a create body with a valid proof for orgAccess's organization. */
  async function body(extra: object = {}) {
    const authority = await ca();
    const proof = await verificationCert(authority, tokens.issue(orgAccess.orgId));
    return { authority, dto: { cert: authority.b64, verification_cert: proof.b64, ...extra } };
  }
  return { service, cas, products, audit, transactions, tokens, body };
}

describe('CaCertificatesService.create', () => {
  it('stores the CA with its key identifiers and JITP template, in one transaction with its audit entry', async () => {
    const { service, cas, audit, body } = setup();
    const { authority, dto } = await body({ jitp: { product_name: 'thermostat', tags: 'a,b' } });
    const created = await service.create(orgAccess, dto);
    expect(created.location).toBe(`/api/orgs/acme/ca_certificates/${authority.serial}`);
    expect(cas.lockKey).toHaveBeenCalledWith(expect.any(Buffer), fakeTx);
    // The device sockets of every instance reload their CAs when this commits.
    expect(cas.notifyChanged).toHaveBeenCalledWith(fakeTx);
    expect(cas.insert).toHaveBeenCalledWith(
      expect.objectContaining({
        orgId: '3',
        serial: authority.serial,
        jitp: { productName: 'thermostat', productId: '9', tags: ['a', 'b'], description: null },
      }),
      fakeTx,
    );
    expect(audit.record).toHaveBeenCalledWith(
      fakeTx,
      expect.objectContaining({ action: 'ca_certificate.create', targetId: authority.serial }),
    );
    expect(created.body.data.jitp).toEqual({
      product_name: 'thermostat',
      tags: ['a', 'b'],
      description: null,
    });
  });

  it('refuses a non-CA and a failed proof before opening any transaction', async () => {
    const { service, transactions, tokens } = setup();
    const notCa = await ca({ isCa: false });
    const proof = await verificationCert(notCa, tokens.issue('3'));
    await expectInvalid(service.create(orgAccess, { cert: notCa.b64, verification_cert: proof.b64 }), {
      cert: [NOT_A_CA],
    });
    const authority = await ca();
    const stranger = await leaf(await ca(), { uris: [`urn:nerveshub:verify:${tokens.issue('3')}`] });
    await expectInvalid(service.create(orgAccess, { cert: authority.b64, verification_cert: stranger.b64 }), {
      verification_cert: [NOT_SIGNED_BY_CA],
    });
    expect(transactions.run).not.toHaveBeenCalled();
  });

  it('a JITP product the organization does not have is 422 jitp.product_name, before any transaction', async () => {
    const { service, products, transactions, body } = setup();
    products.findByName.mockResolvedValue(null);
    const { dto } = await body({ jitp: { product_name: 'nope' } });
    await expectInvalid(service.create(orgAccess, dto), { 'jitp.product_name': [NOT_A_PRODUCT] });
    expect(products.findByName).toHaveBeenCalledWith('3', 'nope');
    expect(transactions.run).not.toHaveBeenCalled();
  });

  it('maps what the database refuses: the serial taken, the product gone, the key held elsewhere', async () => {
    const { service, cas, audit, body } = setup();
    cas.insert.mockRejectedValueOnce(pgError('23505', 'ca_certificates_org_id_serial_key'));
    await expectInvalid(service.create(orgAccess, (await body()).dto), {
      serial: ['has already been taken'],
    });
    cas.insert.mockRejectedValueOnce(pgError('23503'));
    await expectInvalid(service.create(orgAccess, (await body({ jitp: { product_name: 'p' } })).dto), {
      'jitp.product_name': [NOT_A_PRODUCT],
    });
    cas.keyHeldElsewhere.mockResolvedValueOnce(true);
    const insertsBefore = cas.insert.mock.calls.length;
    await expectInvalid(service.create(orgAccess, (await body()).dto), { cert: [CA_KEY_HELD_ELSEWHERE] });
    expect(cas.insert.mock.calls.length).toBe(insertsBefore);
    expect(audit.record).not.toHaveBeenCalled();
  });
});

describe('CaCertificatesService.show and remove', () => {
  it('a serial that cannot be one is a 404 without a query', async () => {
    const { service, cas } = setup();
    await expectNotFound(service.show(orgAccess, 'verification'));
    await expectNotFound(service.remove(orgAccess, '007'));
    expect(cas.findBySerial).not.toHaveBeenCalled();
    expect(cas.deleteBySerial).not.toHaveBeenCalled();
  });

  it('an unknown serial is a 404 and records nothing', async () => {
    const { service, cas, audit } = setup();
    cas.deleteBySerial.mockResolvedValue(false);
    await expectNotFound(service.remove(orgAccess, '42'));
    expect(cas.deleteBySerial).toHaveBeenCalledWith('3', '42', fakeTx);
    expect(audit.record).not.toHaveBeenCalled();
  });
});
