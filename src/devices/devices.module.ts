import { Module } from '@nestjs/common';
import { ProductsModule } from '../products/products.module';
import {
  DatabaseOnlyUpdateNotifier,
  DeviceConsole,
  DisconnectedDeviceConsole,
  UpdateNotifier,
} from './device-console';
import { DevicesController, DevicesShortController } from './devices.controller';
import { DevicesService } from './devices.service';

@Module({
  imports: [ProductsModule],
  controllers: [DevicesController, DevicesShortController],
  providers: [
    DevicesService,
    { provide: DeviceConsole, useClass: DisconnectedDeviceConsole },
    { provide: UpdateNotifier, useClass: DatabaseOnlyUpdateNotifier },
  ],
  exports: [DevicesService],
})
export class DevicesModule {}
