import { Module } from '@nestjs/common';
import { InstanceBus } from './instance-bus';

/** The one LISTEN/NOTIFY connection of the process, shared by the features that talk to other instances. */
@Module({ providers: [InstanceBus], exports: [InstanceBus] })
export class InstanceBusModule {}
