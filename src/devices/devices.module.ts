import { Module } from '@nestjs/common';
import { GatewayModule } from '../gateway/gateway.module';
import { ProductsModule } from '../products/products.module';
import { DevicesController, DevicesShortController } from './devices.controller';
import { DevicesService } from './devices.service';

@Module({
  // The gateway provides DeviceConsole and UpdateNotifier (device-console.ts) to DevicesService.
  imports: [ProductsModule, GatewayModule],
  controllers: [DevicesController, DevicesShortController],
  providers: [DevicesService],
  exports: [DevicesService],
})
export class DevicesModule {}
