import { Column, Entity, Index, JoinColumn, ManyToOne } from 'typeorm';
import { BigIdColumn, InsertedAtColumn, UpdatedAtColumn } from '../database/columns';
import { Org } from '../orgs/org.entity';
import { Product } from '../products/product.entity';
import type { DeploymentRelease } from './deployment-release.entity';

export const TAG_OPERATORS = ['and', 'or'] as const;
export type TagOperator = (typeof TAG_OPERATORS)[number];

export const QUEUE_MANAGEMENT = ['FIFO', 'LIFO'] as const;
export type QueueManagement = (typeof QUEUE_MANAGEMENT)[number];

/**
 * A deployment group (NervesHub's `deployments`): the devices of a product that match its conditions receive its
 * current release automatically, at most `concurrent_updates` at a time. Platform and architecture come from the
 * first release's firmware and every later release must match them.
 */
@Entity('deployment_groups')
@Index('deployment_groups_product_id_name_idx', ['productId', 'name'], { unique: true })
@Index('deployment_groups_org_id_idx', ['orgId'])
export class DeploymentGroup {
  @BigIdColumn()
  id: string;

  @Column({ name: 'org_id', type: 'bigint' })
  orgId: string;

  @ManyToOne(() => Org, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'org_id' })
  org?: Org;

  @Column({ name: 'product_id', type: 'bigint' })
  productId: string;

  @ManyToOne(() => Product, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'product_id' })
  product?: Product;

  @Column({ type: 'varchar', length: 255 })
  name: string;

  @Column({ name: 'is_active', type: 'boolean', default: false })
  isActive: boolean;

  @Column({ type: 'varchar', length: 255 })
  platform: string;

  @Column({ type: 'varchar', length: 255 })
  architecture: string;

  /** An Elixir version requirement (`~> 1.2`, `>= 1.0.0 and < 2.0.0`); '' matches every version. */
  @Column({ name: 'conditions_version', type: 'varchar', length: 1024, default: '' })
  conditionsVersion: string;

  @Column({ name: 'conditions_tags', type: 'text', array: true, default: () => "'{}'" })
  conditionsTags: string[];

  @Column({
    name: 'conditions_tag_operator',
    type: 'enum',
    enum: TAG_OPERATORS,
    enumName: 'deployment_tag_operator',
    default: 'and',
  })
  conditionsTagOperator: TagOperator;

  @Column({ type: 'varchar', length: 1000, nullable: true })
  notes: string | null;

  @Column({ name: 'delta_updatable', type: 'boolean', default: true })
  deltaUpdatable: boolean;

  @Column({ name: 'concurrent_updates', type: 'integer', default: 10 })
  concurrentUpdates: number;

  @Column({ name: 'inflight_update_expiration_minutes', type: 'integer', default: 60 })
  inflightUpdateExpirationMinutes: number;

  @Column({ name: 'device_failure_threshold', type: 'integer', default: 3 })
  deviceFailureThreshold: number;

  @Column({ name: 'device_failure_rate_seconds', type: 'integer', default: 180 })
  deviceFailureRateSeconds: number;

  @Column({ name: 'device_failure_rate_amount', type: 'integer', default: 5 })
  deviceFailureRateAmount: number;

  @Column({ name: 'failure_threshold', type: 'integer', default: 50 })
  failureThreshold: number;

  @Column({ name: 'penalty_timeout_minutes', type: 'integer', default: 1440 })
  penaltyTimeoutMinutes: number;

  @Column({
    name: 'queue_management',
    type: 'enum',
    enum: QUEUE_MANAGEMENT,
    enumName: 'deployment_queue_management',
    default: 'FIFO',
  })
  queueManagement: QueueManagement;

  @Column({ name: 'lock_device_membership', type: 'boolean', default: false })
  lockDeviceMembership: boolean;

  /** The release devices are updated to; null only while the group is being created. */
  @Column({ name: 'current_release_id', type: 'bigint', nullable: true })
  currentReleaseId: string | null;

  @ManyToOne('DeploymentRelease', { onDelete: 'SET NULL' })
  @JoinColumn({ name: 'current_release_id' })
  currentRelease?: DeploymentRelease | null;

  /** Why the group paused itself (the current release's failures reached `failure_threshold`), until resumed. */
  @Column({ name: 'paused_reason', type: 'varchar', length: 1000, nullable: true })
  pausedReason: string | null;

  @Column({ name: 'paused_at', type: 'timestamptz', nullable: true })
  pausedAt: Date | null;

  @InsertedAtColumn()
  insertedAt: Date;

  @UpdatedAtColumn()
  updatedAt: Date;
}
