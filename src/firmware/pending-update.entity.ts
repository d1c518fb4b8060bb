import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { DeploymentGroup } from '../deployments/deployment-group.entity';
import { DeploymentRelease } from '../deployments/deployment-release.entity';
import { Device } from '../devices/device.entity';
import { User } from '../users/user.entity';
import { Firmware } from './firmware.entity';

/**
 * The update waiting for delivery to a device or in flight: at most one per device. A manual upgrade has no
 * deployment group; an update the deployment orchestrator started names its group and release, and expires.
 */
@Entity('pending_updates')
@Index('pending_updates_firmware_id_idx', ['firmwareId'])
@Index('pending_updates_deployment_group_id_idx', ['deploymentGroupId'])
@Index('pending_updates_expires_at_idx', { synchronize: false })
export class PendingUpdate {
  @PrimaryColumn({ name: 'device_id', type: 'bigint' })
  deviceId: string;

  @ManyToOne(() => Device, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'device_id' })
  device?: Device;

  @Column({ name: 'firmware_id', type: 'bigint' })
  firmwareId: string;

  @ManyToOne(() => Firmware, { onDelete: 'RESTRICT' })
  @JoinColumn({ name: 'firmware_id' })
  firmware?: Firmware;

  @Column({ name: 'requested_by_id', type: 'bigint', nullable: true })
  requestedById: string | null;

  @ManyToOne(() => User, { onDelete: 'SET NULL' })
  @JoinColumn({ name: 'requested_by_id' })
  requestedBy?: User | null;

  @Column({ name: 'delivered_at', type: 'timestamptz', nullable: true })
  deliveredAt: Date | null;

  /** Last `status_update` the device sent for this update (e.g. `downloading`, `updating`, `fwup error`). */
  @Column({ type: 'varchar', length: 64, nullable: true })
  status: string | null;

  /** Last `fwup_progress` percentage (0–100). */
  @Column({ type: 'smallint', nullable: true })
  progress: number | null;

  /**
   * The highest progress milestone (25, 50 or 75 %) reached since the update was sent (0: none), kept by a
   * trigger: `update.progress` is written once per milestone and delivery, whatever the device reports.
   */
  @Column({ name: 'progress_milestone', type: 'smallint', default: 0 })
  progressMilestone: number;

  @Column({ name: 'status_updated_at', type: 'timestamptz', nullable: true })
  statusUpdatedAt: Date | null;

  @Column({ name: 'deployment_group_id', type: 'bigint', nullable: true })
  deploymentGroupId: string | null;

  @ManyToOne(() => DeploymentGroup, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'deployment_group_id' })
  deploymentGroup?: DeploymentGroup | null;

  @Column({ name: 'deployment_release_id', type: 'bigint', nullable: true })
  deploymentReleaseId: string | null;

  @ManyToOne(() => DeploymentRelease, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'deployment_release_id' })
  deploymentRelease?: DeploymentRelease | null;

  /**
   * The update may be sent as an fwup delta (an orchestrated update of a group with `delta_updatable`); a manual
   * upgrade always sends the full file, as NervesHub's API push does.
   */
  @Column({ name: 'delta_allowed', type: 'boolean', default: false })
  deltaAllowed: boolean;

  /** An orchestrated update not finished by then is given up (`inflight_update_expiration_minutes`). */
  @Column({ name: 'expires_at', type: 'timestamptz', nullable: true })
  expiresAt: Date | null;

  @CreateDateColumn({ name: 'inserted_at', type: 'timestamptz', default: () => 'now()' })
  insertedAt: Date;
}
