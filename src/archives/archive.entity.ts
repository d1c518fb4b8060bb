import { Column, Entity, Index, JoinColumn, ManyToOne, Unique } from 'typeorm';
import { BigIdColumn, InsertedAtColumn } from '../database/columns';
import { Product } from '../products/product.entity';
import { User } from '../users/user.entity';

/**
 * An archive (NervesHub's `archives`): a signed fwup file that is not firmware (a model, a configuration bundle),
 * pushed to the devices of the deployment groups it is attached to. Its file lives in the firmware store.
 */
@Entity('archives')
@Unique('archives_product_id_uuid_key', ['productId', 'uuid'])
@Index('archives_product_id_version_sort_idx', ['productId', 'versionSortKey', 'insertedAt'])
export class Archive {
  @BigIdColumn()
  id: string;

  @Column({ name: 'product_id', type: 'bigint' })
  productId: string;

  @ManyToOne(() => Product, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'product_id' })
  product?: Product;

  /** fwup's `meta-uuid` of its meta.conf, as for firmware. */
  @Column({ type: 'uuid' })
  uuid: string;

  @Column({ type: 'varchar', length: 255 })
  version: string;

  /** Byte-wise sortable encoding of the semantic version (the firmware's semver-sort-key.ts). */
  @Column({ name: 'version_sort_key', type: 'varchar', length: 1024, collation: 'C' })
  versionSortKey: string;

  /** `meta-product` as written in the file (NervesHub does not require it to be the product's name). */
  @Column({ name: 'meta_product', type: 'varchar', length: 255 })
  metaProduct: string;

  @Column({ type: 'varchar', length: 255 })
  platform: string;

  @Column({ type: 'varchar', length: 255 })
  architecture: string;

  @Column({ type: 'varchar', length: 255, nullable: true })
  author: string | null;

  @Column({ type: 'text', nullable: true })
  description: string | null;

  @Column({ type: 'text', nullable: true })
  misc: string | null;

  @Column({ name: 'vcs_identifier', type: 'varchar', length: 255, nullable: true })
  vcsIdentifier: string | null;

  @Column({ type: 'bigint' })
  size: string;

  @Column({ type: 'char', length: 64 })
  sha256: string;

  @Column({ name: 'storage_key', type: 'varchar', length: 255 })
  storageKey: string;

  /** Name of the organization signing key whose signature verified. */
  @Column({ name: 'signed_with', type: 'varchar', length: 255 })
  signedWith: string;

  @Column({ name: 'uploaded_by_id', type: 'bigint', nullable: true })
  uploadedById: string | null;

  @ManyToOne(() => User, { onDelete: 'SET NULL' })
  @JoinColumn({ name: 'uploaded_by_id' })
  uploadedBy?: User | null;

  @InsertedAtColumn()
  insertedAt: Date;
}
