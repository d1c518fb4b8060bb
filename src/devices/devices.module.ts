import { Module } from '@nestjs/common';
import { FirmwareRecordsModule } from '../firmware/firmware-records.module';
import { GatewayModule } from '../gateway/gateway.module';
import { ProductsModule } from '../products/products.module';
import { DevicesController, DevicesShortController } from './devices.controller';
import { DevicesRepository } from './devices.repository';
import { DevicesService } from './devices.service';

@Module({
  // The gateway provides DeviceConsole and UpdateNotifier (device-console.ts) to DevicesService.
  imports: [ProductsModule, GatewayModule, FirmwareRecordsModule],
  controllers: [DevicesController, DevicesShortController],
  providers: [DevicesService, DevicesRepository],
  exports: [DevicesService],
})
export class DevicesModule {}
