import {
  expectConflict,
  expectInvalid,
  expectNotFound,
  fake,
  fakeTransactions,
  fakeTx,
  orgAccess,
  pgError,
} from '../../test/support/unit-fakes';
import type { AuditService } from '../audit/audit.service';
import type { MembersService } from '../members/members.service';
import type { EndpointRow } from './endpoint-view';
import type { IrohEndpointsRepository } from './iroh-endpoints.repository';
import { ALREADY_REGISTERED, IrohService, NOT_A_MEMBER } from './iroh.service';

const KEY = 'ab'.repeat(32);

const row: EndpointRow = {
  identifier: KEY,
  service: 'iroh',
  instance: 'default',
  details: {},
  source: 'operator',
  device_id: null,
  user_id: null,
  device_identifier: null,
  user_email: null,
  user_name: null,
  last_reported_at: null,
  inserted_at: new Date('2026-01-01T00:00:00Z'),
  updated_at: new Date('2026-01-01T00:00:00Z'),
};

function setup() {
  const endpoints = {
    insertOperator: jest.fn(async () => row),
    findInOrg: jest.fn(async () => row as EndpointRow | undefined),
    deleteInOrg: jest.fn(async () => 1),
  };
  const members = { memberUserId: jest.fn(async (): Promise<string | null> => '9') };
  const audit = { record: jest.fn(async () => undefined) };
  const transactions = fakeTransactions();
  const service = new IrohService(
    fake<IrohEndpointsRepository>(endpoints),
    fake<MembersService>(members),
    transactions,
    fake<AuditService>(audit),
  );
  return { service, endpoints, members, audit, transactions };
}

describe('IrohService.create (operator registration)', () => {
  it('registers the key lower-cased, held by the organization, default instance and empty details', async () => {
    const { service, endpoints, members } = setup();
    const created = await service.create(orgAccess, { identifier: KEY.toUpperCase() });
    expect(endpoints.insertOperator).toHaveBeenCalledWith(
      { orgId: '3', identifier: KEY, service: 'iroh', instance: 'default', details: {}, userId: null },
      fakeTx,
    );
    expect(members.memberUserId).not.toHaveBeenCalled();
    expect(created.location).toBe(`/api/orgs/acme/iroh_endpoints/${KEY}`);
  });

  it("held by a member: the member's user id, looked up in the caller's organization", async () => {
    const { service, endpoints, members } = setup();
    await service.create(orgAccess, { identifier: KEY, instance: 'b', user_email: 'eve@example.com' });
    expect(members.memberUserId).toHaveBeenCalledWith('3', 'eve@example.com');
    expect(endpoints.insertOperator).toHaveBeenCalledWith(
      expect.objectContaining({ instance: 'b', userId: '9' }),
      fakeTx,
    );
  });

  it('an email of no member is 422 user_email, before any transaction', async () => {
    const { service, members, transactions } = setup();
    members.memberUserId.mockResolvedValue(null);
    await expectInvalid(service.create(orgAccess, { identifier: KEY, user_email: 'x@example.com' }), {
      user_email: [NOT_A_MEMBER],
    });
    expect(transactions.run).not.toHaveBeenCalled();
  });

  it('a key registered anywhere (unique violation) is a 409', async () => {
    const { service, endpoints, audit } = setup();
    endpoints.insertOperator.mockRejectedValue(pgError('23505', 'iroh_endpoints_identifier_key'));
    await expectConflict(service.create(orgAccess, { identifier: KEY }), ALREADY_REGISTERED);
    expect(audit.record).not.toHaveBeenCalled();
  });

  it("the member's account deleted between lookup and insert (foreign key) is 422 user_email", async () => {
    const { service, endpoints } = setup();
    endpoints.insertOperator.mockRejectedValue(pgError('23503', 'iroh_endpoints_user_id_fkey'));
    await expectInvalid(service.create(orgAccess, { identifier: KEY, user_email: 'eve@example.com' }), {
      user_email: [NOT_A_MEMBER],
    });
  });

  it('a foreign-key failure without a member is rethrown', async () => {
    const { service, endpoints } = setup();
    const failure = pgError('23503', 'iroh_endpoints_org_id_fkey');
    endpoints.insertOperator.mockRejectedValue(failure);
    await expect(service.create(orgAccess, { identifier: KEY })).rejects.toBe(failure);
  });
});

describe('IrohService.show and remove', () => {
  it.each(['xyz', 'ab'.repeat(33), ''])(
    'an identifier that is not an endpoint id (%j) is a 404 without a query',
    async (id) => {
      const { service, endpoints, transactions } = setup();
      await expectNotFound(service.show(orgAccess, id));
      await expectNotFound(service.remove(orgAccess, id));
      expect(endpoints.findInOrg).not.toHaveBeenCalled();
      expect(transactions.run).not.toHaveBeenCalled();
    },
  );

  it("reads and deletes the key lower-cased, in the caller's organization", async () => {
    const { service, endpoints } = setup();
    await service.show(orgAccess, KEY.toUpperCase());
    await service.remove(orgAccess, KEY.toUpperCase());
    expect(endpoints.findInOrg).toHaveBeenCalledWith('3', 'iroh', KEY);
    expect(endpoints.deleteInOrg).toHaveBeenCalledWith('3', 'iroh', KEY, fakeTx);
  });

  it('an unknown key is a 404 (remove records nothing)', async () => {
    const { service, endpoints, audit } = setup();
    endpoints.findInOrg.mockResolvedValue(undefined);
    endpoints.deleteInOrg.mockResolvedValue(0);
    await expectNotFound(service.show(orgAccess, KEY));
    await expectNotFound(service.remove(orgAccess, KEY));
    expect(audit.record).not.toHaveBeenCalled();
  });
});
