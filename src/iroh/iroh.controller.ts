import { Body, Controller, Delete, Get, Param, Post, Query, HttpCode } from '@nestjs/common';
import { SetsLocation } from '../common/http/created';
import { ApiParam, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { OrgAccess } from '../common/auth/actor';
import { CurrentAccess, Route } from '../common/auth/decorators';
import { MAX_PAGE_SIZE, PaginationView } from '../common/http/pagination';
import { ApiOperationDoc } from '../common/openapi/api-docs';
import { CreateIrohEndpointDto } from './dto/create-iroh-endpoint.dto';
import { IROH_OWNER_TYPES, IrohEndpointView } from './dto/iroh-endpoint.view';
import { type IrohListQuery, IrohListQueryPipe } from './dto/list-iroh-endpoints.query';
import { IrohService } from './iroh.service';

const IDENTIFIER_PARAM = {
  name: 'identifier',
  description: 'The endpoint id (64 hexadecimal characters; matched case-insensitively)',
};

@ApiTags('Iroh Endpoints')
@ApiParam({ name: 'org_name', description: 'Organization name' })
@Controller('api/orgs/:org_name/iroh_endpoints')
export class IrohController {
  constructor(private readonly iroh: IrohService) {}

  @Post()
  @Route('iroh.create')
  @ApiOperationDoc({
    summary: 'Register an iroh endpoint id',
    description:
      'Held by the organization (no `user_email`; a device of the organization that later proves the key ' +
      'claims it) or by a member (`user_email`). Source `operator`. A key registered anywhere answers 409, ' +
      'without saying where.',
    status: 201,
    data: IrohEndpointView,
    errors: [400, 409, 413, 422],
    headers: { Location: { description: 'The endpoint: /api/orgs/{org_name}/iroh_endpoints/{identifier}' } },
  })
  @SetsLocation()
  create(@CurrentAccess() access: OrgAccess, @Body() body: CreateIrohEndpointDto) {
    return this.iroh.create(access, body);
  }

  @Get()
  @Route('iroh.list')
  @ApiQuery({
    name: 'search',
    required: false,
    type: String,
    description:
      'Case-insensitive: the start of an endpoint id, or part of the holding device identifier or member name',
  })
  @ApiQuery({
    name: 'owner',
    required: false,
    enum: IROH_OWNER_TYPES,
    description: 'What holds the endpoint',
  })
  @ApiQuery({
    name: 'pagination[page]',
    required: false,
    schema: { type: 'integer', minimum: 1 },
    description: 'Page number (≥ 1, default 1); `page` is accepted too. Without pagination, all endpoints.',
  })
  @ApiQuery({
    name: 'pagination[page_size]',
    required: false,
    schema: { type: 'integer', minimum: 1, maximum: MAX_PAGE_SIZE },
    description: `Page size (1–${MAX_PAGE_SIZE}, default 10); \`page_size\` is accepted too`,
  })
  @ApiOperationDoc({
    summary: "The organization's iroh endpoints, newest first",
    description: '`pagination` is present only when a pagination parameter was given.',
    data: [IrohEndpointView],
    extra: { pagination: PaginationView },
    errors: [422],
  })
  list(@CurrentAccess() access: OrgAccess, @Query(IrohListQueryPipe) query: IrohListQuery) {
    return this.iroh.list(access, query);
  }

  @Get(':identifier')
  @Route('iroh.show')
  @ApiParam(IDENTIFIER_PARAM)
  @ApiOperationDoc({ summary: 'One iroh endpoint', data: IrohEndpointView })
  show(@CurrentAccess() access: OrgAccess, @Param('identifier') identifier: string) {
    return this.iroh.show(access, identifier);
  }

  @Delete(':identifier')
  @Route('iroh.delete')
  @ApiParam(IDENTIFIER_PARAM)
  @ApiOperationDoc({
    summary: 'Remove an iroh endpoint',
    description: 'A device-reported endpoint is recorded again the next time the device reports it.',
    status: 204,
  })
  @HttpCode(204)
  remove(@CurrentAccess() access: OrgAccess, @Param('identifier') identifier: string) {
    return this.iroh.remove(access, identifier);
  }
}
