import { Column, Entity, JoinColumn, OneToOne, PrimaryColumn } from 'typeorm';
import { InsertedAtColumn, UpdatedAtColumn } from '../database/columns';
import { User } from '../users/user.entity';

/**
 * A user's TOTP two-factor sign-in (RFC 6238): pending from enrolment until a first code confirms it, then
 * required at every password sign-in. One row per user at most.
 */
@Entity('user_two_factor')
export class UserTwoFactor {
  @PrimaryColumn({ name: 'user_id', type: 'bigint' })
  userId: string;

  @OneToOne(() => User, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'user_id' })
  user?: User;

  /** The shared secret, base32 as authenticator apps take it (20 random bytes). */
  @Column({ type: 'varchar', length: 64 })
  secret: string;

  /** Null while the enrolment waits for its first code: two-factor sign-in is on only once confirmed. */
  @Column({ name: 'confirmed_at', type: 'timestamptz', nullable: true })
  confirmedAt: Date | null;

  /** The 30-second step of the last code accepted: that code and every earlier one are refused (no replay). */
  @Column({ name: 'last_used_step', type: 'bigint', nullable: true })
  lastUsedStep: string | null;

  /** SHA-256 (hex) of each unused backup code; a code used at sign-in is removed from the list. */
  @Column({ name: 'backup_code_hashes', type: 'text', array: true, default: () => "'{}'" })
  backupCodeHashes: string[];

  @InsertedAtColumn()
  insertedAt: Date;

  @UpdatedAtColumn()
  updatedAt: Date;
}
