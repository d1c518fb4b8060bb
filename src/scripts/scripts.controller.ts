import { Body, Controller, Delete, Get, Param, Patch, Post, Put, Query, HttpCode } from '@nestjs/common';
import { RendersNervesHubTags } from '../common/http/nerveshub-rendering';
import { SetsLocation } from '../common/http/created';
import { ApiParam, ApiTags } from '@nestjs/swagger';
import type { OrgAccess } from '../common/auth/actor';
import { CurrentAccess, Route } from '../common/auth/decorators';
import { ApiOperationDoc, ApiPaginationQuery } from '../common/openapi/api-docs';
import { PaginationView, type RawQuery } from '../common/http/pagination';
import { CreateScriptDto, ScriptView, UpdateScriptDto } from './dto/script.dto';
import { ScriptsService } from './scripts.service';

const UPDATE_DOC = {
  summary: 'Change a support script',
  description: 'Extension of 2.0.0. Send any of name, text, tags; fields not sent are unchanged.',
  data: ScriptView,
  errors: [400, 413, 422],
};

@ApiTags('Support Scripts')
@ApiParam({ name: 'org_name', description: 'Organization name' })
@ApiParam({ name: 'product_name', description: 'Product name' })
@Controller('api/orgs/:org_name/products/:product_name/scripts')
@RendersNervesHubTags()
export class ScriptsController {
  constructor(private readonly scripts: ScriptsService) {}

  @Post()
  @Route('scripts.create')
  @ApiOperationDoc({
    summary: 'Create a support script',
    description: '`created_by` is the caller. `text` may be up to 256 KiB; tags are normalised.',
    status: 201,
    data: ScriptView,
    errors: [400, 413, 422],
    headers: { Location: { description: '/api/orgs/{org_name}/products/{product_name}/scripts/{id}' } },
  })
  @SetsLocation()
  create(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') productName: string,
    @Body() body: CreateScriptDto,
  ) {
    return this.scripts.create(access, productName, body);
  }

  @Get()
  @Route('scripts.list')
  @ApiPaginationQuery()
  @ApiOperationDoc({
    summary: "List a product's support scripts (oldest first)",
    description: 'Extension of 2.0.0. Paginated like the device list.',
    data: [ScriptView],
    extra: { pagination: PaginationView },
    errors: [422],
  })
  list(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') productName: string,
    @Query() query: RawQuery,
  ) {
    return this.scripts.list(access, productName, query);
  }

  @Get(':id')
  @Route('scripts.show')
  @ApiParam({ name: 'id', description: 'Script id (a numeric string)' })
  @ApiOperationDoc({ summary: 'Show a support script', data: ScriptView })
  show(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') productName: string,
    @Param('id') id: string,
  ) {
    return this.scripts.show(access, productName, id);
  }

  @Put(':id')
  @Route('scripts.update')
  @ApiParam({ name: 'id' })
  @ApiOperationDoc(UPDATE_DOC)
  update(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') productName: string,
    @Param('id') id: string,
    @Body() body: UpdateScriptDto,
  ) {
    return this.scripts.update(access, productName, id, body);
  }

  @Patch(':id')
  @Route('scripts.update')
  @ApiParam({ name: 'id' })
  @ApiOperationDoc({ ...UPDATE_DOC, summary: 'Change a support script (PATCH alias of PUT)' })
  patch(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') productName: string,
    @Param('id') id: string,
    @Body() body: UpdateScriptDto,
  ) {
    return this.scripts.update(access, productName, id, body);
  }

  @Delete(':id')
  @Route('scripts.delete')
  @ApiParam({ name: 'id' })
  @ApiOperationDoc({ summary: 'Delete a support script', description: 'Extension of 2.0.0.', status: 204 })
  @HttpCode(204)
  remove(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') productName: string,
    @Param('id') id: string,
  ) {
    return this.scripts.remove(access, productName, id);
  }
}
