import { Injectable, Module } from '@nestjs/common';
import type { Queryable } from '../database/transactions';
import { DeploymentGroupsRepository } from './deployment-groups.repository';
import { countsView } from './deployment-counts';
import type { DeploymentCountsView } from './dto/deployment-group.dto';

/**
 * What other features ask of the deployment groups without the deployments API: the products feature deletes a
 * product's groups with it (DeploymentsModule imports ProductsModule, so ProductsModule cannot import it).
 */
@Injectable()
export class DeploymentRecordsService {
  constructor(private readonly groups: DeploymentGroupsRepository) {}

  /** Each of the product's groups: its id, name and live counts as the group API shows them. */
  async countsOfProduct(
    productId: string,
  ): Promise<{ id: string; name: string; counts: DeploymentCountsView }[]> {
    const rows = await this.groups.countsOfProduct(productId);
    return rows.map((row) => ({ id: row.id, name: row.name, counts: countsView(row) }));
  }

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
