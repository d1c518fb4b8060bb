import { Module } from '@nestjs/common';
import { InstanceBusModule } from '../database/instance-bus/instance-bus.module';
import { FirmwareRecordsModule } from '../firmware/firmware-records.module';
import { ProductsModule } from '../products/products.module';
import { DeploymentDeltasController } from './deployment-deltas.controller';
import { DeploymentDeltasService } from './deployment-deltas.service';
import { DeploymentEvents } from './deployment-events';
import { DeploymentGroupsRepository } from './deployment-groups.repository';
import { DeploymentMembershipService } from './deployment-membership.service';
import { DeploymentsController } from './deployments.controller';
import { DeploymentsService } from './deployments.service';

/** Deployment groups: their API, releases and which devices belong to them (the orchestrator is apart). */
@Module({
  imports: [ProductsModule, InstanceBusModule, FirmwareRecordsModule],
  controllers: [DeploymentsController, DeploymentDeltasController],
  providers: [
    DeploymentsService,
    DeploymentGroupsRepository,
    DeploymentMembershipService,
    DeploymentEvents,
    DeploymentDeltasService,
  ],
  // The repository for `fleethub demo` only (a rollout's rows in bulk, as the demo makes its fleet).
  exports: [DeploymentsService, DeploymentMembershipService, DeploymentGroupsRepository],
})
export class DeploymentsModule {}
