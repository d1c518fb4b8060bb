import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { InstanceBusModule } from '../database/instance-bus/instance-bus.module';
import { FirmwareStorageModule } from '../firmware/storage/firmware-storage.module';
import { HealthController } from './health.controller';
import { ReadinessService } from './readiness.service';
import { ShutdownState } from './shutdown-state';

@Module({
  imports: [TerminusModule.forRoot({ logger: false }), FirmwareStorageModule, InstanceBusModule],
  controllers: [HealthController],
  providers: [ShutdownState, ReadinessService],
  exports: [ShutdownState],
})
export class HealthModule {}
