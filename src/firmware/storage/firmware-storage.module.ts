import { Module } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { FirmwareFileRemover } from './firmware-file-remover';
import { FirmwareStorage } from './firmware-storage';
import { LocalDiskStorage } from './local-disk-storage';
import { S3Storage } from './s3-storage';
import { StorageDeletionsRepository } from './storage-deletions.repository';
import { UploadedFileStore } from './uploaded-file-store';

/** Where firmware files live (FLEETHUB_STORAGE); shared by uploads, downloads and deletions. */
@Module({
  providers: [
    {
      provide: FirmwareStorage,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig): FirmwareStorage =>
        config.storage.kind === 's3'
          ? new S3Storage(config.storage, config.dataDir)
          : new LocalDiskStorage(config.dataDir),
    },
    StorageDeletionsRepository,
    FirmwareFileRemover,
    UploadedFileStore,
  ],
  exports: [FirmwareStorage, FirmwareFileRemover, UploadedFileStore],
})
export class FirmwareStorageModule {}
