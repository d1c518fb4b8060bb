import { Body, Controller, Delete, Get, Param, Post, HttpCode } from '@nestjs/common';
import { SetsLocation } from '../common/http/created';
import { ApiParam, ApiTags } from '@nestjs/swagger';
import type { OrgAccess } from '../common/auth/actor';
import { CurrentAccess, Route } from '../common/auth/decorators';
import { ApiOperationDoc } from '../common/openapi/api-docs';
import { CreateSigningKeyDto, SigningKeyView } from './dto/signing-key.dto';
import { SigningKeysService } from './signing-keys.service';

@ApiTags('Signing Keys')
@ApiParam({ name: 'org_name', description: 'Organization name' })
@Controller('api/orgs/:org_name/keys')
export class SigningKeysController {
  constructor(private readonly keys: SigningKeysService) {}

  @Post()
  @Route('keys.create')
  @ApiOperationDoc({
    summary: 'Add a firmware signing key',
    description: 'Extension of 2.0.0. fwup firmware uploads must be signed by one of these keys.',
    status: 201,
    data: SigningKeyView,
    errors: [400, 413, 422],
    headers: { Location: { description: '/api/orgs/{org_name}/keys/{name}' } },
  })
  @SetsLocation()
  create(@CurrentAccess() access: OrgAccess, @Body() body: CreateSigningKeyDto) {
    return this.keys.create(access, body.name, body.key);
  }

  @Get()
  @Route('keys.list')
  @ApiOperationDoc({
    summary: "List the organization's signing keys",
    description: 'Extension of 2.0.0.',
    data: [SigningKeyView],
  })
  list(@CurrentAccess() access: OrgAccess) {
    return this.keys.list(access);
  }

  @Get(':name')
  @Route('keys.show')
  @ApiParam({ name: 'name', description: 'Key name' })
  @ApiOperationDoc({ summary: 'Show one signing key', description: 'As NervesHub.', data: SigningKeyView })
  show(@CurrentAccess() access: OrgAccess, @Param('name') name: string) {
    return this.keys.show(access, name);
  }

  @Delete(':name')
  @Route('keys.delete')
  @ApiParam({ name: 'name', description: 'Key name' })
  @ApiOperationDoc({ summary: 'Remove a signing key', description: 'Extension of 2.0.0.', status: 204 })
  @HttpCode(204)
  remove(@CurrentAccess() access: OrgAccess, @Param('name') name: string) {
    return this.keys.remove(access, name);
  }
}
