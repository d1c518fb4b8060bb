import { Column, Entity, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Org } from '../orgs/org.entity';
import type { IrohOwnerType } from './dto/iroh-endpoint.view';

/**
 * Exact iroh endpoint totals per organization, service and kind of holder, kept by triggers on
 * `iroh_endpoints` (migration `IrohEndpointCounts`), so that an unsearched paginated list answers
 * `total_entries` in O(1) at a million endpoints. Each key is spread over `shard` rows (the writing backend's
 * pid modulo 16), so concurrent creates in one organization do not queue on one row; a total is the sum of its
 * shards, any of which may be negative.
 */
@Entity('org_iroh_endpoint_counts')
export class OrgIrohEndpointCount {
  @PrimaryColumn({ name: 'org_id', type: 'bigint' })
  orgId: string;

  @ManyToOne(() => Org, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'org_id' })
  org?: Org;

  @PrimaryColumn({ type: 'varchar', length: 32 })
  service: string;

  /** `device`, `user` or `none`, as the list's `owner` filter names them. */
  @PrimaryColumn({ name: 'owner_type', type: 'varchar', length: 8 })
  ownerType: IrohOwnerType;

  @PrimaryColumn({ type: 'smallint' })
  shard: number;

  @Column({ type: 'bigint', default: 0 })
  total: string;
}
