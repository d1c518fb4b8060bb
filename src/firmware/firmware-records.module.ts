import { Module } from '@nestjs/common';
import { FirmwareDeltaRecords } from './deltas/firmware-delta-records.service';
import { FirmwareDeltasRepository } from './deltas/firmware-deltas.repository';
import { FirmwareRecordsService } from './firmware-records.service';
import { FirmwaresRepository } from './firmwares.repository';
import { PendingUpdatesRepository } from './pending-updates.repository';

/**
 * The firmware, firmware delta and pending update tables, without the upload machinery: imported by FirmwareModule (which
 * re-exports it) and by the products and devices features, which FirmwareModule itself depends on.
 */
@Module({
  providers: [
    FirmwaresRepository,
    PendingUpdatesRepository,
    FirmwareRecordsService,
    FirmwareDeltasRepository,
    FirmwareDeltaRecords,
  ],
  exports: [
    FirmwaresRepository,
    PendingUpdatesRepository,
    FirmwareRecordsService,
    FirmwareDeltasRepository,
    FirmwareDeltaRecords,
  ],
})
export class FirmwareRecordsModule {}
