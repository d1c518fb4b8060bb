import { Module } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { FirmwareStorage } from './firmware-storage';
import { LocalDiskStorage } from './local-disk-storage';

/** Where firmware files live; shared by uploads, downloads and product deletion. */
@Module({
  providers: [
    {
      provide: FirmwareStorage,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => new LocalDiskStorage(config.dataDir),
    },
  ],
  exports: [FirmwareStorage],
})
export class FirmwareStorageModule {}
