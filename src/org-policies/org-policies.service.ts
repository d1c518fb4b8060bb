import { Injectable } from '@nestjs/common';
import { AuditService } from '../audit/audit.service';
import { TwoFactorService } from '../auth/two-factor.service';
import type { OrgAccess } from '../common/auth/actor';
import { DomainError } from '../common/errors/domain-error';
import { Transactions } from '../database/transactions';
import { MembersService } from '../members/members.service';
import type { MemberSecurityView, OrgPolicyView, UpdateOrgPolicyDto } from './dto/org-policy.dto';
import { type OrgPolicyChange, type OrgPolicyRow, OrgPoliciesRepository } from './org-policies.repository';

const view = (row: OrgPolicyRow): OrgPolicyView => ({
  require_two_factor: row.require_two_factor,
  max_token_lifetime_days: row.max_token_lifetime_days,
  allowed_token_scopes: [...row.allowed_token_scopes].sort(),
  updated_at: row.updated_at === null ? null : row.updated_at.toISOString(),
});

/**
 * An organization's sign-in and token policies (admin). They are enforced by the AuthGuard on every request to
 * the organization (its access query reads them with the membership), so a change holds from the next request on.
 */
@Injectable()
export class OrgPoliciesService {
  constructor(
    private readonly policies: OrgPoliciesRepository,
    private readonly transactions: Transactions,
    private readonly audit: AuditService,
    private readonly members: MembersService,
    private readonly twoFactor: TwoFactorService,
  ) {}

  async show(access: OrgAccess): Promise<{ data: OrgPolicyView }> {
    return { data: view(await this.policies.find(access.orgId)) };
  }

  async update(access: OrgAccess, input: UpdateOrgPolicyDto): Promise<{ data: OrgPolicyView }> {
    const change: OrgPolicyChange = {
      ...(input.require_two_factor !== undefined && { requireTwoFactor: input.require_two_factor }),
      ...(input.max_token_lifetime_days !== undefined && {
        maxTokenLifetimeDays: input.max_token_lifetime_days,
      }),
      ...(input.allowed_token_scopes !== undefined && {
        allowedTokenScopes: [...new Set(input.allowed_token_scopes)].sort(),
      }),
    };
    if (Object.keys(change).length === 0) return this.show(access);
    // An admin cannot require what it lacks itself: it would be refused in the organization at its next request.
    if (change.requireTwoFactor === true) {
      const enabled = await this.twoFactor.enabledAmong([access.actor.userId]);
      if (!enabled.has(access.actor.userId)) {
        throw DomainError.invalidField(
          'require_two_factor',
          'can be turned on only by an admin whose own two-factor sign-in is on',
        );
      }
    }
    const row = await this.transactions.run(async (tx) => {
      const updated = await this.policies.upsert(access.orgId, change, tx);
      await this.audit.record(tx, {
        orgId: access.orgId,
        actor: access.actor,
        action: 'org.policy_update',
        targetType: 'org',
        targetId: access.orgName,
        details: { ...input },
      });
      return updated;
    });
    return { data: view(row) };
  }

  /** Every member with whether two-factor sign-in is on, and whether that meets the policy. */
  async memberSecurity(access: OrgAccess): Promise<{ data: MemberSecurityView[] }> {
    const [members, policy] = await Promise.all([
      this.members.listWithUserIds(access.orgId),
      this.policies.find(access.orgId),
    ]);
    const enabled = await this.twoFactor.enabledAmong(members.map((m) => m.userId));
    return {
      data: members.map(({ userId, ...member }) => ({
        ...member,
        two_factor: enabled.has(userId),
        compliant: !policy.require_two_factor || enabled.has(userId),
      })),
    };
  }
}
