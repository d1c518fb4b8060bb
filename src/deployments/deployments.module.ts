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
  exports: [DeploymentsService, DeploymentMembershipService],
})
export class DeploymentsModule {}
