import { Module } from '@nestjs/common';
import { AuditModule } from '../../audit/audit.module';
import { InstanceBusModule } from '../../database/instance-bus/instance-bus.module';
import { DeviceRecordsModule } from '../../devices/device-records.module';
import { FirmwareRecordsModule } from '../../firmware/firmware-records.module';
import { GatewayModule } from '../../gateway/gateway.module';
import { MetricsModule } from '../../metrics/metrics.module';
import { ProductsModule } from '../../products/products.module';
import { WebhookOutboxModule } from '../../webhooks/webhook-outbox.module';
import {
  DEFAULT_ORCHESTRATOR_TIMING,
  DeploymentOrchestrator,
  ORCHESTRATOR_TIMING,
} from './deployment-orchestrator.service';
import { LeadershipLocksRepository } from './leadership-locks.repository';
import { DeploymentOrchestratorRepository } from './orchestrator.repository';

/** The rollout of deployment groups: leadership, claims, results, pauses (see DeploymentOrchestrator). */
@Module({
  imports: [
    AuditModule,
    DeviceRecordsModule,
    FirmwareRecordsModule,
    GatewayModule,
    InstanceBusModule,
    MetricsModule,
    ProductsModule,
    WebhookOutboxModule,
  ],
  providers: [
    { provide: ORCHESTRATOR_TIMING, useValue: DEFAULT_ORCHESTRATOR_TIMING },
    DeploymentOrchestratorRepository,
    LeadershipLocksRepository,
    DeploymentOrchestrator,
  ],
  exports: [DeploymentOrchestrator],
})
export class DeploymentOrchestratorModule {}
