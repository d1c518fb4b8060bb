import { actor, expectInvalid, fake, fakeTransactions, fakeTx, pgError } from '../../test/support/unit-fakes';
import type { AuditService } from '../audit/audit.service';
import type { MembershipsRepository } from './memberships.repository';
import type { OrgsRepository } from './orgs.repository';
import { OrgsService } from './orgs.service';

const NAME_RULE = 'must be 1-64 characters: letters, digits, "_" or "-"';

function setup() {
  const orgs = { insert: jest.fn(async () => ({ id: '3', name: 'acme' })), findByName: jest.fn() };
  const memberships = { insertOwner: jest.fn(async () => undefined), listOrgsOfUser: jest.fn() };
  const audit = { record: jest.fn(async () => undefined) };
  const transactions = fakeTransactions();
  const service = new OrgsService(
    fake<OrgsRepository>(orgs),
    fake<MembershipsRepository>(memberships),
    transactions,
    fake<AuditService>(audit),
  );
  return { service, orgs, memberships, audit, transactions };
}

describe('OrgsService.create', () => {
  it.each(['', '   ', 'a b', 'acmé', 'a.b', 'a'.repeat(65), 'slash/name'])(
    'refuses the name %j (422 name) without a transaction',
    async (name) => {
      const { service, transactions } = setup();
      await expectInvalid(service.create('7', name), { name: [NAME_RULE] });
      expect(transactions.run).not.toHaveBeenCalled();
    },
  );

  it.each(['a', 'Acme_Corp-2', 'x'.repeat(64)])('accepts the name %j', async (name) => {
    const { service, orgs } = setup();
    await expect(service.create('7', name)).resolves.toEqual({ data: { name } });
    expect(orgs.insert).toHaveBeenCalledWith(name, fakeTx);
  });

  it('trims the name before checking and storing it', async () => {
    const { service, orgs } = setup();
    await expect(service.create('7', '  acme  ')).resolves.toEqual({ data: { name: 'acme' } });
    expect(orgs.insert).toHaveBeenCalledWith('acme', fakeTx);
  });

  it('makes the creator its first admin in the same transaction, and records it', async () => {
    const { service, memberships, audit, transactions } = setup();
    await service.createFor(actor, 'acme');
    expect(transactions.run).toHaveBeenCalledTimes(1);
    expect(memberships.insertOwner).toHaveBeenCalledWith('3', '7', fakeTx);
    expect(audit.record).toHaveBeenCalledWith(fakeTx, {
      orgId: '3',
      actor,
      action: 'org.create',
      targetType: 'org',
      targetId: 'acme',
      details: { owner_user_id: '7' },
    });
  });

  it('a taken name (unique violation) is 422 name; any other failure is rethrown', async () => {
    const { service, orgs } = setup();
    orgs.insert.mockRejectedValueOnce(pgError('23505', 'orgs_name_key'));
    await expectInvalid(service.create('7', 'acme'), { name: ['has already been taken'] });
    const failure = pgError('23503');
    orgs.insert.mockRejectedValueOnce(failure);
    await expect(service.create('7', 'acme')).rejects.toBe(failure);
  });
});
