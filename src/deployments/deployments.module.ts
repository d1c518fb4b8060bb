import { Module } from '@nestjs/common';
import { ProductsModule } from '../products/products.module';
import { DeploymentGroupsRepository } from './deployment-groups.repository';
import { DeploymentMembershipService } from './deployment-membership.service';
import { DeploymentsController } from './deployments.controller';
import { DeploymentsService } from './deployments.service';

/** Deployment groups: their API, releases and which devices belong to them (the orchestrator is apart). */
@Module({
  imports: [ProductsModule],
  controllers: [DeploymentsController],
  providers: [DeploymentsService, DeploymentGroupsRepository, DeploymentMembershipService],
  exports: [DeploymentsService, DeploymentMembershipService],
})
export class DeploymentsModule {}
