import { Controller, Delete, Get, Param, Post, HttpCode } from '@nestjs/common';
import { SetsLocation } from '../common/http/created';
import { ApiParam, ApiTags } from '@nestjs/swagger';
import type { OrgAccess } from '../common/auth/actor';
import { CurrentAccess, Route } from '../common/auth/decorators';
import { ApiOperationDoc } from '../common/openapi/api-docs';
import { SharedSecretCreatedView, SharedSecretView } from './dto/shared-secret.dto';
import { SharedSecretsService } from './shared-secrets.service';

@ApiTags('Products')
@ApiParam({ name: 'org_name', description: 'Organization name' })
@ApiParam({ name: 'product_name', description: 'Product name' })
@Controller('api/orgs/:org_name/products/:product_name/shared_secrets')
export class ProductSharedSecretsController {
  constructor(private readonly secrets: SharedSecretsService) {}

  @Post()
  @Route('sharedSecrets.create')
  @ApiOperationDoc({
    summary: 'Create a product shared secret for device authentication',
    description:
      'Extension of 2.0.0. Devices that connect with this key (`x-nh-key`) and secret (NH1 headers) are ' +
      'registered in the product on their first connection. The secret is shown only in this response; no ' +
      'request body is needed.',
    status: 201,
    data: SharedSecretCreatedView,
    errors: [400, 413],
    headers: {
      Location: { description: '/api/orgs/{org_name}/products/{product_name}/shared_secrets/{key}' },
    },
  })
  @SetsLocation()
  create(@CurrentAccess() access: OrgAccess, @Param('product_name') productName: string) {
    return this.secrets.createForProduct(access, productName);
  }

  @Get()
  @Route('sharedSecrets.list')
  @ApiOperationDoc({
    summary: "List a product's shared secret keys",
    description: 'Extension of 2.0.0. Oldest first, deactivated keys included; never the secrets.',
    data: [SharedSecretView],
  })
  list(@CurrentAccess() access: OrgAccess, @Param('product_name') productName: string) {
    return this.secrets.listForProduct(access, productName);
  }

  @Delete(':key')
  @Route('sharedSecrets.delete')
  @ApiParam({ name: 'key', description: 'The access key, `nhp_...`' })
  @ApiOperationDoc({
    summary: 'Deactivate a product shared secret',
    description:
      'Extension of 2.0.0. Devices can no longer authenticate with the key; it stays listed with ' +
      '`deactivated_at`. Deactivating it again answers 204 as well; a key of another product is a 404.',
    status: 204,
  })
  @HttpCode(204)
  remove(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') productName: string,
    @Param('key') key: string,
  ) {
    return this.secrets.deactivateForProduct(access, productName, key);
  }
}

@ApiTags('Devices')
@ApiParam({ name: 'org_name', description: 'Organization name' })
@ApiParam({ name: 'product_name', description: 'Product name' })
@ApiParam({ name: 'identifier', description: 'Device identifier' })
@Controller('api/orgs/:org_name/products/:product_name/devices/:identifier/shared_secrets')
export class DeviceSharedSecretsController {
  constructor(private readonly secrets: SharedSecretsService) {}

  @Post()
  @Route('deviceSecrets.create')
  @ApiOperationDoc({
    summary: 'Create a device shared secret for device authentication',
    description:
      'Extension of 2.0.0. A device-level key (`nhd_...`) and secret, valid only for this device: the ' +
      'identifier the device signs must be its own. The secret is shown only in this response; no request ' +
      'body is needed.',
    status: 201,
    data: SharedSecretCreatedView,
    errors: [400, 413],
    headers: {
      Location: {
        description: '/api/orgs/{org_name}/products/{product_name}/devices/{identifier}/shared_secrets/{key}',
      },
    },
  })
  @SetsLocation()
  create(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') productName: string,
    @Param('identifier') identifier: string,
  ) {
    return this.secrets.createForDevice(access, productName, identifier);
  }
}
