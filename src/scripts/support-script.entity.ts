import { Column, Entity, Index, JoinColumn, ManyToOne } from 'typeorm';
import { BigIdColumn, InsertedAtColumn, UpdatedAtColumn } from '../database/columns';
import { Product } from '../products/product.entity';
import { User } from '../users/user.entity';

@Entity('support_scripts')
@Index('support_scripts_product_id_id_idx', ['productId', 'id'])
export class SupportScript {
  @BigIdColumn()
  id: string;

  @Column({ name: 'product_id', type: 'bigint' })
  productId: string;

  @ManyToOne(() => Product, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'product_id' })
  product?: Product;

  @Column({ type: 'varchar', length: 255 })
  name: string;

  /** Normalised tags: trimmed pieces joined by `,` (empty string when none). */
  @Column({ type: 'text', default: '' })
  tags: string;

  @Column({ type: 'text' })
  text: string;

  @Column({ name: 'created_by_id', type: 'bigint', nullable: true })
  createdById: string | null;

  @ManyToOne(() => User, { onDelete: 'SET NULL' })
  @JoinColumn({ name: 'created_by_id' })
  createdBy?: User | null;

  @InsertedAtColumn()
  insertedAt: Date;

  @UpdatedAtColumn()
  updatedAt: Date;
}
