import { Column, Entity, Index, Unique } from 'typeorm';
import { UploadedFwupFileColumns } from '../firmware/uploaded-fwup-file.entity';

/**
 * An archive (NervesHub's `archives`): a signed fwup file that is not firmware (a model, a configuration bundle),
 * pushed to the devices of the deployment groups it is attached to. Its file lives in the firmware store.
 */
@Entity('archives')
@Unique('archives_product_id_uuid_key', ['productId', 'uuid'])
@Index('archives_product_id_version_sort_idx', ['productId', 'versionSortKey', 'insertedAt'])
export class Archive extends UploadedFwupFileColumns {
  /** Name of the organization signing key whose signature verified. */
  @Column({ name: 'signed_with', type: 'varchar', length: 255 })
  signedWith: string;
}
