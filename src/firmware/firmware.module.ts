import { Module } from '@nestjs/common';
import { ProductsModule } from '../products/products.module';
import { SigningKeysModule } from '../signing-keys/signing-keys.module';
import { FirmwareController } from './firmware.controller';
import { FirmwareService } from './firmware.service';
import { FirmwareStorageModule } from './storage/firmware-storage.module';

@Module({
  imports: [ProductsModule, SigningKeysModule, FirmwareStorageModule],
  controllers: [FirmwareController],
  providers: [FirmwareService],
  exports: [FirmwareService, FirmwareStorageModule],
})
export class FirmwareModule {}
