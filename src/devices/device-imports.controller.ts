import { Controller, Get, Headers, Param, Post, Req } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiParam, ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
import type { OrgAccess } from '../common/auth/actor';
import { CurrentAccess, Route } from '../common/auth/decorators';
import { SetsLocation } from '../common/http/created';
import { ApiOperationDoc } from '../common/openapi/api-docs';
import { MAX_IMPORT_ENTRIES, DeviceImportsService } from './device-imports.service';
import { DeviceImportView } from './dto/device-import.dto';

@ApiTags('Devices')
@ApiParam({ name: 'org_name', description: 'Organization name' })
@ApiParam({ name: 'product_name', description: 'Product name' })
@Controller('api/orgs/:org_name/products/:product_name')
export class DeviceImportsController {
  constructor(private readonly imports: DeviceImportsService) {}

  @Post('devices/import')
  @Route('devices.import')
  @ApiOperationDoc({
    summary: 'Import devices and their certificates from a Microchip Trust&GO manifest',
    description:
      `NervesHub's route and body (the manifest, a JSON array of up to ${MAX_IMPORT_ENTRIES} entries, 64 MiB), ` +
      'headers `format` (only `microchip_trust_and_go`, the default) and `tags` (comma-separated, given to the ' +
      'devices it creates). Answers 201 at once with the job (NervesHub: an empty 201), which creates each ' +
      "entry's device (`header.uniqueId`) with its certificate; read its progress and refused entries at the " +
      '`Location`. Idempotent: sending the same manifest again changes nothing (`unchanged`). Audited as one change.',
    status: 201,
    data: DeviceImportView,
    errors: [400, 413, 422],
    headers: {
      Location: { description: '/api/orgs/{org_name}/products/{product_name}/device_imports/{id}' },
    },
  })
  @ApiHeader({ name: 'format', required: false, description: '`microchip_trust_and_go` (the default)' })
  @ApiHeader({ name: 'tags', required: false, description: 'Tags of the devices created, comma-separated' })
  @ApiBody({
    description: "Microchip's Trust&GO manifest",
    schema: {
      type: 'array',
      maxItems: MAX_IMPORT_ENTRIES,
      items: {
        type: 'object',
        properties: {
          header: { type: 'object', properties: { uniqueId: { type: 'string' } } },
          payload: { type: 'string', description: 'base64url JSON with publicKeySet.keys[].x5c' },
          protected: { type: 'string' },
          signature: { type: 'string' },
        },
      },
    },
  })
  @SetsLocation()
  async start(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') product: string,
    @Headers('format') format: string | undefined,
    @Headers('tags') tags: string | undefined,
    @Req() req: Request,
  ) {
    return this.imports.start(access, product, req.body as unknown, format, tags);
  }

  @Get('device_imports/:id')
  @Route('devices.imports.show')
  @ApiParam({ name: 'id', description: 'The import job (from the import answer)' })
  @ApiOperationDoc({
    summary: 'Show a device import: progress, counts and refused entries',
    description: 'Extension of NervesHub (which reports imports in its web UI only).',
    data: DeviceImportView,
  })
  show(@CurrentAccess() access: OrgAccess, @Param('product_name') product: string, @Param('id') id: string) {
    return this.imports.show(access, product, id);
  }
}
