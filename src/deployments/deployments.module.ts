import { Module } from '@nestjs/common';
import { InstanceBusModule } from '../database/instance-bus/instance-bus.module';
import { ProductsModule } from '../products/products.module';
import { DeploymentEvents } from './deployment-events';
import { DeploymentGroupsRepository } from './deployment-groups.repository';
import { DeploymentMembershipService } from './deployment-membership.service';
import { DeploymentsController } from './deployments.controller';
import { DeploymentsService } from './deployments.service';

/** Deployment groups: their API, releases and which devices belong to them (the orchestrator is apart). */
@Module({
  imports: [ProductsModule, InstanceBusModule],
  controllers: [DeploymentsController],
  providers: [DeploymentsService, DeploymentGroupsRepository, DeploymentMembershipService, DeploymentEvents],
  // The repository for `fleethub demo` only (a rollout's rows in bulk, as the demo makes its fleet).
  exports: [DeploymentsService, DeploymentMembershipService, DeploymentGroupsRepository],
})
export class DeploymentsModule {}
