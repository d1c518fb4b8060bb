import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { InstanceBusModule } from '../database/instance-bus/instance-bus.module';
import { DeploymentRecordsModule } from '../deployments/deployment-records.module';
import { DeviceRecordsModule } from '../devices/device-records.module';
import { HealthModule } from '../health/health.module';
import { OrgsModule } from '../orgs/orgs.module';
import { OverviewModule } from '../overview/overview.module';
import { ProductsModule } from '../products/products.module';
import { DeploymentCountsWatcher } from './deployment-counts-watcher';
import { EventStreamsRepository } from './event-streams.repository';
import { EventStreamsService } from './event-streams.service';
import { LiveEventsModule } from './live-events.module';
import { DEFAULT_LIVE_TIMING, LIVE_TIMING } from './live-timing';
import { LiveController } from './live.controller';
import { OverviewWatcher } from './overview-watcher';

/** The console's live push: `GET .../products/{product_name}/events`, fed by LiveEvents (docs/decisions.md). */
@Module({
  imports: [
    AuthModule,
    DeploymentRecordsModule,
    DeviceRecordsModule,
    HealthModule,
    InstanceBusModule,
    LiveEventsModule,
    OrgsModule,
    OverviewModule,
    ProductsModule,
  ],
  controllers: [LiveController],
  providers: [
    { provide: LIVE_TIMING, useValue: DEFAULT_LIVE_TIMING },
    DeploymentCountsWatcher,
    EventStreamsRepository,
    EventStreamsService,
    OverviewWatcher,
  ],
  exports: [EventStreamsService],
})
export class LiveModule {}
