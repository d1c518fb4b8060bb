import { Injectable, Module } from '@nestjs/common';
import type { Queryable } from '../database/transactions';
import { DeploymentGroupsRepository } from './deployment-groups.repository';

/**
 * What other features ask of the deployment groups without the deployments API: the products feature deletes a
 * product's groups with it (DeploymentsModule imports ProductsModule, so ProductsModule cannot import it).
 */
@Injectable()
export class DeploymentRecordsService {
  constructor(private readonly groups: DeploymentGroupsRepository) {}

  /** Deletes the product's groups (their releases, in-flight updates and memberships go with them) in `tx`. */
  deleteAllOfProduct(productId: string, tx: Queryable): Promise<void> {
    return this.groups.deleteAllOfProduct(productId, tx);
  }
}

@Module({
  providers: [DeploymentGroupsRepository, DeploymentRecordsService],
  exports: [DeploymentRecordsService],
})
export class DeploymentRecordsModule {}
