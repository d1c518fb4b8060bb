import { Module } from '@nestjs/common';
import { ProductsModule } from '../products/products.module';
import { SigningKeysModule } from '../signing-keys/signing-keys.module';
import { FirmwareController } from './firmware.controller';
import { FirmwareRecordsModule } from './firmware-records.module';
import { FirmwareService } from './firmware.service';
import { FirmwareStorageModule } from './storage/firmware-storage.module';
import { FirmwareUploadReceiver } from './upload-receiver';

@Module({
  imports: [ProductsModule, SigningKeysModule, FirmwareStorageModule, FirmwareRecordsModule],
  controllers: [FirmwareController],
  providers: [FirmwareService, FirmwareUploadReceiver],
  // FirmwareRecordsModule: FirmwaresRepository, PendingUpdatesRepository and FirmwareRecordsService.
  exports: [FirmwareService, FirmwareUploadReceiver, FirmwareStorageModule, FirmwareRecordsModule],
})
export class FirmwareModule {}
