import { Column, Entity, JoinColumn, ManyToOne, Unique } from 'typeorm';
import { BigIdColumn, InsertedAtColumn } from '../database/columns';
import { Org } from '../orgs/org.entity';

@Entity('signing_keys')
@Unique('signing_keys_org_id_name_key', ['orgId', 'name'])
export class SigningKey {
  @BigIdColumn()
  id: string;

  @Column({ name: 'org_id', type: 'bigint' })
  orgId: string;

  @ManyToOne(() => Org, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'org_id' })
  org?: Org;

  @Column({ type: 'varchar', length: 255 })
  name: string;

  /** 44-character padded base64 of the raw 32-byte ed25519 public key, as fwup prints it. */
  @Column({ type: 'varchar', length: 44 })
  key: string;

  @InsertedAtColumn()
  insertedAt: Date;
}
