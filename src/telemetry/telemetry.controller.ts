import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiParam, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { OrgAccess } from '../common/auth/actor';
import { CurrentAccess, Route } from '../common/auth/decorators';
import { ApiOperationDoc } from '../common/openapi/api-docs';
import { DeviceHealthService } from './device-health.service';
import { DeviceLogsService } from './device-logs.service';
import { IDENTITY_SERVICES, NetworkIdentityView } from './dto/network-identity.view';
import {
  type DeviceLogsQuery,
  DeviceLogsQueryPipe,
  DEFAULT_LOG_LIMIT,
  type HealthMetricsQuery,
  HealthMetricsQueryPipe,
  MAX_LOG_LIMIT,
  MAX_METRICS_LIMIT,
  type NetworkIdentitiesQuery,
  NetworkIdentitiesQueryPipe,
} from './dto/telemetry-queries';
import { DeviceHealthView, DeviceLogLineView, HealthMetricView, LogCursorView } from './dto/telemetry.views';
import { NetworkIdentitiesService } from './network-identities.service';
import { LOG_LEVELS } from './report-payloads';

const DEVICE_PATH = 'api/orgs/:org_name/products/:product_name/devices/:identifier';
const FROM = ApiQuery({ name: 'from', required: false, description: 'ISO 8601 timestamp, inclusive' });
const TO = ApiQuery({ name: 'to', required: false, description: 'ISO 8601 timestamp, inclusive' });

@ApiTags('Network Identities')
@ApiParam({ name: 'org_name', description: 'Organization name' })
@ApiParam({ name: 'product_name', description: 'Product name' })
@ApiParam({ name: 'identifier', description: 'Device identifier' })
@Controller(DEVICE_PATH)
export class NetworkIdentitiesController {
  constructor(private readonly identities: NetworkIdentitiesService) {}

  @Get('network_identities')
  @Route('networkIdentities.list')
  @ApiQuery({ name: 'service', required: false, enum: IDENTITY_SERVICES, description: 'Only this protocol' })
  @ApiQuery({ name: 'instance', required: false, description: 'Only this endpoint of the protocol' })
  @ApiOperationDoc({
    summary: 'The network identities the device holds',
    description:
      'The keys the device reported holding on other networks (an iroh endpoint id, a NetBird, Tailscale or ' +
      'WireGuard public key), and iroh endpoint ids an operator registered that the device took over. By service, ' +
      'then instance (`default` for a single endpoint). An unknown `service` is a 422.',
    data: [NetworkIdentityView],
    errors: [422],
  })
  list(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') productName: string,
    @Param('identifier') identifier: string,
    @Query(NetworkIdentitiesQueryPipe) query: NetworkIdentitiesQuery,
  ) {
    return this.identities.list(access, { productName, identifier }, query);
  }
}

@ApiTags('Device Logs')
@ApiParam({ name: 'org_name', description: 'Organization name' })
@ApiParam({ name: 'product_name', description: 'Product name' })
@ApiParam({ name: 'identifier', description: 'Device identifier' })
@Controller(DEVICE_PATH)
export class DeviceLogsController {
  constructor(private readonly logs: DeviceLogsService) {}

  @Get('logs')
  @Route('deviceLogs.list')
  @FROM
  @TO
  @ApiQuery({
    name: 'level',
    required: false,
    enum: LOG_LEVELS,
    description: 'Lines of this level and the more severe ones',
  })
  @ApiQuery({ name: 'search', required: false, description: 'Text the message contains (case-insensitive)' })
  @ApiQuery({ name: 'cursor', required: false, description: "The previous page's `pagination.next_cursor`" })
  @ApiQuery({
    name: 'limit',
    required: false,
    schema: { type: 'integer', minimum: 1, maximum: MAX_LOG_LIMIT, default: DEFAULT_LOG_LIMIT },
  })
  @ApiOperationDoc({
    summary: "The device's log lines, newest first",
    description:
      'Lines the device sent through the `logging` extension, kept for `FLEETHUB_DEVICE_LOG_RETENTION_DAYS` ' +
      "(default 3). Beyond 5 lines a second (bursts of 10) a device's lines are dropped, as NervesHub does. A bad " +
      'parameter is a 422 naming it.',
    data: [DeviceLogLineView],
    extra: { pagination: LogCursorView },
    errors: [422],
  })
  list(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') productName: string,
    @Param('identifier') identifier: string,
    @Query(DeviceLogsQueryPipe) query: DeviceLogsQuery,
  ) {
    return this.logs.list(access, { productName, identifier }, query);
  }
}

@ApiTags('Device Health')
@ApiParam({ name: 'org_name', description: 'Organization name' })
@ApiParam({ name: 'product_name', description: 'Product name' })
@ApiParam({ name: 'identifier', description: 'Device identifier' })
@Controller(DEVICE_PATH)
export class DeviceHealthController {
  constructor(private readonly health: DeviceHealthService) {}

  @Get('health')
  @Route('deviceHealth.show')
  @ApiOperationDoc({
    summary: "The device's latest health report and location",
    description:
      'What the device last sent through the `health` and `geo` extensions; nulls (status `unknown`) before that.',
    data: DeviceHealthView,
  })
  show(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') productName: string,
    @Param('identifier') identifier: string,
  ) {
    return this.health.show(access, { productName, identifier });
  }

  @Get('health/metrics')
  @Route('deviceHealth.metrics')
  @FROM
  @TO
  @ApiQuery({ name: 'key', required: false, description: 'Only this metric, e.g. `cpu_temp`' })
  @ApiQuery({
    name: 'limit',
    required: false,
    schema: { type: 'integer', minimum: 1, maximum: MAX_METRICS_LIMIT, default: 1000 },
  })
  @ApiOperationDoc({
    summary: "The history of the device's health metrics, newest first",
    description:
      'Every numeric metric of each health report, kept as long as device logs. A bad parameter is a 422 naming it.',
    data: [HealthMetricView],
    errors: [422],
  })
  metrics(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') productName: string,
    @Param('identifier') identifier: string,
    @Query(HealthMetricsQueryPipe) query: HealthMetricsQuery,
  ) {
    return this.health.metrics(access, { productName, identifier }, query);
  }
}
