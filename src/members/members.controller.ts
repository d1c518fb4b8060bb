import { Body, Controller, Delete, Get, Param, Post, Put, HttpCode } from '@nestjs/common';
import { ApiParam, ApiTags } from '@nestjs/swagger';
import type { OrgAccess } from '../common/auth/actor';
import { CurrentAccess, Route } from '../common/auth/decorators';
import { ApiOperationDoc } from '../common/openapi/api-docs';
import { AddMemberDto, CredentialsEndedView, MemberView, UpdateMemberDto } from './dto/member.dto';
import { MembersService } from './members.service';

@ApiTags('Organization Members')
@ApiParam({ name: 'org_name', description: 'Organization name' })
@Controller('api/orgs/:org_name/users')
export class MembersController {
  constructor(private readonly members: MembersService) {}

  @Post()
  @Route('members.add')
  @ApiOperationDoc({
    summary: 'Add a registered user to the organization',
    description:
      'Deprecated in 2.0.0 but fully working. `email` must belong to a registered user; `role` is view, manage or admin.',
    status: 201,
    data: MemberView,
    errors: [400, 413, 422],
    deprecated: true,
  })
  add(@CurrentAccess() access: OrgAccess, @Body() body: AddMemberDto) {
    return this.members.add(access, body.email, body.role);
  }

  @Get()
  @Route('members.list')
  @ApiOperationDoc({
    summary: 'List the members and their roles',
    description: 'Extension of 2.0.0.',
    data: [MemberView],
  })
  list(@CurrentAccess() access: OrgAccess) {
    return this.members.list(access);
  }

  @Get(':email')
  @Route('members.show')
  @ApiParam({ name: 'email', description: "The member's email (any case)" })
  @ApiOperationDoc({
    summary: 'Show one member and its role',
    description: 'As NervesHub. A user who is not a member of this organization answers 404.',
    data: MemberView,
  })
  show(@CurrentAccess() access: OrgAccess, @Param('email') email: string) {
    return this.members.show(access, email);
  }

  @Delete(':email/credentials')
  @Route('members.end_credentials')
  @ApiParam({ name: 'email', description: "The member's email" })
  @ApiOperationDoc({
    summary: "End all of a member's sign-ins: its browser sessions and personal access tokens",
    description:
      'Extension of 2.0.0 (admin). Every browser session of the member ends and every personal access token is ' +
      'revoked, on every instance, before the answer; they are the user’s, so its sign-ins end in its other ' +
      'organizations too. The member stays a member and can sign in again. Audited (`member.credentials_end`).',
    data: CredentialsEndedView,
  })
  endCredentials(@CurrentAccess() access: OrgAccess, @Param('email') email: string) {
    return this.members.endCredentials(access, email);
  }

  @Put(':email')
  @Route('members.update')
  @ApiParam({ name: 'email', description: "The member's email" })
  @ApiOperationDoc({
    summary: "Change a member's role",
    description: 'Extension of 2.0.0. Demoting the last admin answers 409.',
    data: MemberView,
    errors: [400, 409, 413, 422],
  })
  update(@CurrentAccess() access: OrgAccess, @Param('email') email: string, @Body() body: UpdateMemberDto) {
    return this.members.updateRole(access, email, body.role);
  }

  @Delete(':email')
  @Route('members.remove')
  @ApiParam({ name: 'email', description: "The member's email" })
  @ApiOperationDoc({
    summary: 'Remove a member',
    description: 'Extension of 2.0.0. Removing the last admin answers 409.',
    status: 204,
    errors: [409],
  })
  @HttpCode(204)
  remove(@CurrentAccess() access: OrgAccess, @Param('email') email: string) {
    return this.members.remove(access, email);
  }
}
