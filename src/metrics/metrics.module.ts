import { Global, Module } from '@nestjs/common';
import { DeviceRecordsModule } from '../devices/device-records.module';
import { FirmwareRecordsModule } from '../firmware/firmware-records.module';
import { MetricsController } from './metrics.controller';
import { MetricsService } from './metrics.service';

/**
 * `GET /metrics`; global so that any module (the device gateway) can inject MetricsService. Requests are timed by
 * the HTTP setup (src/http-app.ts, `MetricsService.observeResponse`), with the request log and timeout.
 */
@Global()
@Module({
  imports: [DeviceRecordsModule, FirmwareRecordsModule],
  controllers: [MetricsController],
  providers: [MetricsService],
  exports: [MetricsService],
})
export class MetricsModule {}
