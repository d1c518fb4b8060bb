import { Module } from '@nestjs/common';
import { InstanceBusModule } from '../database/instance-bus/instance-bus.module';
import { DeploymentsModule } from '../deployments/deployments.module';
import { FirmwareModule } from '../firmware/firmware.module';
import { ProductsModule } from '../products/products.module';
import { SigningKeysModule } from '../signing-keys/signing-keys.module';
import { ArchiveRecordsModule } from './archive-records.module';
import { ArchiveAttachmentsController, ArchivesController } from './archives.controller';
import { ArchivesService } from './archives.service';

/**
 * Archives: upload (verified as firmware is), list, show, download, delete, and their attachment to deployment
 * groups. Files go to the firmware store; the device gateway sends them (GatewayModule imports
 * ArchiveRecordsModule).
 */
@Module({
  imports: [
    ProductsModule,
    SigningKeysModule,
    // The multipart receiver, the store and the file remover of firmware uploads.
    FirmwareModule,
    DeploymentsModule,
    InstanceBusModule,
    ArchiveRecordsModule,
  ],
  controllers: [ArchivesController, ArchiveAttachmentsController],
  providers: [ArchivesService],
})
export class ArchivesModule {}
