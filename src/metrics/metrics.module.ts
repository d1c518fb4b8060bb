import { Global, type MiddlewareConsumer, Module, type NestModule, RequestMethod } from '@nestjs/common';
import { DeviceRecordsModule } from '../devices/device-records.module';
import { FirmwareRecordsModule } from '../firmware/firmware-records.module';
import { MetricsController } from './metrics.controller';
import { MetricsMiddleware } from './metrics.middleware';
import { MetricsService } from './metrics.service';

/** `GET /metrics` and request timing; global so that any module (the device gateway) can inject MetricsService. */
@Global()
@Module({
  imports: [DeviceRecordsModule, FirmwareRecordsModule],
  controllers: [MetricsController],
  providers: [MetricsService],
  exports: [MetricsService],
})
export class MetricsModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(MetricsMiddleware).forRoutes({ path: '{*path}', method: RequestMethod.ALL });
  }
}
