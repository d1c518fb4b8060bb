import { Column, JoinColumn, ManyToOne } from 'typeorm';
import { BigIdColumn, InsertedAtColumn } from '../database/columns';
import { Product } from '../products/product.entity';
import { User } from '../users/user.entity';

/**
 * The columns a firmware and an archive share: a file uploaded to a product, described by its fwup meta.conf (or
 * a firmware format's equivalent) and kept in the firmware store. Each entity adds its own columns, keys and
 * indexes (TypeORM inherits the columns of a class that is not an entity itself).
 */
export abstract class UploadedFwupFileColumns {
  @BigIdColumn()
  id: string;

  @Column({ name: 'product_id', type: 'bigint' })
  productId: string;

  @ManyToOne(() => Product, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'product_id' })
  product?: Product;

  /** `meta-uuid` of its meta.conf. */
  @Column({ type: 'uuid' })
  uuid: string;

  @Column({ type: 'varchar', length: 255 })
  version: string;

  /** Byte-wise sortable encoding of the semantic version (see semver-sort-key.ts). */
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

  @Column({ name: 'uploaded_by_id', type: 'bigint', nullable: true })
  uploadedById: string | null;

  @ManyToOne(() => User, { onDelete: 'SET NULL' })
  @JoinColumn({ name: 'uploaded_by_id' })
  uploadedBy?: User | null;

  @InsertedAtColumn()
  insertedAt: Date;
}
