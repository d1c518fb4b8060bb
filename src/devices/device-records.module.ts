import { Module } from '@nestjs/common';
import { DevicesRepository } from './devices.repository';

/**
 * The `devices` table without the devices API (DevicesModule needs the gateway): for the features and commands
 * that read or write device rows themselves, such as `fleethub demo`.
 */
@Module({
  providers: [DevicesRepository],
  exports: [DevicesRepository],
})
export class DeviceRecordsModule {}
