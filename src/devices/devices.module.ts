import { DeviceImportsController } from './device-imports.controller';
import { DeviceImportsRepository } from './device-imports.repository';
import { DeviceImportsService } from './device-imports.service';
import { IrohModule } from '../iroh/iroh.module';
import { OrgsModule } from '../orgs/orgs.module';
import { DeploymentsModule } from '../deployments/deployments.module';
import { Module } from '@nestjs/common';
import { OverviewModule } from '../overview/overview.module';
import { LiveEventsModule } from '../live/live-events.module';
import { CertificatesModule } from '../certificates/certificates.module';
import { FirmwareRecordsModule } from '../firmware/firmware-records.module';
import { GatewayModule } from '../gateway/gateway.module';
import { ScriptsModule } from '../scripts/scripts.module';
import { ProductsModule } from '../products/products.module';
import { DeviceRecordsModule } from './device-records.module';
import { DevicesController, DevicesShortController } from './devices.controller';
import { BULK_WINDOW, BULK_WINDOW_DEVICES, DeviceBulkService } from './device-bulk.service';
import { DevicesService } from './devices.service';
import { WebhookOutboxModule } from '../webhooks/webhook-outbox.module';

@Module({
  // The gateway provides DeviceConsole and UpdateNotifier (device-console.ts) to DevicesService.
  imports: [
    ProductsModule,
    GatewayModule,
    FirmwareRecordsModule,
    DeviceRecordsModule,
    DeploymentsModule,
    ScriptsModule,
    // DeviceCertificatesService: whose certificate a `POST .../devices/auth` presents.
    CertificatesModule,
    // Move: the target organization and the caller's role there, the device's network identities.
    OrgsModule,
    IrohModule,
    // The console's live events: a manual upgrade is `pending` at once.
    LiveEventsModule,
    // Per-device webhook events of bulk changes and imports.
    WebhookOutboxModule,
    // The device list's total from the fleet's counter rows (a connection, version or alarm filter).
    OverviewModule,
  ],
  controllers: [DevicesController, DevicesShortController, DeviceImportsController],
  providers: [
    DevicesService,
    DeviceBulkService,
    { provide: BULK_WINDOW, useValue: BULK_WINDOW_DEVICES },
    DeviceImportsRepository,
    DeviceImportsService,
  ],
  exports: [DevicesService],
})
export class DevicesModule {}
