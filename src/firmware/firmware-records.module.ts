import { Module } from '@nestjs/common';
import { FirmwareRecordsService } from './firmware-records.service';
import { FirmwaresRepository } from './firmwares.repository';
import { PendingUpdatesRepository } from './pending-updates.repository';

/**
 * The firmware and pending update tables, without the upload machinery: imported by FirmwareModule (which
 * re-exports it) and by the products and devices features, which FirmwareModule itself depends on.
 */
@Module({
  providers: [FirmwaresRepository, PendingUpdatesRepository, FirmwareRecordsService],
  exports: [FirmwaresRepository, PendingUpdatesRepository, FirmwareRecordsService],
})
export class FirmwareRecordsModule {}
