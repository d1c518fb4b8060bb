import { Column, Entity, Index, Unique } from 'typeorm';
import { UploadedFwupFileColumns } from './uploaded-fwup-file.entity';

@Entity('firmwares')
@Unique('firmwares_product_id_uuid_key', ['productId', 'uuid'])
@Index('firmwares_product_id_version_sort_idx', ['productId', 'versionSortKey', 'insertedAt'])
@Index('firmwares_product_id_version_idx', ['productId', 'version'])
export class Firmware extends UploadedFwupFileColumns {
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

  /** SHA-256 of each 1 MiB chunk, in order. */
  @Column({ name: 'chunk_sha256', type: 'text', array: true })
  chunkSha256: string[];

  /** Name of the signing key whose signature verified, null for an accepted unsigned image. */
  @Column({ name: 'signed_with', type: 'varchar', length: 255, nullable: true })
  signedWith: string | null;
}
