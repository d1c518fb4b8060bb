import { Column, Entity, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Product } from '../products/product.entity';

/**
 * Exact device totals kept by triggers on `devices` (migrations `DeviceCounters`, `ShardedDeviceCounters`), so
 * that the unfiltered and single-tag device lists answer `total_entries` in O(1) at a million devices. Each total
 * is spread over `shard` rows (the writing backend's pid modulo 16) and read as their sum, so that devices
 * registering at the same time do not queue on one row until commit; a shard may be negative.
 */
@Entity('product_device_counts')
export class ProductDeviceCount {
  @PrimaryColumn({ name: 'product_id', type: 'bigint' })
  productId: string;

  @ManyToOne(() => Product, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'product_id' })
  product?: Product;

  @PrimaryColumn({ type: 'smallint', default: 0 })
  shard: number;

  @Column({ type: 'bigint', default: 0 })
  total: string;
}

/** Devices carrying each tag, per product, sharded like ProductDeviceCount. */
@Entity('product_tag_counts')
export class ProductTagCount {
  @PrimaryColumn({ name: 'product_id', type: 'bigint' })
  productId: string;

  @PrimaryColumn({ type: 'text' })
  tag: string;

  @PrimaryColumn({ type: 'smallint', default: 0 })
  shard: number;

  @ManyToOne(() => Product, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'product_id' })
  product?: Product;

  @Column({ type: 'bigint', default: 0 })
  total: string;
}
