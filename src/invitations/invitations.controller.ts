import { Body, Controller, Delete, Get, HttpCode, Param, Post, Res } from '@nestjs/common';
import { ApiParam, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import type { OrgAccess } from '../common/auth/actor';
import { CurrentAccess, Route } from '../common/auth/decorators';
import { SetsLocation } from '../common/http/created';
import { ApiOperationDoc } from '../common/openapi/api-docs';
import { AddMemberDto, MemberView } from '../members/dto/member.dto';
import { InvitationView } from './dto/invitation.dto';
import { InvitationsService } from './invitations.service';

@ApiTags('Organization Members')
@ApiParam({ name: 'org_name', description: 'Organization name' })
@Controller('api/orgs/:org_name')
export class InvitationsController {
  constructor(private readonly invitations: InvitationsService) {}

  @Post('users/invite')
  @Route('members.invite')
  @ApiOperationDoc({
    summary: 'Add a user to the organization, or invite an email without an account',
    description:
      "NervesHub's route. A registered email joins at once: 201 with the member. Any other email gets an " +
      'invitation (204, as NervesHub): mailed when FLEETHUB_SMTP_URL is set, and listed with its link by ' +
      '`GET /api/orgs/{org_name}/invitations`. It expires after 48 hours; inviting the email again replaces it. ' +
      'Audited.',
    status: 201,
    data: MemberView,
    errors: [400, 413, 422],
    headers: { Location: { description: '/api/orgs/{org_name}/users/{email}' } },
  })
  @ApiResponse({ status: 204, description: 'An invitation was made (the email has no account)' })
  @SetsLocation()
  async invite(
    @CurrentAccess() access: OrgAccess,
    @Body() body: AddMemberDto,
    @Res({ passthrough: true }) res: Response,
  ) {
    const result = await this.invitations.invite(access, body.email, body.role);
    if (result !== 'invited') return result;
    res.status(204);
    return undefined;
  }

  @Get('invitations')
  @Route('invitations.list')
  @ApiOperationDoc({
    summary: "List the organization's pending invitations, with their links",
    description:
      'Extension of NervesHub (admins only). Newest first; accepted, withdrawn and expired ones are not listed.',
    data: [InvitationView],
  })
  list(@CurrentAccess() access: OrgAccess) {
    return this.invitations.list(access);
  }

  @Delete('invitations/:email')
  @Route('invitations.revoke')
  @ApiParam({ name: 'email', description: 'The invited email' })
  @ApiOperationDoc({
    summary: 'Withdraw a pending invitation',
    description: 'Extension of NervesHub (admins only). Its link stops working at once. Audited.',
    status: 204,
  })
  @HttpCode(204)
  revoke(@CurrentAccess() access: OrgAccess, @Param('email') email: string) {
    return this.invitations.revoke(access, email);
  }
}
