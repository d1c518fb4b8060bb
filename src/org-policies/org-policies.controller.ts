import { Body, Controller, Get, Patch } from '@nestjs/common';
import { ApiParam, ApiTags } from '@nestjs/swagger';
import type { OrgAccess } from '../common/auth/actor';
import { CurrentAccess, Route } from '../common/auth/decorators';
import { ApiOperationDoc } from '../common/openapi/api-docs';
import { MemberSecurityView, OrgPolicyView, UpdateOrgPolicyDto } from './dto/org-policy.dto';
import { OrgPoliciesService } from './org-policies.service';

@ApiTags('Organization Policies')
@ApiParam({ name: 'org_name', description: 'Organization name' })
@Controller('api/orgs/:org_name/policies')
export class OrgPoliciesController {
  constructor(private readonly policies: OrgPoliciesService) {}

  @Get()
  @Route('policies.show')
  @ApiOperationDoc({
    summary: "The organization's sign-in and token policies",
    description:
      'Extension of 2.0.0. Any member may read them (they say what a member needs to work in the organization).',
    data: OrgPolicyView,
  })
  show(@CurrentAccess() access: OrgAccess) {
    return this.policies.show(access);
  }

  @Patch()
  @Route('policies.update')
  @ApiOperationDoc({
    summary: "Change the organization's sign-in and token policies",
    description:
      'Extension of 2.0.0. Only the fields sent change (an empty body changes nothing); audited. They hold from ' +
      'the next request on, on every instance: a member without two-factor sign-in where it is required, a ' +
      'personal access token older than `max_token_lifetime_days` or of a scope not in `allowed_token_scopes` ' +
      'is answered 403 `{"errors":{"detail":"<why>"}}` on every route of the organization (its own account ' +
      'routes keep working, so that it can set up what is missing). Browser sessions are not tokens: the token ' +
      'limits do not apply to them.',
    data: OrgPolicyView,
    errors: [400, 413, 422],
  })
  update(@CurrentAccess() access: OrgAccess, @Body() body: UpdateOrgPolicyDto) {
    return this.policies.update(access, body);
  }

  @Get('members')
  @Route('policies.members')
  @ApiOperationDoc({
    summary: 'Which members have two-factor sign-in, and who meets the policy',
    description:
      'Extension of 2.0.0. The members (as the member list, by email) with `two_factor` and `compliant` (false: ' +
      'the policy refuses them in this organization until they turn two-factor sign-in on).',
    data: [MemberSecurityView],
  })
  members(@CurrentAccess() access: OrgAccess) {
    return this.policies.memberSecurity(access);
  }
}
