import { HealthFilterDocs } from '../telemetry/health-filter-docs';
import {
  applyDecorators,
  Body,
  Controller,
  Delete,
  Get,
  Param,
  Patch,
  Post,
  Put,
  Query,
  HttpCode,
  Header,
} from '@nestjs/common';
import { RendersNervesHubTags } from '../common/http/nerveshub-rendering';
import { MoveDeviceDto } from './dto/move-device.dto';
import { SetsLocation } from '../common/http/created';
import { ApiParam, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { RawQuery } from '../common/http/pagination';
import { ScriptView } from '../scripts/dto/script.dto';
import type { DeviceAccess, OrgAccess } from '../common/auth/actor';
import { CurrentAccess, Route } from '../common/auth/decorators';
import { PaginationView } from '../common/http/pagination';
import { ApiOperationDoc, ApiPaginationQuery } from '../common/openapi/api-docs';
import {
  ExtensionSettingsBody,
  ExtensionSettingsDto,
  ExtensionSettingsView,
} from '../common/extensions/extension-settings.dto';
import { CONNECTION_STATUSES } from './device.entity';
import { DEVICE_SORTS } from './device-list.query';
import { DeviceBulkService } from './device-bulk.service';
import { DevicesService } from './devices.service';
import { BulkDevicesDto, BulkDevicesResultView } from './dto/bulk-devices.dto';
import { type DeviceListQuery, DeviceListQueryPipe } from './dto/list-devices.query';
import {
  CertificateUnauthorizedBody,
  ConsoleCodeDto,
  CreateDeviceDto,
  DeviceCertificateAuthDto,
  DeviceView,
  PutDeviceDto,
  UpdateDeviceDto,
  UpgradeDto,
} from './dto/device.dto';

const text = (name: string, description: string) =>
  ApiQuery({
    name: `filters[${name}]`,
    required: false,
    description,
    schema: { type: 'string', maxLength: 255 },
  });

/** The script-run routes (both device paths): parameters, text answer, NervesHub's errors. */
const ScriptRunDocs = () =>
  applyDecorators(
    ApiParam({ name: 'name_or_id', description: "The script's name (the oldest of that name), else its id" }),
    ApiQuery({
      name: 'timeout',
      required: false,
      description: "How long to wait for the device's answer, in milliseconds (default 30000)",
      schema: { type: 'integer', minimum: 1, maximum: 300000, default: 30000 },
    }),
    ApiOperationDoc({
      summary: 'Run a support script on a device and answer its output',
      description:
        "NervesHub's script run: the device (device API 2.1.0 and later) evaluates the script and sends back what it " +
        'printed and returned; older devices get it typed into their console. 200 `text/plain` with the output; ' +
        '403 `{"errors":{"detail":"device not available or responding"}}` when the device is not connected or does ' +
        'not answer within `timeout`; 404 for an unknown script. Runs on one device wait for each other. ' +
        "Extension of 2.0.0 (NervesHub's route).",
      text: { mediaType: 'text/plain', description: "The script's output" },
      errors: [422],
    }),
    Header('Content-Type', 'text/plain; charset=utf-8'),
  );

const DeviceListQueryDocs = () =>
  applyDecorators(
    ApiQuery({
      name: 'sort',
      required: false,
      schema: { type: 'string', enum: [...DEVICE_SORTS], default: 'identifier' },
    }),
    ApiQuery({
      name: 'sort_direction',
      required: false,
      schema: { type: 'string', enum: ['asc', 'desc'], default: 'asc' },
    }),
    ApiPaginationQuery(),
    text('identifier', 'Case-insensitive substring of the identifier'),
    text('search', 'Case-insensitive substring of identifier, description, tags or firmware version'),
    text('tags', 'Comma-separated; a device must carry every tag listed'),
    ApiQuery({
      name: 'filters[has_no_tags]',
      required: false,
      schema: { type: 'string', enum: ['true', 'false'] },
    }),
    ApiQuery({
      name: 'filters[connection]',
      required: false,
      schema: { type: 'string', enum: [...CONNECTION_STATUSES] },
    }),
    text('firmware_version', 'Exact reported firmware version'),
    text('platform', 'Exact reported firmware platform'),
    text('deployment_group', 'Name of the deployment group the device belongs to'),
    ApiQuery({
      name: 'filters[updates]',
      required: false,
      schema: { type: 'string', enum: ['enabled', 'disabled', 'penalty-box'] },
    }),
    HealthFilterDocs(),
  );

@ApiTags('Devices')
@ApiParam({ name: 'org_name', description: 'Organization name' })
@ApiParam({ name: 'product_name', description: 'Product name' })
@Controller('api/orgs/:org_name/products/:product_name/devices')
@RendersNervesHubTags()
export class DevicesController {
  constructor(
    private readonly devices: DevicesService,
    private readonly bulk: DeviceBulkService,
  ) {}

  @Post()
  @Route('devices.create')
  @ApiOperationDoc({
    summary: 'Register a device',
    description: 'Extension of 2.0.0. The identifier is unique across the server.',
    status: 201,
    data: DeviceView,
    errors: [400, 413, 422],
    headers: {
      Location: { description: '/api/orgs/{org_name}/products/{product_name}/devices/{identifier}' },
    },
  })
  @SetsLocation()
  create(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') product: string,
    @Body() body: CreateDeviceDto,
  ) {
    return this.devices.create(access, product, body);
  }

  @Get()
  @Route('devices.list')
  @DeviceListQueryDocs()
  @ApiOperationDoc({
    summary: "List a product's devices",
    description:
      'Sorted, filtered and paginated; ties are broken by identifier so pages never overlap or skip. ' +
      'An unknown sort, direction, filter or value, or a page out of range, is a 422 naming the parameter.',
    data: [DeviceView],
    extra: { pagination: PaginationView },
    errors: [422],
  })
  list(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') product: string,
    @Query(DeviceListQueryPipe) query: DeviceListQuery,
  ) {
    return this.devices.list(access, product, query);
  }

  // Before the `:identifier` routes; none of them is a one-segment POST, so `bulk` is never an identifier here.
  @Post('bulk')
  @Route('devices.bulk')
  @ApiOperationDoc({
    summary: 'Change many devices at once',
    description:
      'Extension of 2.0.0 (NervesHub does this in its web UI only). One `action` on the devices named by ' +
      '`identifiers` (at most 1,000; unknown ones are skipped) or on every device matching `filters` (the device ' +
      "list's filters, any number of devices): `add_tags` and `remove_tags` (`tags`), `enable_updates`, " +
      '`disable_updates`, `clear_penalty_box` (as `DELETE .../penalty`), `upgrade` (`uuid`: as `POST ' +
      '.../upgrade`, each device gets the update and leaves automatic updates) and `move` (`new_org_name`, ' +
      '`new_product_name`: as `POST .../move`; manage on the target organization too). Answers how many ' +
      'devices it selected and changed.\n\n' +
      'Identifiers are changed in one transaction. Filters are applied in windows of 5,000 device ids, each in a ' +
      'transaction of its own, so that devices are never held locked for long: a device that comes to match the ' +
      'filter while the request runs may be left out, one that stops matching is left alone, and a request that ' +
      'fails part way leaves the windows done changed (the audit entry says `interrupted`); sending it again ' +
      "finishes it. The request is not cut off by the server's request timeout (a million devices take minutes). " +
      'Deployment group membership follows tag changes; connected devices get an upgrade at once and moved ' +
      'devices reconnect under their new product. One audit entry per request (`device.bulk_<action>`, on the ' +
      'product, with the selection and the counts).',
    data: BulkDevicesResultView,
    errors: [400, 413, 422],
  })
  @HttpCode(200)
  bulkChange(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') product: string,
    @Body() body: BulkDevicesDto,
  ) {
    return this.bulk.apply(access, product, body);
  }

  // Before the `:identifier` routes; none of them is a one-segment POST anyway, so `auth` is never an identifier here.
  @Post('auth')
  @Route('devices.auth')
  @ApiOperationDoc({
    summary: 'Find the device a certificate belongs to',
    description:
      "NervesHub's route: `certificate` is base64 of a PEM certificate (the PEM itself is accepted too). 200 with the " +
      'device, as `GET .../devices/{identifier}` answers it, when exactly this certificate (its SHA-256 fingerprint) ' +
      'was registered for a device of this product; anything else (not base64 of one readable certificate, an ' +
      "unknown certificate, a device of another product or organization) is NervesHub's 403 " +
      '`{"status":"Unauthorized"}`. Nothing is changed. Extension of 2.0.0.',
    data: DeviceView,
    errors: [400, 413, 422],
    nervesHubErrors: {
      403: {
        description:
          'No device of this product holds the certificate: `{"status":"Unauthorized"}` (NervesHub\'s body)',
        types: [CertificateUnauthorizedBody],
      },
    },
  })
  @HttpCode(200)
  auth(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') product: string,
    @Body() body: DeviceCertificateAuthDto,
  ) {
    return this.devices.authByCertificate(access, product, body.certificate);
  }

  @Get(':identifier')
  @Route('devices.show')
  @ApiParam({ name: 'identifier' })
  @ApiOperationDoc({ summary: 'Show a device', description: 'Extension of 2.0.0.', data: DeviceView })
  show(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') product: string,
    @Param('identifier') id: string,
  ) {
    return this.devices.show(access, product, id);
  }

  @Patch(':identifier')
  @Route('devices.update')
  @ApiParam({ name: 'identifier' })
  @ApiOperationDoc({
    summary: "Change a device's description, tags or updates_enabled",
    description: 'Extension of 2.0.0.',
    data: DeviceView,
    errors: [400, 413, 422],
  })
  update(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') product: string,
    @Param('identifier') id: string,
    @Body() body: UpdateDeviceDto,
  ) {
    return this.devices.update(access, product, id, body);
  }

  @Delete(':identifier')
  @Route('devices.delete')
  @ApiParam({ name: 'identifier' })
  @ApiOperationDoc({ summary: 'Delete a device', description: 'Extension of 2.0.0.', status: 204 })
  @HttpCode(204)
  remove(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') product: string,
    @Param('identifier') id: string,
  ) {
    return this.devices.remove(access, product, id);
  }

  @Get(':identifier/extensions')
  @Route('devices.extensions.show')
  @ApiParam({ name: 'identifier' })
  @ApiOperationDoc({
    summary: 'Show which extensions the device allows',
    description:
      '`false`: the device opts out of that extension even where its product enables it ' +
      '(`.../products/{product_name}/extensions`); a device allows every extension until it opts out. Not part of ' +
      'the Device record. Extension of 2.0.0.',
    data: ExtensionSettingsView,
  })
  showExtensions(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') product: string,
    @Param('identifier') id: string,
  ) {
    return this.devices.showExtensions(access, product, id);
  }

  @Patch(':identifier/extensions')
  @Route('devices.extensions.update')
  @ApiParam({ name: 'identifier' })
  @ExtensionSettingsBody()
  @ApiOperationDoc({
    summary: 'Opt the device out of extensions, or allow them again',
    description:
      'Each name sent: `false` opts the device out, `true` allows it again (the strings "true"/"false" too; the ' +
      'body may be wrapped as `{"extensions": {...}}`; an unknown name is a 422 naming it). Names not sent are ' +
      "unchanged; an empty body changes nothing. Applies from the device's next connection. Audited. Extension " +
      'of 2.0.0.',
    data: ExtensionSettingsView,
    errors: [400, 413, 422],
  })
  updateExtensions(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') product: string,
    @Param('identifier') id: string,
    @Body() body: ExtensionSettingsDto,
  ) {
    return this.devices.updateExtensions(access, product, id, body);
  }

  @Post(':identifier/upgrade')
  @Route('devices.upgrade')
  @ApiParam({ name: 'identifier' })
  @ApiOperationDoc({
    summary: 'Push a firmware to a device',
    description:
      'The device gets an update message at once if connected, else when it next connects; a second upgrade before ' +
      'the first is delivered replaces it. `updates_enabled` is not a precondition.',
    status: 204,
    errors: [400, 413, 422],
  })
  @HttpCode(204)
  upgrade(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') product: string,
    @Param('identifier') id: string,
    @Body() body: UpgradeDto,
  ) {
    return this.devices.upgrade(access, product, id, body);
  }

  @Put(':identifier')
  @Route('devices.put')
  @ApiParam({ name: 'identifier' })
  @ApiOperationDoc({
    summary: "Change a device's description, tags or updates_enabled (NervesHub's PUT)",
    description:
      "NervesHub's device update, as its CLI sends it: 201 with the device (NervesHub's status), the identifier may " +
      'be repeated in the body but not changed, `updates_enabled` also as "true"/"false". Extension of 2.0.0.',
    status: 201,
    data: DeviceView,
    errors: [400, 413, 422],
  })
  @HttpCode(201)
  put(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') product: string,
    @Param('identifier') id: string,
    @Body() body: PutDeviceDto,
  ) {
    return this.devices.put(access, product, id, body);
  }

  @Post(':identifier/move')
  @Route('devices.move')
  @ApiParam({ name: 'identifier' })
  @ApiOperationDoc({
    summary: "Move a device to another organization's product",
    description:
      "NervesHub's route. The caller must manage the device's organization and `new_org_name` (not a member " +
      'there, or no such organization or product: 404; a lower role: 403). The device keeps its identity, ' +
      'certificates and secrets, leaves its deployment group and any undelivered update, and is asked to ' +
      'reconnect. Audited in both organizations. Answers the device record.',
    data: DeviceView,
    errors: [400, 413, 422],
  })
  @HttpCode(200)
  move(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') product: string,
    @Param('identifier') id: string,
    @Body() body: MoveDeviceDto,
  ) {
    return this.devices.move(access, product, id, body);
  }

  @Post(':identifier/reboot')
  @Route('devices.reboot')
  @ApiParam({ name: 'identifier' })
  @ApiOperationDoc({
    summary: 'Reboot a device',
    description:
      "NervesHubLink's `reboot` message reaches the device's socket on whichever instance holds it (audited, 204); 409 when the device has no socket joined to the device channel. Extension of 2.0.0 (NervesHub's route).",
    status: 204,
    errors: [409],
  })
  @HttpCode(204)
  reboot(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') product: string,
    @Param('identifier') id: string,
  ) {
    return this.devices.command(access, product, id, 'reboot');
  }

  @Post(':identifier/reconnect')
  @Route('devices.reconnect')
  @ApiParam({ name: 'identifier' })
  @ApiOperationDoc({
    summary: 'Make a device reconnect',
    description:
      "The device's socket is closed on whichever instance holds it, and the device connects again (audited, 204); 409 when it has no socket. Extension of 2.0.0 (NervesHub's route).",
    status: 204,
    errors: [409],
  })
  @HttpCode(204)
  reconnect(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') product: string,
    @Param('identifier') id: string,
  ) {
    return this.devices.command(access, product, id, 'reconnect');
  }

  @Delete(':identifier/penalty')
  @Route('devices.penalty')
  @ApiParam({ name: 'identifier' })
  @ApiOperationDoc({
    summary: 'Take a device out of the deployment penalty box',
    description:
      'As NervesHub: no block, its update attempts forgotten, automatic updates on again (audited). Extension of 2.0.0.',
    status: 204,
  })
  @HttpCode(204)
  clearPenalty(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') product: string,
    @Param('identifier') id: string,
  ) {
    return this.devices.clearPenaltyBox(access, product, id);
  }

  @Post(':identifier/code')
  @Route('devices.code')
  @ApiParam({ name: 'identifier' })
  @ApiOperationDoc({
    summary: "Run Elixir code in the device's console",
    description: "As `POST /api/devices/{identifier}/code`. Extension of 2.0.0 (NervesHub's route).",
    status: 204,
    errors: [400, 409, 413, 422],
  })
  @HttpCode(204)
  code(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') product: string,
    @Param('identifier') id: string,
    @Body() body: ConsoleCodeDto,
  ) {
    return this.devices.sendConsoleCodeInProduct(access, product, id, body);
  }

  @Post(':identifier/scripts/:name_or_id')
  @Route('devices.scripts.run')
  @ApiParam({ name: 'identifier' })
  @ScriptRunDocs()
  @HttpCode(200)
  runScript(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') product: string,
    @Param('identifier') id: string,
    @Param('name_or_id') nameOrId: string,
    @Query('timeout') timeout: unknown,
  ) {
    return this.devices.runScript(access, product, id, nameOrId, timeout);
  }
}

@ApiTags('Devices (short URL)')
@ApiParam({ name: 'identifier', description: 'Device identifier (unique across the server)' })
@Controller('api/devices/:identifier')
@RendersNervesHubTags()
export class DevicesShortController {
  constructor(private readonly devices: DevicesService) {}

  @Get()
  @Route('devices.short.show')
  @ApiOperationDoc({
    summary: 'Show a device by identifier alone',
    description: 'Extension of 2.0.0.',
    data: DeviceView,
  })
  show(@CurrentAccess() access: DeviceAccess) {
    return this.devices.showById(access);
  }

  @Post('upgrade')
  @Route('devices.short.upgrade')
  @ApiOperationDoc({
    summary: 'Push a firmware to a device (short URL)',
    description: 'Extension of 2.0.0; same rules as the nested upgrade call.',
    status: 204,
    errors: [400, 413, 422],
  })
  @HttpCode(204)
  upgrade(@CurrentAccess() access: DeviceAccess, @Body() body: UpgradeDto) {
    return this.devices.upgradeById(access, body);
  }

  @Post('code')
  @Route('devices.short.code')
  @ApiOperationDoc({
    summary: "Run Elixir code in the device's console",
    description:
      "Sent to the device's console connection if it is connected (204); 409 when it is not — never silently lost.",
    status: 204,
    errors: [400, 409, 413, 422],
  })
  @HttpCode(204)
  code(@CurrentAccess() access: DeviceAccess, @Body() body: ConsoleCodeDto) {
    return this.devices.sendConsoleCode(access, body);
  }

  @Post('move')
  @Route('devices.short.move')
  @ApiOperationDoc({
    summary: "Move a device to another organization's product (short URL)",
    description: "NervesHub's route; same rules as the nested move call.",
    data: DeviceView,
    errors: [400, 413, 422],
  })
  @HttpCode(200)
  move(@CurrentAccess() access: DeviceAccess, @Body() body: MoveDeviceDto) {
    return this.devices.moveById(access, body);
  }

  @Post('reboot')
  @Route('devices.short.reboot')
  @ApiOperationDoc({
    summary: 'Reboot a device (short URL)',
    description: 'Extension of 2.0.0; same rules as the nested reboot call.',
    status: 204,
    errors: [409],
  })
  @HttpCode(204)
  reboot(@CurrentAccess() access: DeviceAccess) {
    return this.devices.commandById(access, 'reboot');
  }

  @Post('reconnect')
  @Route('devices.short.reconnect')
  @ApiOperationDoc({
    summary: 'Make a device reconnect (short URL)',
    description: 'Extension of 2.0.0; same rules as the nested reconnect call.',
    status: 204,
    errors: [409],
  })
  @HttpCode(204)
  reconnect(@CurrentAccess() access: DeviceAccess) {
    return this.devices.commandById(access, 'reconnect');
  }

  @Delete('penalty')
  @Route('devices.short.penalty')
  @ApiOperationDoc({
    summary: 'Take a device out of the deployment penalty box (short URL)',
    description: 'Extension of 2.0.0; same rules as the nested penalty call.',
    status: 204,
  })
  @HttpCode(204)
  clearPenalty(@CurrentAccess() access: DeviceAccess) {
    return this.devices.clearPenaltyBoxById(access);
  }

  @Get('scripts')
  @Route('devices.short.scripts')
  @ApiPaginationQuery()
  @ApiOperationDoc({
    summary: "The support scripts of the device's product",
    description: "As the product's script list. Extension of 2.0.0 (NervesHub's route).",
    data: [ScriptView],
    extra: { pagination: PaginationView },
    errors: [422],
  })
  listScripts(@CurrentAccess() access: DeviceAccess, @Query() query: RawQuery) {
    return this.devices.listScripts(access, query);
  }

  @Post('scripts/:name_or_id')
  @Route('devices.short.scripts.run')
  @ScriptRunDocs()
  @HttpCode(200)
  runScript(
    @CurrentAccess() access: DeviceAccess,
    @Param('name_or_id') nameOrId: string,
    @Query('timeout') timeout: unknown,
  ) {
    return this.devices.runScriptById(access, nameOrId, timeout);
  }
}
