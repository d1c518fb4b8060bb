import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { CONNECTION_STATUSES, type ConnectionStatus } from '../devices/device.entity';
import { Product } from '../products/product.entity';

/**
 * A product's devices per connection status, kept exact by statement-level triggers on `devices` (migration
 * `FleetOverview`), so that the fleet overview answers "connected now" in O(1) at a million devices. Each total
 * is spread over `shard` rows (the writing backend's pid modulo 16), as `product_device_counts` is, so that
 * devices connecting at the same time do not queue on one row; a shard may be negative, a total is their sum.
 */
@Entity('product_connection_counts')
export class ProductConnectionCount {
  @PrimaryColumn({ name: 'product_id', type: 'bigint' })
  productId: string;

  @ManyToOne(() => Product, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'product_id' })
  product?: Product;

  @PrimaryColumn({
    name: 'connection_status',
    type: 'enum',
    enum: CONNECTION_STATUSES,
    enumName: 'device_connection_status',
  })
  connectionStatus: ConnectionStatus;

  @PrimaryColumn({ type: 'smallint' })
  shard: number;

  @Column({ type: 'bigint', default: 0 })
  total: string;
}

/**
 * A product's devices per reported firmware version (devices without one are not counted: they are the
 * product's total minus the sum), kept and sharded as ProductConnectionCount.
 */
@Entity('product_firmware_counts')
export class ProductFirmwareCount {
  @PrimaryColumn({ name: 'product_id', type: 'bigint' })
  productId: string;

  @ManyToOne(() => Product, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'product_id' })
  product?: Product;

  @PrimaryColumn({ name: 'firmware_version', type: 'varchar', length: 255 })
  firmwareVersion: string;

  @PrimaryColumn({ type: 'smallint' })
  shard: number;

  @Column({ type: 'bigint', default: 0 })
  total: string;
}

/**
 * A product's devices whose latest health report has an active alarm (`device_health.alarm_count > 0`), kept
 * exact by triggers (migration `HealthAlarmCounts`): statement-level on `device_health` (a report raising or
 * clearing alarms, the device's product read from `devices`), in the statement-level update trigger of `devices`
 * (a move carries an alarmed device's count to its new product) and a row-level BEFORE DELETE trigger of
 * `devices` (the device's health row then goes by cascade, when its product can no longer be read). Sharded as
 * ProductConnectionCount.
 */
@Entity('product_alarm_counts')
export class ProductAlarmCount {
  @PrimaryColumn({ name: 'product_id', type: 'bigint' })
  productId: string;

  @ManyToOne(() => Product, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'product_id' })
  product?: Product;

  @PrimaryColumn({ type: 'smallint' })
  shard: number;

  @Column({ type: 'bigint', default: 0 })
  total: string;
}

/**
 * "Connected over time": a product's connected devices and device total, sampled once a minute (the minute is
 * the key, so a second instance sampling the same minute adds nothing) from the counter rows and kept for
 * SAMPLE_RETENTION_DAYS.
 */
@Entity('product_connection_samples')
@Index('product_connection_samples_sampled_at_idx', ['sampledAt'])
export class ProductConnectionSample {
  @PrimaryColumn({ name: 'product_id', type: 'bigint' })
  productId: string;

  @ManyToOne(() => Product, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'product_id' })
  product?: Product;

  @PrimaryColumn({ name: 'sampled_at', type: 'timestamptz' })
  sampledAt: Date;

  @Column({ type: 'integer' })
  connected: number;

  @Column({ type: 'integer' })
  total: number;
}
