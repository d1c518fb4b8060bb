import { Module } from '@nestjs/common';
import { ProductsModule } from '../products/products.module';
import { ConnectionSampler } from './connection-sampler';
import { FleetOverviewController } from './fleet-overview.controller';
import { FleetOverviewRepository } from './fleet-overview.repository';
import { FleetOverviewService } from './fleet-overview.service';

/**
 * A product's fleet overview (`GET .../products/{product}/overview`) and the sampler of its history; its counters
 * for the live `product.overview` event (LiveModule).
 */
@Module({
  imports: [ProductsModule],
  controllers: [FleetOverviewController],
  providers: [FleetOverviewRepository, FleetOverviewService, ConnectionSampler],
  exports: [FleetOverviewService],
})
export class OverviewModule {}
