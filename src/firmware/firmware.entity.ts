import { Column, Entity, Index, JoinColumn, ManyToOne, Unique } from 'typeorm';
import { BigIdColumn, InsertedAtColumn } from '../database/columns';
import { Product } from '../products/product.entity';
import { User } from '../users/user.entity';

@Entity('firmwares')
@Unique('firmwares_product_id_uuid_key', ['productId', 'uuid'])
@Index('firmwares_product_id_version_sort_idx', ['productId', 'versionSortKey', 'insertedAt'])
@Index('firmwares_product_id_version_idx', ['productId', 'version'])
export class Firmware {
  @BigIdColumn()
  id: string;

  @Column({ name: 'product_id', type: 'bigint' })
  productId: string;

  @ManyToOne(() => Product, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'product_id' })
  product?: Product;

  @Column({ type: 'uuid' })
  uuid: string;

  @Column({ type: 'varchar', length: 255 })
  version: string;

  /** Byte-wise sortable encoding of the semantic version (see semver-sort-key.ts). */
  @Column({ name: 'version_sort_key', type: 'varchar', length: 1024, collation: 'C' })
  versionSortKey: string;

  /** `meta-product` as written in the archive. */
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

  @Column({ name: 'fwup_version', type: 'varchar', length: 64, nullable: true })
  fwupVersion: string | null;

  /**
   * The oldest fwup that applies an fwup delta to this firmware (its meta.conf's delta features); null when no
   * resource can be written from a delta, for other formats, and for firmware uploaded before delta support.
   */
  @Column({ name: 'delta_fwup_version', type: 'varchar', length: 64, nullable: true })
  deltaFwupVersion: string | null;

  @Column({ type: 'varchar', length: 16 })
  tool: string;

  @Column({ type: 'bigint' })
  size: string;

  @Column({ type: 'char', length: 64 })
  sha256: string;

  /** SHA-256 of each 1 MiB chunk, in order. */
  @Column({ name: 'chunk_sha256', type: 'text', array: true })
  chunkSha256: string[];

  @Column({ name: 'storage_key', type: 'varchar', length: 255 })
  storageKey: string;

  /** Name of the signing key whose signature verified, null for an accepted unsigned image. */
  @Column({ name: 'signed_with', type: 'varchar', length: 255, nullable: true })
  signedWith: string | null;

  @Column({ name: 'uploaded_by_id', type: 'bigint', nullable: true })
  uploadedById: string | null;

  @ManyToOne(() => User, { onDelete: 'SET NULL' })
  @JoinColumn({ name: 'uploaded_by_id' })
  uploadedBy?: User | null;

  @InsertedAtColumn()
  insertedAt: Date;
}
