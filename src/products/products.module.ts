import { Module } from '@nestjs/common';
import { DeploymentRecordsModule } from '../deployments/deployment-records.module';
import { FirmwareRecordsModule } from '../firmware/firmware-records.module';
import { FirmwareStorageModule } from '../firmware/storage/firmware-storage.module';
import { ProductsController } from './products.controller';
import { ProductsRepository } from './products.repository';
import { ProductsService } from './products.service';

@Module({
  imports: [FirmwareStorageModule, FirmwareRecordsModule, DeploymentRecordsModule],
  controllers: [ProductsController],
  providers: [ProductsService, ProductsRepository],
  exports: [ProductsService],
})
export class ProductsModule {}
