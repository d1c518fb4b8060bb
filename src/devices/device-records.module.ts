import { Module } from '@nestjs/common';
import { DeviceRecordsService } from './device-records.service';
import { DevicesRepository } from './devices.repository';

/**
 * The `devices` table without the devices API: imported by DevicesModule and by the device gateway and the metrics,
 * which DevicesModule cannot be (it imports the gateway's module).
 */
@Module({
  providers: [DevicesRepository, DeviceRecordsService],
  exports: [DevicesRepository, DeviceRecordsService],
})
export class DeviceRecordsModule {}
