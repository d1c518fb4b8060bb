import { Column, Entity, Index, JoinColumn, ManyToOne } from 'typeorm';
import { BigIdColumn, InsertedAtColumn, UpdatedAtColumn } from '../database/columns';
import { Product } from '../products/product.entity';
import { User } from '../users/user.entity';

export const DEVICE_IMPORT_STATUSES = ['running', 'done', 'interrupted'] as const;
export type DeviceImportStatus = (typeof DEVICE_IMPORT_STATUSES)[number];

/** One entry's refusal, as the job lists it. */
export interface DeviceImportError {
  index: number;
  identifier: string | null;
  error: string;
}

/** A bulk import of devices (`POST .../devices/import`): its progress and the entries it refused. */
@Entity('device_imports')
@Index('device_imports_product_id_idx', ['productId', 'insertedAt'])
export class DeviceImport {
  @BigIdColumn()
  id: string;

  @Column({ name: 'product_id', type: 'bigint' })
  productId: string;

  @ManyToOne(() => Product, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'product_id' })
  product?: Product;

  @Column({ type: 'varchar', length: 64 })
  format: string;

  @Column({ type: 'text', array: true, default: () => "'{}'" })
  tags: string[];

  @Column({
    type: 'enum',
    enum: DEVICE_IMPORT_STATUSES,
    enumName: 'device_import_status',
    default: 'running',
  })
  status: DeviceImportStatus;

  @Column({ type: 'integer' })
  total: number;

  @Column({ type: 'integer', default: 0 })
  processed: number;

  /** Devices created. */
  @Column({ type: 'integer', default: 0 })
  created: number;

  /** Entries whose device and certificate were there already (the same manifest sent again). */
  @Column({ type: 'integer', default: 0 })
  unchanged: number;

  @Column({ type: 'integer', default: 0 })
  failed: number;

  /** The first MAX_LISTED_ERRORS refusals (`failed` counts them all). */
  @Column({ type: 'jsonb', default: () => "'[]'" })
  errors: DeviceImportError[];

  @Column({ name: 'requested_by_id', type: 'bigint', nullable: true })
  requestedById: string | null;

  @ManyToOne(() => User, { onDelete: 'SET NULL' })
  @JoinColumn({ name: 'requested_by_id' })
  requestedBy?: User;

  @InsertedAtColumn()
  insertedAt: Date;

  /** Written after every batch: a running job silent for a minute lost its instance (shown `interrupted`). */
  @UpdatedAtColumn()
  updatedAt: Date;
}
