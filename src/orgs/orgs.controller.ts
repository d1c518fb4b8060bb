import { Body, Controller, Get, Post } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { Actor } from '../common/auth/actor';
import { CurrentActor, Route } from '../common/auth/decorators';
import { ApiOperationDoc } from '../common/openapi/api-docs';
import { CreateOrgDto, OrgView, OrgWithRoleView } from './dto/org.dto';
import { OrgsService } from './orgs.service';

@ApiTags('Organizations')
@Controller('api/orgs')
export class OrgsController {
  constructor(private readonly orgs: OrgsService) {}

  @Post()
  @Route('orgs.create')
  @ApiOperationDoc({
    summary: 'Create an organization; the caller becomes its admin',
    description: 'Extension of 2.0.0.',
    status: 201,
    data: OrgView,
    errors: [400, 413, 422],
  })
  create(@CurrentActor() actor: Actor, @Body() body: CreateOrgDto) {
    return this.orgs.createFor(actor, body.name);
  }

  @Get()
  @Route('orgs.list')
  @ApiOperationDoc({
    summary: "The caller's organizations and role in each",
    description: 'Extension of 2.0.0.',
    data: [OrgWithRoleView],
  })
  list(@CurrentActor() actor: Actor) {
    return this.orgs.listFor(actor);
  }
}
