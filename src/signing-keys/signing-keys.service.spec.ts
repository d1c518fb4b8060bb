import { generateFwupKeyPair } from '../../test/support/fw-builder';
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
import { BLANK } from '../common/errors/messages';
import type { OrgsService } from '../orgs/orgs.service';
import { INVALID_KEY, NAME_TOO_LONG, ORG_DOES_NOT_EXIST } from './signing-keys.errors';
import type { SigningKeysRepository } from './signing-keys.repository';
import { SigningKeysService } from './signing-keys.service';

const KEY = generateFwupKeyPair().publicKey;

function setup() {
  const keys = {
    insert: jest.fn(async (values: { orgId: string; name: string; key: string }) => ({
      ...values,
      id: '1',
      insertedAt: new Date('2026-01-01T00:00:00Z'),
    })),
    deleteByName: jest.fn(async () => true),
  };
  const orgs = { findByName: jest.fn(async (): Promise<{ id: string } | null> => ({ id: '21' })) };
  const audit = { record: jest.fn(async () => undefined) };
  const transactions = fakeTransactions();
  const service = new SigningKeysService(
    fake<SigningKeysRepository>(keys),
    transactions,
    fake<OrgsService>(orgs),
    fake<AuditService>(audit),
  );
  return { service, keys, orgs, audit, transactions };
}

describe('SigningKeysService: adding a key', () => {
  it('a blank name is 422 name (blank), without a transaction', async () => {
    const { service, transactions } = setup();
    await expectInvalid(service.create(orgAccess, '', KEY), { name: [BLANK] });
    expect(transactions.run).not.toHaveBeenCalled();
  });

  it('a name of more than 255 characters (code points) is 422 name; 255 emoji are fine', async () => {
    const { service, keys } = setup();
    await expectInvalid(service.create(orgAccess, 'k'.repeat(256), KEY), { name: [NAME_TOO_LONG] });
    expect(keys.insert).not.toHaveBeenCalled();
    await service.create(orgAccess, '🔑'.repeat(255), KEY);
    expect(keys.insert).toHaveBeenCalledTimes(1);
  });

  it.each(['', 'not base64!', Buffer.alloc(31).toString('base64'), `${KEY}=`])(
    'a key that is not a base64 ed25519 public key (%j) is 422 key',
    async (key) => {
      const { service, keys } = setup();
      await expectInvalid(service.create(orgAccess, 'release', key), { key: [INVALID_KEY] });
      expect(keys.insert).not.toHaveBeenCalled();
    },
  );

  it('the name is checked before the key', async () => {
    const { service } = setup();
    await expectInvalid(service.create(orgAccess, '', 'bad'), { name: [BLANK] });
  });

  it('stores and records the key; Location by name', async () => {
    const { service, keys, audit } = setup();
    const created = await service.create(orgAccess, 'release 1', KEY);
    expect(keys.insert).toHaveBeenCalledWith({ orgId: '3', name: 'release 1', key: KEY }, fakeTx);
    expect(audit.record).toHaveBeenCalledWith(
      fakeTx,
      expect.objectContaining({ action: 'signing_key.create', targetId: 'release 1', details: { key: KEY } }),
    );
    expect(created.location).toBe('/api/orgs/acme/keys/release%201');
  });

  it('a name the organization holds already is 422 name', async () => {
    const { service, keys } = setup();
    keys.insert.mockRejectedValue(pgError('23505', 'signing_keys_org_id_name_key'));
    await expectInvalid(service.create(orgAccess, 'release', KEY), { name: ['has already been taken'] });
  });

  it('from the CLI: the name and key are trimmed; an unknown organization is 422 org', async () => {
    const { service, keys, orgs, audit } = setup();
    await service.createByOrgName('other', '  release ', ` ${KEY}\n`);
    expect(keys.insert).toHaveBeenCalledWith({ orgId: '21', name: 'release', key: KEY }, fakeTx);
    expect(audit.record).toHaveBeenCalledWith(fakeTx, expect.objectContaining({ actor: null }));
    orgs.findByName.mockResolvedValue(null);
    await expectInvalid(service.createByOrgName('nope', 'k', KEY), { org: [ORG_DOES_NOT_EXIST] });
  });
});

describe('SigningKeysService.remove', () => {
  it('an unknown name is a 404 and records nothing', async () => {
    const { service, keys, audit } = setup();
    keys.deleteByName.mockResolvedValue(false);
    await expectNotFound(service.remove(orgAccess, 'nope'));
    expect(keys.deleteByName).toHaveBeenCalledWith('3', 'nope', fakeTx);
    expect(audit.record).not.toHaveBeenCalled();
  });
});
