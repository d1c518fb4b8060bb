import { Module } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { ProductsModule } from '../products/products.module';
import { SigningKeysModule } from '../signing-keys/signing-keys.module';
import { FirmwareController } from './firmware.controller';
import { FirmwareService } from './firmware.service';
import { FirmwareStorage } from './storage/firmware-storage';
import { LocalDiskStorage } from './storage/local-disk-storage';

@Module({
  imports: [ProductsModule, SigningKeysModule],
  controllers: [FirmwareController],
  providers: [
    FirmwareService,
    {
      provide: FirmwareStorage,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => new LocalDiskStorage(config.dataDir),
    },
  ],
  exports: [FirmwareService, FirmwareStorage],
})
export class FirmwareModule {}
