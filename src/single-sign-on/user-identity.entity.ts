import { Column, Entity, Index, JoinColumn, ManyToOne } from 'typeorm';
import { BigIdColumn, InsertedAtColumn } from '../database/columns';
import { User } from '../users/user.entity';

/** A user's account at an identity provider (its `iss` and `sub`), linked at the first single sign-on. */
@Entity('user_identities')
@Index('user_identities_issuer_subject_key', ['issuer', 'subject'], { unique: true })
@Index('user_identities_user_id_idx', ['userId'])
export class UserIdentity {
  @BigIdColumn()
  id: string;

  @Column({ name: 'user_id', type: 'bigint' })
  userId: string;

  @ManyToOne(() => User, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'user_id' })
  user?: User;

  @Column({ type: 'varchar', length: 255 })
  issuer: string;

  @Column({ type: 'varchar', length: 255 })
  subject: string;

  /** The verified email it was linked by (or created with). */
  @Column({ type: 'varchar', length: 320 })
  email: string;

  @InsertedAtColumn()
  insertedAt: Date;
}
