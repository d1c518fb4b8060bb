import { Module } from '@nestjs/common';
import { ProductsModule } from '../../products/products.module';
import { FirmwareRecordsModule } from '../firmware-records.module';
import { FirmwareStorageModule } from '../storage/firmware-storage.module';
import { DEFAULT_DELTA_BUILDER_OPTIONS, DELTA_BUILDER_OPTIONS, DeltaBuilder } from './delta-builder.service';
import { FirmwareDeltasController } from './firmware-deltas.controller';
import { FirmwareDeltasService } from './firmware-deltas.service';

/** fwup delta updates: the background builder and the deltas API (the server's; the CLI builds none). */
@Module({
  imports: [ProductsModule, FirmwareRecordsModule, FirmwareStorageModule],
  controllers: [FirmwareDeltasController],
  providers: [
    { provide: DELTA_BUILDER_OPTIONS, useValue: DEFAULT_DELTA_BUILDER_OPTIONS },
    DeltaBuilder,
    FirmwareDeltasService,
  ],
  exports: [DeltaBuilder],
})
export class FirmwareDeltasModule {}
