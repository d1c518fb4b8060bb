import { Controller, Delete, Get, Param, Post, Req } from '@nestjs/common';
import { ApiBody, ApiConsumes, ApiParam, ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
import type { OrgAccess } from '../common/auth/actor';
import { CurrentAccess, Route } from '../common/auth/decorators';
import { ApiOperationDoc } from '../common/openapi/api-docs';
import { FirmwareDetailView, FirmwareUploadDto, FirmwareView } from './dto/firmware.dto';
import { FirmwareService } from './firmware.service';

@ApiTags('Firmwares')
@ApiParam({ name: 'org_name', description: 'Organization name' })
@ApiParam({ name: 'product_name', description: 'Product name' })
@Controller('api/orgs/:org_name/products/:product_name/firmwares')
export class FirmwareController {
  constructor(private readonly firmware: FirmwareService) {}

  @Post()
  @Route('firmwares.upload')
  @ApiConsumes('multipart/form-data')
  @ApiBody({ type: FirmwareUploadDto })
  @ApiOperationDoc({
    summary: 'Upload a firmware',
    description:
      'Extension of 2.0.0. A fwup `.fw` archive in the multipart field `firmware`, signed with one of the ' +
      "organization's keys, built for this product (`meta-product`), with a semantic version. Streamed to " +
      'storage; at most 256 MiB unless configured otherwise (413 beyond).',
    status: 201,
    data: FirmwareView,
    errors: [400, 413, 422],
    headers: { Location: { description: '/api/orgs/{org_name}/products/{product_name}/firmwares/{uuid}' } },
  })
  upload(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') product: string,
    @Req() request: Request,
  ) {
    return this.firmware.upload(access, product, request);
  }

  @Get()
  @Route('firmwares.list')
  @ApiOperationDoc({
    summary: "List a product's firmware, newest version first",
    description:
      'Semantic-version precedence, descending (a pre-release below its release); ties by newest upload.',
    data: [FirmwareView],
  })
  list(@CurrentAccess() access: OrgAccess, @Param('product_name') product: string) {
    return this.firmware.list(access, product);
  }

  @Get(':uuid')
  @Route('firmwares.show')
  @ApiParam({ name: 'uuid', format: 'uuid' })
  @ApiOperationDoc({
    summary: 'Show a firmware',
    description: 'Extension of 2.0.0.',
    data: FirmwareDetailView,
  })
  show(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') product: string,
    @Param('uuid') uuid: string,
  ) {
    return this.firmware.show(access, product, uuid);
  }

  @Delete(':uuid')
  @Route('firmwares.delete')
  @ApiParam({ name: 'uuid', format: 'uuid' })
  @ApiOperationDoc({
    summary: 'Delete a firmware',
    description: 'Extension of 2.0.0. 409 while a pending device update targets it.',
    status: 204,
    errors: [409],
  })
  remove(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') product: string,
    @Param('uuid') uuid: string,
  ) {
    return this.firmware.remove(access, product, uuid);
  }
}
