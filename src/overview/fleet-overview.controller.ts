import { Controller, Get, Param, Query } from '@nestjs/common';
import { ApiParam, ApiQuery, ApiTags } from '@nestjs/swagger';
import type { OrgAccess } from '../common/auth/actor';
import { CurrentAccess, Route } from '../common/auth/decorators';
import { ApiOperationDoc } from '../common/openapi/api-docs';
import {
  DEFAULT_HOURS,
  type FleetOverviewQuery,
  FleetOverviewQueryPipe,
  MAX_HOURS,
} from './dto/fleet-overview.query';
import { FleetOverviewView } from './dto/fleet-overview.view';
import { FleetOverviewService } from './fleet-overview.service';

@ApiTags('Fleet Overview')
@ApiParam({ name: 'org_name', description: 'Organization name' })
@ApiParam({ name: 'product_name', description: 'Product name' })
@Controller('api/orgs/:org_name/products/:product_name/overview')
export class FleetOverviewController {
  constructor(private readonly overview: FleetOverviewService) {}

  @Get()
  @Route('products.overview')
  @ApiQuery({
    name: 'hours',
    required: false,
    schema: { type: 'integer', minimum: 1, maximum: MAX_HOURS, default: DEFAULT_HOURS },
    description: 'How far back `connected_history` goes',
  })
  @ApiOperationDoc({
    summary: "The product's fleet at a glance",
    description:
      'Extension of 2.0.0 (NervesHub has no such call). Devices connected now (exact: counters the database keeps with every change), connected ' +
      'over time (sampled once a minute, kept 7 days; at most about 360 points, each the average of its ' +
      'interval), firmware versions in use, deployment groups with updates in flight or paused by their failure ' +
      'threshold, and devices whose latest health report has an active alarm. Served from counters and indexes, ' +
      'not by reading every device. A bad or unknown parameter is a 422 naming it.',
    data: FleetOverviewView,
    errors: [422],
  })
  show(
    @CurrentAccess() access: OrgAccess,
    @Param('product_name') productName: string,
    @Query(FleetOverviewQueryPipe) query: FleetOverviewQuery,
  ) {
    return this.overview.show(access, productName, query);
  }
}
