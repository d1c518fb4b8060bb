import { Module } from '@nestjs/common';
import { FirmwareStorageModule } from '../firmware/storage/firmware-storage.module';
import { ProductsController } from './products.controller';
import { ProductsService } from './products.service';

@Module({
  imports: [FirmwareStorageModule],
  controllers: [ProductsController],
  providers: [ProductsService],
  exports: [ProductsService],
})
export class ProductsModule {}
