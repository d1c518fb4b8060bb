import { Module } from '@nestjs/common';
import { DeviceRecordsModule } from '../devices/device-records.module';
import { IrohModule } from '../iroh/iroh.module';
import { ProductsModule } from '../products/products.module';
import { WebhookOutboxModule } from '../webhooks/webhook-outbox.module';
import { DeviceHealthRepository } from './device-health.repository';
import { DeviceHealthService } from './device-health.service';
import { DeviceLogsRepository } from './device-logs.repository';
import { DeviceLogsService } from './device-logs.service';
import { DeviceReportsService } from './device-reports.service';
import { NetworkIdentitiesRepository } from './network-identities.repository';
import { NetworkIdentitiesService } from './network-identities.service';
import { TelemetryDevices } from './telemetry-devices';
import { TelemetryMetrics } from './telemetry-metrics';
import { TelemetryPartitions } from './telemetry-partitions';
import { TelemetryPartitionsRepository } from './telemetry-partitions.repository';
import {
  DeviceHealthController,
  DeviceLogsController,
  NetworkIdentitiesController,
} from './telemetry.controller';

/**
 * What devices report through the `extensions` channel: network identities, log lines, health reports and
 * locations (stored by DeviceReportsService, which the device gateway calls) and the routes that read them.
 */
@Module({
  // WebhookOutboxModule: the health alarm events, written with the reports that raise or clear them.
  imports: [ProductsModule, DeviceRecordsModule, IrohModule, WebhookOutboxModule],
  controllers: [NetworkIdentitiesController, DeviceLogsController, DeviceHealthController],
  providers: [
    DeviceHealthRepository,
    DeviceHealthService,
    DeviceLogsRepository,
    DeviceLogsService,
    DeviceReportsService,
    NetworkIdentitiesRepository,
    NetworkIdentitiesService,
    TelemetryDevices,
    TelemetryMetrics,
    TelemetryPartitions,
    TelemetryPartitionsRepository,
  ],
  exports: [DeviceReportsService],
})
export class TelemetryModule {}
