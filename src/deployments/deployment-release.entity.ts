import { Column, Entity, Index, JoinColumn, ManyToOne } from 'typeorm';
import { BigIdColumn, InsertedAtColumn, UpdatedAtColumn } from '../database/columns';
import { Firmware } from '../firmware/firmware.entity';
import { User } from '../users/user.entity';
import { DeploymentGroup } from './deployment-group.entity';

/** One firmware a deployment group rolled out: number 1 at creation, + 1 each time its firmware changes. */
@Entity('deployment_releases')
@Index('deployment_releases_group_id_number_idx', ['deploymentGroupId', 'number'], { unique: true })
@Index('deployment_releases_firmware_id_idx', ['firmwareId'])
export class DeploymentRelease {
  @BigIdColumn()
  id: string;

  @Column({ name: 'deployment_group_id', type: 'bigint' })
  deploymentGroupId: string;

  @ManyToOne(() => DeploymentGroup, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'deployment_group_id' })
  deploymentGroup?: DeploymentGroup;

  @Column({ type: 'integer' })
  number: number;

  @Column({ name: 'firmware_id', type: 'bigint' })
  firmwareId: string;

  @ManyToOne(() => Firmware, { onDelete: 'RESTRICT' })
  @JoinColumn({ name: 'firmware_id' })
  firmware?: Firmware;

  @Column({ name: 'created_by_id', type: 'bigint', nullable: true })
  createdById: string | null;

  @ManyToOne(() => User, { onDelete: 'SET NULL' })
  @JoinColumn({ name: 'created_by_id' })
  createdBy?: User | null;

  /** Updates to this release that ended failed or ignored (the group pauses itself at `failure_threshold`). */
  @Column({ name: 'failed_count', type: 'integer', default: 0 })
  failedCount: number;

  /**
   * When every device of the group that takes updates ran this release with none in flight
   * (`deployment_group.finished` was written then): set once per release.
   */
  @Column({ name: 'finished_at', type: 'timestamptz', nullable: true })
  finishedAt: Date | null;

  @InsertedAtColumn()
  insertedAt: Date;

  @UpdatedAtColumn()
  updatedAt: Date;
}
