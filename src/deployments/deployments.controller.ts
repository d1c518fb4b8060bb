import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Put } from '@nestjs/common';
import { ApiBody, ApiExtraModels, ApiParam, ApiTags, getSchemaPath } from '@nestjs/swagger';
import type { OrgAccess } from '../common/auth/actor';
import { CurrentAccess, Route } from '../common/auth/decorators';
import { SetsLocation } from '../common/http/created';
import { ApiOperationDoc } from '../common/openapi/api-docs';
import { DeploymentsService } from './deployments.service';
import {
  CreateDeploymentGroupDto,
  CreateDeploymentGroupWrappedDto,
  DeploymentGroupView,
  DeploymentReleaseView,
  UpdateDeploymentGroupDto,
} from './dto/deployment-group.dto';

const UPDATE_DOC = {
  summary: 'Change a deployment group',
  description:
    'Fields not sent are unchanged (`conditions` keys too). `state` ("on"/"off") is an alias of `is_active`; ' +
    'turning a paused group on clears `paused_reason`. `firmware` (a uuid) creates the next release, whose ' +
    "platform and architecture must be the group's (422). Devices move in and out of groups as their " +
    'conditions say. The body may be wrapped in `{"deployment": {...}}`.',
  data: DeploymentGroupView,
  errors: [400, 413, 422],
};

@ApiTags('Deployment Groups')
@ApiExtraModels(CreateDeploymentGroupDto, CreateDeploymentGroupWrappedDto)
@ApiParam({ name: 'org_name', description: 'Organization name' })
@ApiParam({ name: 'product_name', description: 'Product name' })
@Controller('api/orgs/:org_name/products/:product_name/deployments')
export class DeploymentsController {
  constructor(private readonly deployments: DeploymentsService) {}

  @Get()
  @Route('deployments.list')
  @ApiOperationDoc({
    summary: "List the product's deployment groups",
    description: 'By name, with their current release and live counts.',
    data: [DeploymentGroupView],
  })
  list(@CurrentAccess() access: OrgAccess, @Param('product_name') productName: string) {
    return this.deployments.list(access, productName);
  }

  @Post()
  @Route('deployments.create')
  @ApiBody({
    description:
      'The group, top-level or wrapped in `{"deployment": {...}}`. `name`, `firmware` and `conditions` are ' +
      "required; platform and architecture are the firmware's. Settings not sent take NervesHub's defaults.",
    schema: {
      anyOf: [
        { $ref: getSchemaPath(CreateDeploymentGroupWrappedDto) },
        { $ref: getSchemaPath(CreateDeploymentGroupDto) },
      ],
    },
    examples: {
      wrapped: {
        value: {
          deployment: {
            name: 'production',
            firmware: '3a1f0e3c-8a4e-5d7c-9b2a-0c1d2e3f4a5b',
            conditions: { version: '~> 1.2', tags: ['beta'], tag_operator: 'and' },
          },
        },
      },
      topLevel: {
        value: {
          name: 'production',
          firmware: '3a1f0e3c-8a4e-5d7c-9b2a-0c1d2e3f4a5b',
          conditions: { version: '', tags: [] },
          is_active: true,
        },
      },
    },
  })
  @ApiOperationDoc({
    summary: 'Create a deployment group',
    description: 'Its release 1 runs `firmware`; matching devices of the product join it when it is active.',
    status: 201,
    data: DeploymentGroupView,
    errors: [400, 413, 422],
    headers: { Location: { description: '/api/orgs/{org_name}/products/{product_name}/deployments/{name}' } },
  })
  @SetsLocation()
  create(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') productName: string,
    @Body() body: CreateDeploymentGroupDto,
  ) {
    return this.deployments.create(access, productName, body);
  }

  @Get(':name')
  @Route('deployments.show')
  @ApiParam({ name: 'name', description: 'Deployment group name' })
  @ApiOperationDoc({ summary: 'Show a deployment group', data: DeploymentGroupView })
  show(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') productName: string,
    @Param('name') name: string,
  ) {
    return this.deployments.show(access, productName, name);
  }

  @Get(':name/releases')
  @Route('deployments.releases')
  @ApiParam({ name: 'name', description: 'Deployment group name' })
  @ApiOperationDoc({
    summary: "List a deployment group's releases",
    description: 'Newest first: number 1 at creation, one more each time its firmware changed.',
    data: [DeploymentReleaseView],
  })
  releases(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') productName: string,
    @Param('name') name: string,
  ) {
    return this.deployments.listReleases(access, productName, name);
  }

  @Patch(':name')
  @Route('deployments.update')
  @ApiParam({ name: 'name', description: 'Deployment group name' })
  @ApiOperationDoc(UPDATE_DOC)
  update(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') productName: string,
    @Param('name') name: string,
    @Body() body: UpdateDeploymentGroupDto,
  ) {
    return this.deployments.update(access, productName, name, body);
  }

  @Put(':name')
  @Route('deployments.update')
  @ApiParam({ name: 'name', description: 'Deployment group name' })
  @ApiOperationDoc({ ...UPDATE_DOC, summary: 'Change a deployment group (PUT alias of PATCH)' })
  replace(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') productName: string,
    @Param('name') name: string,
    @Body() body: UpdateDeploymentGroupDto,
  ) {
    return this.deployments.update(access, productName, name, body);
  }

  @Delete(':name')
  @Route('deployments.delete')
  @ApiParam({ name: 'name', description: 'Deployment group name' })
  @ApiOperationDoc({
    summary: 'Delete a deployment group',
    description: 'Its releases and in-flight updates go with it; its devices join their best other match.',
    status: 204,
  })
  @HttpCode(204)
  remove(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') productName: string,
    @Param('name') name: string,
  ) {
    return this.deployments.remove(access, productName, name);
  }
}
