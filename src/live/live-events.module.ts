import { Module } from '@nestjs/common';
import { InstanceBusModule } from '../database/instance-bus/instance-bus.module';
import { LiveEvents } from './live-events';

/**
 * The live events between instances, without the event streams: what the device gateway, telemetry and the
 * devices API publish to (LiveModule, which serves the streams, imports those features).
 */
@Module({ imports: [InstanceBusModule], providers: [LiveEvents], exports: [LiveEvents] })
export class LiveEventsModule {}
