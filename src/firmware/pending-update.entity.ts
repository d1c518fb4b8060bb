import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Device } from '../devices/device.entity';
import { User } from '../users/user.entity';
import { Firmware } from './firmware.entity';

/** The manual upgrade waiting for delivery to a device: at most one per device. */
@Entity('pending_updates')
@Index('pending_updates_firmware_id_idx', ['firmwareId'])
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

  @Column({ name: 'status_updated_at', type: 'timestamptz', nullable: true })
  statusUpdatedAt: Date | null;

  @CreateDateColumn({ name: 'inserted_at', type: 'timestamptz', default: () => 'now()' })
  insertedAt: Date;
}
