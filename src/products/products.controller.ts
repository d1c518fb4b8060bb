import { Body, Controller, Delete, Get, Param, Patch, Post, Put, HttpCode } from '@nestjs/common';
import { SetsLocation } from '../common/http/created';
import { ApiBody, ApiExtraModels, ApiParam, ApiTags, getSchemaPath } from '@nestjs/swagger';
import type { OrgAccess } from '../common/auth/actor';
import { CurrentAccess, Route } from '../common/auth/decorators';
import { ApiOperationDoc } from '../common/openapi/api-docs';
import {
  ExtensionSettingsBody,
  ExtensionSettingsDto,
  ExtensionSettingsView,
} from '../common/extensions/extension-settings.dto';
import {
  CreateProductDto,
  CreateProductWrappedDto,
  ProductView,
  UpdateProductDto,
  UpdateProductWrappedDto,
} from './dto/product.dto';
import { ProductsService } from './products.service';

const UPDATE_BODY = {
  description:
    'The settings to change, top-level or wrapped in `{"product": {...}}` (NervesHub\'s envelope, what its CLI ' +
    'sends). Booleans may be JSON booleans or the strings `"true"`/`"false"`. Keys beside the envelope are refused ' +
    'like unknown fields.',
  schema: {
    anyOf: [{ $ref: getSchemaPath(UpdateProductDto) }, { $ref: getSchemaPath(UpdateProductWrappedDto) }],
  },
  examples: {
    topLevel: {
      value: { allowed_update_tools: ['fwup', 'esp-idf'], allow_unsigned_esp_idf_firmware: false },
    },
    wrapped: { value: { product: { require_unique_firmware_version: false } } },
    fromTheNervesHubCli: { value: { product: { allow_unsigned_atomvm_firmware: 'true' } } },
  },
};

const UPDATE_DOC = {
  summary: "Change a product's settings",
  description:
    'Only `allow_unsigned_atomvm_firmware`, `allow_unsigned_esp_idf_firmware`, `allowed_update_tools`, ' +
    'and `require_unique_firmware_version` can be set; any other field (`name` included: a product cannot be ' +
    'renamed; `extensions`: see `.../products/{product_name}/extensions`) is a 422 naming it. Fields not sent are unchanged; an empty body changes nothing.',
  data: ProductView,
  errors: [400, 413, 422],
};

@ApiTags('Products')
@ApiExtraModels(CreateProductDto, CreateProductWrappedDto, UpdateProductDto, UpdateProductWrappedDto)
@ApiParam({ name: 'org_name', description: 'Organization name' })
@Controller('api/orgs/:org_name/products')
export class ProductsController {
  constructor(private readonly products: ProductsService) {}

  @Post()
  @Route('products.create')
  @ApiBody({
    description:
      'The spec wraps the product (`{"product":{"name":...}}`); a top-level `{"name":...}` is accepted too.',
    schema: {
      anyOf: [{ $ref: getSchemaPath(CreateProductWrappedDto) }, { $ref: getSchemaPath(CreateProductDto) }],
    },
    examples: {
      wrapped: { value: { product: { name: 'gateway' } } },
      topLevel: { value: { name: 'gateway' } },
    },
  })
  @ApiOperationDoc({
    summary: 'Create a product',
    description:
      'New products have the spec defaults: unsigned AtomVM/ESP-IDF refused, tools `["fwup"]`, unique versions.',
    status: 201,
    data: ProductView,
    errors: [400, 413, 422],
    headers: { Location: { description: '/api/orgs/{org_name}/products/{name}' } },
  })
  @SetsLocation()
  create(@CurrentAccess() access: OrgAccess, @Body() body: CreateProductDto) {
    return this.products.create(access, body);
  }

  @Get()
  @Route('products.list')
  @ApiOperationDoc({
    summary: "List the organization's products",
    description: 'Extension of 2.0.0.',
    data: [ProductView],
  })
  list(@CurrentAccess() access: OrgAccess) {
    return this.products.list(access);
  }

  @Get(':product_name')
  @Route('products.show')
  @ApiParam({ name: 'product_name' })
  @ApiOperationDoc({ summary: 'Show a product', description: 'Extension of 2.0.0.', data: ProductView })
  show(@CurrentAccess() access: OrgAccess, @Param('product_name') name: string) {
    return this.products.show(access, name);
  }

  @Patch(':product_name')
  @Route('products.update')
  @ApiParam({ name: 'product_name' })
  @ApiBody(UPDATE_BODY)
  @ApiOperationDoc(UPDATE_DOC)
  update(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') name: string,
    @Body() body: UpdateProductDto,
  ) {
    return this.products.update(access, name, body);
  }

  @Put(':product_name')
  @Route('products.update')
  @ApiParam({ name: 'product_name' })
  @ApiBody(UPDATE_BODY)
  @ApiOperationDoc({ ...UPDATE_DOC, summary: "Change a product's settings (PUT alias of PATCH)" })
  replace(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') name: string,
    @Body() body: UpdateProductDto,
  ) {
    return this.products.update(access, name, body);
  }

  @Get(':product_name/extensions')
  @Route('products.extensions.show')
  @ApiParam({ name: 'product_name' })
  @ApiOperationDoc({
    summary: 'Show which extensions the product enables',
    description:
      "NervesHub's product extensions (`health`, `geo`, `local_shell`, `logging`, `network_identity`): a device " +
      'attaches an extension only when its product enables it and the device does not opt out ' +
      '(`.../devices/{identifier}/extensions`). New products enable `network_identity` only. Not part of the ' +
      'Product record. Extension of 2.0.0.',
    data: ExtensionSettingsView,
  })
  showExtensions(@CurrentAccess() access: OrgAccess, @Param('product_name') name: string) {
    return this.products.showExtensions(access, name);
  }

  @Patch(':product_name/extensions')
  @Route('products.extensions.update')
  @ApiParam({ name: 'product_name' })
  @ExtensionSettingsBody()
  @ApiOperationDoc({
    summary: 'Enable or disable extensions for the product',
    description:
      'Changes only the names sent (an empty body changes nothing) and answers every setting. Applies from each ' +
      "device's next connection. Audited. Extension of 2.0.0.",
    data: ExtensionSettingsView,
    errors: [400, 413, 422],
  })
  updateExtensions(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') name: string,
    @Body() body: ExtensionSettingsDto,
  ) {
    return this.products.updateExtensions(access, name, body);
  }

  @Delete(':product_name')
  @Route('products.delete')
  @ApiParam({ name: 'product_name' })
  @ApiOperationDoc({
    summary: 'Delete a product',
    description:
      'Extension of 2.0.0. 409 while the product still has devices; its firmware and scripts go with it.',
    status: 204,
    errors: [409],
  })
  @HttpCode(204)
  remove(@CurrentAccess() access: OrgAccess, @Param('product_name') name: string) {
    return this.products.remove(access, name);
  }
}
