import { Column, Entity, JoinColumn, OneToOne, PrimaryColumn, UpdateDateColumn } from 'typeorm';
import { Device } from '../devices/device.entity';

/** The tail of what a device printed on its console (`up` events), bounded, readable from any instance. */
@Entity('device_console_output')
export class DeviceConsoleOutput {
  @PrimaryColumn({ name: 'device_id', type: 'bigint' })
  deviceId: string;

  @OneToOne(() => Device, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'device_id' })
  device?: Device;

  @Column({ type: 'text', default: '' })
  output: string;

  @UpdateDateColumn({ name: 'updated_at', type: 'timestamptz', default: () => 'now()' })
  updatedAt: Date;
}
