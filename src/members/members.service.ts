import { Injectable } from '@nestjs/common';
import { AuditService } from '../audit/audit.service';
import { TokensService } from '../auth/tokens.service';
import { BrowserSessionAuthenticator } from '../browser-sessions/browser-session-authenticator';
import type { Actor, OrgAccess } from '../common/auth/actor';
import type { Role } from '../common/auth/roles';
import { DomainError } from '../common/errors/domain-error';
import { isUniqueViolation } from '../common/errors/postgres-errors';
import { type Tx, Transactions } from '../database/transactions';
import { MembershipsRepository } from '../orgs/memberships.repository';
import { OrgsService } from '../orgs/orgs.service';
import { normaliseEmail } from '../users/user-fields';
import { UsersService } from '../users/users.service';
import type { MemberView } from './dto/member.dto';

const LAST_ADMIN = 'an organization needs at least one admin: add another admin first';

@Injectable()
export class MembersService {
  constructor(
    private readonly memberships: MembershipsRepository,
    private readonly orgs: OrgsService,
    private readonly users: UsersService,
    private readonly transactions: Transactions,
    private readonly audit: AuditService,
    private readonly tokens: TokensService,
    private readonly browserSessions: BrowserSessionAuthenticator,
  ) {}

  async list(access: OrgAccess): Promise<{ data: MemberView[] }> {
    return { data: await this.memberships.listMembers(access.orgId) };
  }

  /** The members with their user ids, for features that keep something per user (e.g. the sign-in policy). */
  listWithUserIds(orgId: string): Promise<(MemberView & { userId: string })[]> {
    return this.memberships
      .listMembersWithIds(orgId)
      .then((rows) => rows.map(({ user_id, ...member }) => ({ ...member, userId: user_id })));
  }

  /**
   * Ends every browser session and revokes every personal access token of a member (admin): its sign-ins end
   * everywhere, in every organization (a token is the user's, not the organization's). Audited.
   */
  async endCredentials(
    access: OrgAccess,
    email: string,
  ): Promise<{ data: { sessions_ended: number; tokens_revoked: number } }> {
    const userId = await this.memberships.findMemberUserId(access.orgId, normaliseEmail(email));
    if (userId === null) throw DomainError.notFound();
    const sessions = await this.browserSessions.endAllOfUser(userId);
    const tokens = await this.tokens.revokeAllOfUser(userId);
    await this.transactions.run((tx) =>
      this.audit.record(tx, {
        orgId: access.orgId,
        actor: access.actor,
        action: 'member.credentials_end',
        targetType: 'user',
        targetId: normaliseEmail(email),
        details: { sessions_ended: sessions, tokens_revoked: tokens },
      }),
    );
    return { data: { sessions_ended: sessions, tokens_revoked: tokens } };
  }

  async show(access: OrgAccess, email: string): Promise<{ data: MemberView }> {
    const member = await this.memberships.findMember(access.orgId, normaliseEmail(email));
    if (!member) throw DomainError.notFound();
    return { data: member };
  }

  async add(access: OrgAccess, email: string, role: Role): Promise<{ data: MemberView }> {
    return { data: await this.insert(access.orgId, email, role, access.actor) };
  }

  /** For the CLI: the organization by name. */
  async addByOrgName(orgName: string, email: string, role: Role): Promise<MemberView> {
    const org = await this.orgs.findByName(orgName);
    if (!org) throw DomainError.invalidField('org', 'does not exist');
    return this.insert(org.id, email, role, null);
  }

  /** The user id of the organization's member with this email (any case), or null when not a member. */
  memberUserId(orgId: string, email: string): Promise<string | null> {
    return this.memberships.findMemberUserId(orgId, normaliseEmail(email));
  }

  async updateRole(access: OrgAccess, email: string, role: Role): Promise<{ data: MemberView }> {
    return this.transactions.run(async (tx) => {
      const member = await this.lockedMember(tx, access.orgId, email);
      if (member.role === 'admin' && role !== 'admin')
        await this.assertAnotherAdmin(tx, access.orgId, member.user_id);
      await this.memberships.updateRole(access.orgId, member.user_id, role, tx);
      await this.audit.record(tx, {
        orgId: access.orgId,
        actor: access.actor,
        action: 'member.update',
        targetType: 'member',
        targetId: member.email,
        details: { role, previous_role: member.role },
      });
      return { data: { email: member.email, name: member.name, role } };
    });
  }

  async remove(access: OrgAccess, email: string): Promise<void> {
    await this.transactions.run(async (tx) => {
      const member = await this.lockedMember(tx, access.orgId, email);
      if (member.role === 'admin') await this.assertAnotherAdmin(tx, access.orgId, member.user_id);
      await this.memberships.delete(access.orgId, member.user_id, tx);
      await this.audit.record(tx, {
        orgId: access.orgId,
        actor: access.actor,
        action: 'member.remove',
        targetType: 'member',
        targetId: member.email,
        details: { role: member.role },
      });
    });
  }

  private async insert(
    orgId: string,
    rawEmail: string,
    role: Role,
    actor: Actor | null,
  ): Promise<MemberView> {
    const user = await this.users.findSummaryByEmail(rawEmail);
    if (!user) throw DomainError.invalidField('email', 'does not belong to a registered user');
    try {
      await this.transactions.run(async (tx) => {
        await this.memberships.insert(orgId, user.id, role, tx);
        await this.audit.record(tx, {
          orgId,
          actor,
          action: 'member.add',
          targetType: 'member',
          targetId: user.email,
          details: { role },
        });
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw DomainError.invalidField('email', 'is already a member');
      throw err;
    }
    return { email: user.email, name: user.name, role };
  }

  /**
   * Locks every admin row of the organization, then the member's row, so that two concurrent demotions
   * or removals cannot both pass the "another admin remains" check.
   */
  private async lockedMember(tx: Tx, orgId: string, rawEmail: string) {
    await this.memberships.lockAdmins(orgId, tx);
    const member = await this.memberships.findMemberForUpdate(orgId, normaliseEmail(rawEmail), tx);
    if (!member) throw DomainError.notFound();
    return member;
  }

  private async assertAnotherAdmin(tx: Tx, orgId: string, userId: string): Promise<void> {
    if ((await this.memberships.countOtherAdmins(orgId, userId, tx)) === 0)
      throw DomainError.conflict(LAST_ADMIN);
  }
}
