import { Column, Entity, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { Product } from '../products/product.entity';

/**
 * Exact device totals kept by triggers on `devices` (migration `DeviceCounters`), so that the unfiltered and
 * single-tag device lists answer `total_entries` in O(1) at a million devices.
 */
@Entity('product_device_counts')
export class ProductDeviceCount {
  @PrimaryColumn({ name: 'product_id', type: 'bigint' })
  productId: string;

  @ManyToOne(() => Product, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'product_id' })
  product?: Product;

  @Column({ type: 'bigint', default: 0 })
  total: string;
}

@Entity('product_tag_counts')
export class ProductTagCount {
  @PrimaryColumn({ name: 'product_id', type: 'bigint' })
  productId: string;

  @PrimaryColumn({ type: 'text' })
  tag: string;

  @ManyToOne(() => Product, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'product_id' })
  product?: Product;

  @Column({ type: 'bigint', default: 0 })
  total: string;
}
