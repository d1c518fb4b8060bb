import {
  actor,
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
import type { LockedMemberRow } from '../orgs/memberships.repository';
import type { MembershipsRepository } from '../orgs/memberships.repository';
import type { OrgsService } from '../orgs/orgs.service';
import type { UsersService } from '../users/users.service';
import type { TokensService } from '../auth/tokens.service';
import type { BrowserSessionAuthenticator } from '../browser-sessions/browser-session-authenticator';
import { MembersService } from './members.service';

const LAST_ADMIN = 'an organization needs at least one admin: add another admin first';

function setup(member: LockedMemberRow | null = null, otherAdmins = 0) {
  const memberships = {
    lockAdmins: jest.fn(async () => undefined),
    findMemberForUpdate: jest.fn(async () => member),
    countOtherAdmins: jest.fn(async () => otherAdmins),
    updateRole: jest.fn(async () => undefined),
    delete: jest.fn(async () => undefined),
    insert: jest.fn(async () => undefined),
    findMemberUserId: jest.fn(async () => '9'),
  };
  const users = { findSummaryByEmail: jest.fn() };
  const orgs = { findByName: jest.fn() };
  const audit = { record: jest.fn(async () => undefined) };
  const transactions = fakeTransactions();
  const service = new MembersService(
    fake<MembershipsRepository>(memberships),
    fake<OrgsService>(orgs),
    fake<UsersService>(users),
    transactions,
    fake<AuditService>(audit),
    fake<TokensService>({}),
    fake<BrowserSessionAuthenticator>({}),
  );
  return { service, memberships, users, orgs, audit, transactions };
}

const admin: LockedMemberRow = { user_id: '8', email: 'bob@example.com', name: 'Bob', role: 'admin' };
const viewer: LockedMemberRow = { user_id: '9', email: 'eve@example.com', name: 'Eve', role: 'view' };

describe('MembersService: the last admin', () => {
  it('refuses to demote the only admin (409), and changes nothing', async () => {
    const { service, memberships, audit } = setup(admin, 0);
    await expectConflict(service.updateRole(orgAccess, 'bob@example.com', 'manage'), LAST_ADMIN);
    expect(memberships.countOtherAdmins).toHaveBeenCalledWith('3', '8', fakeTx);
    expect(memberships.updateRole).not.toHaveBeenCalled();
    expect(audit.record).not.toHaveBeenCalled();
  });

  it('refuses to remove the only admin (409), and changes nothing', async () => {
    const { service, memberships, audit } = setup(admin, 0);
    await expectConflict(service.remove(orgAccess, 'bob@example.com'), LAST_ADMIN);
    expect(memberships.delete).not.toHaveBeenCalled();
    expect(audit.record).not.toHaveBeenCalled();
  });

  it('demotes an admin when another admin remains', async () => {
    const { service, memberships, audit } = setup(admin, 1);
    await expect(service.updateRole(orgAccess, 'bob@example.com', 'view')).resolves.toEqual({
      data: { email: 'bob@example.com', name: 'Bob', role: 'view' },
    });
    expect(memberships.updateRole).toHaveBeenCalledWith('3', '8', 'view', fakeTx);
    expect(audit.record).toHaveBeenCalledWith(
      fakeTx,
      expect.objectContaining({ action: 'member.update', details: { role: 'view', previous_role: 'admin' } }),
    );
  });

  it('removes an admin when another admin remains', async () => {
    const { service, memberships } = setup(admin, 1);
    await service.remove(orgAccess, 'bob@example.com');
    expect(memberships.delete).toHaveBeenCalledWith('3', '8', fakeTx);
  });

  it('keeps an admin an admin without counting the others', async () => {
    const { service, memberships } = setup(admin, 0);
    await service.updateRole(orgAccess, 'bob@example.com', 'admin');
    expect(memberships.countOtherAdmins).not.toHaveBeenCalled();
    expect(memberships.updateRole).toHaveBeenCalledWith('3', '8', 'admin', fakeTx);
  });

  it('does not count admins to change or remove a non-admin', async () => {
    const { service, memberships } = setup(viewer, 0);
    await service.updateRole(orgAccess, 'eve@example.com', 'admin');
    await service.remove(orgAccess, 'eve@example.com');
    expect(memberships.countOtherAdmins).not.toHaveBeenCalled();
    expect(memberships.updateRole).toHaveBeenCalledWith('3', '9', 'admin', fakeTx);
    expect(memberships.delete).toHaveBeenCalledWith('3', '9', fakeTx);
  });

  it('locks the admin rows before it reads the member, in the same transaction', async () => {
    const { service, memberships, transactions } = setup(admin, 1);
    await service.remove(orgAccess, 'bob@example.com');
    expect(transactions.run).toHaveBeenCalledTimes(1);
    expect(memberships.lockAdmins).toHaveBeenCalledWith('3', fakeTx);
    expect(memberships.lockAdmins.mock.invocationCallOrder[0]).toBeLessThan(
      memberships.findMemberForUpdate.mock.invocationCallOrder[0],
    );
  });

  it('looks the member up by normalised email; an unknown member is a 404', async () => {
    const { service, memberships } = setup(null);
    await expectNotFound(service.updateRole(orgAccess, '  Nobody@Example.COM ', 'view'));
    expect(memberships.findMemberForUpdate).toHaveBeenCalledWith('3', 'nobody@example.com', fakeTx);
    await expectNotFound(service.remove(orgAccess, 'nobody@example.com'));
    expect(memberships.updateRole).not.toHaveBeenCalled();
    expect(memberships.delete).not.toHaveBeenCalled();
  });
});

describe('MembersService: adding a member', () => {
  const user = { id: '12', email: 'carol@example.com', name: 'Carol' };

  it('refuses an email of no registered user (422 email), without a transaction', async () => {
    const { service, users, memberships, transactions } = setup();
    users.findSummaryByEmail.mockResolvedValue(null);
    await expectInvalid(service.add(orgAccess, 'ghost@example.com', 'view'), {
      email: ['does not belong to a registered user'],
    });
    expect(transactions.run).not.toHaveBeenCalled();
    expect(memberships.insert).not.toHaveBeenCalled();
  });

  it('answers an existing member (unique violation) as 422 email', async () => {
    const { service, users, memberships } = setup();
    users.findSummaryByEmail.mockResolvedValue(user);
    memberships.insert.mockRejectedValue(pgError('23505', 'org_memberships_pkey'));
    await expectInvalid(service.add(orgAccess, 'carol@example.com', 'view'), {
      email: ['is already a member'],
    });
  });

  it('rethrows any other failure of the insert', async () => {
    const { service, users, memberships } = setup();
    users.findSummaryByEmail.mockResolvedValue(user);
    const failure = pgError('40P01');
    memberships.insert.mockRejectedValue(failure);
    await expect(service.add(orgAccess, 'carol@example.com', 'view')).rejects.toBe(failure);
  });

  it("adds the user with the role and records who did it; the answer is the user's stored email", async () => {
    const { service, users, memberships, audit } = setup();
    users.findSummaryByEmail.mockResolvedValue(user);
    await expect(service.add(orgAccess, 'Carol@Example.com', 'manage')).resolves.toEqual({
      data: { email: 'carol@example.com', name: 'Carol', role: 'manage' },
    });
    expect(memberships.insert).toHaveBeenCalledWith('3', '12', 'manage', fakeTx);
    expect(audit.record).toHaveBeenCalledWith(fakeTx, {
      orgId: '3',
      actor,
      action: 'member.add',
      targetType: 'member',
      targetId: 'carol@example.com',
      details: { role: 'manage' },
    });
  });

  it('from the CLI: an unknown organization is 422 org; a known one gets the member with no actor', async () => {
    const { service, users, orgs, memberships, audit } = setup();
    orgs.findByName.mockResolvedValue(null);
    await expectInvalid(service.addByOrgName('nope', 'carol@example.com', 'view'), {
      org: ['does not exist'],
    });
    expect(users.findSummaryByEmail).not.toHaveBeenCalled();

    orgs.findByName.mockResolvedValue({ id: '21', name: 'other' });
    users.findSummaryByEmail.mockResolvedValue(user);
    await service.addByOrgName('other', 'carol@example.com', 'admin');
    expect(memberships.insert).toHaveBeenCalledWith('21', '12', 'admin', fakeTx);
    expect(audit.record).toHaveBeenCalledWith(fakeTx, expect.objectContaining({ orgId: '21', actor: null }));
  });

  it('memberUserId looks the email up normalised', async () => {
    const { service, memberships } = setup();
    await expect(service.memberUserId('3', ' Eve@Example.com')).resolves.toBe('9');
    expect(memberships.findMemberUserId).toHaveBeenCalledWith('3', 'eve@example.com');
  });
});
