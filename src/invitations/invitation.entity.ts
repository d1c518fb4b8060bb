import { Column, Entity, Index, JoinColumn, ManyToOne } from 'typeorm';
import { ROLES, type Role } from '../common/auth/roles';
import { BigIdColumn, InsertedAtColumn } from '../database/columns';
import { Org } from '../orgs/org.entity';
import { User } from '../users/user.entity';

/**
 * An invitation of an email without an account to an organization (`POST .../users/invite`), until it is
 * accepted, revoked or expires. Its link's token is derived from `nonce` with the server key, so the table
 * alone cannot be used to accept it; `token_hash` finds it from a link.
 */
@Entity('org_invitations')
@Index('org_invitations_pending_email_idx', ['orgId', 'email'], {
  unique: true,
  where: 'accepted_at IS NULL',
})
export class OrgInvitation {
  @BigIdColumn()
  id: string;

  @Column({ name: 'org_id', type: 'bigint' })
  orgId: string;

  @ManyToOne(() => Org, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'org_id' })
  org?: Org;

  /** Normalised (trimmed, lower-cased). */
  @Column({ type: 'varchar', length: 320 })
  email: string;

  @Column({ type: 'enum', enum: ROLES, enumName: 'org_role' })
  role: Role;

  @Column({ name: 'invited_by_id', type: 'bigint', nullable: true })
  invitedById: string | null;

  @ManyToOne(() => User, { onDelete: 'SET NULL' })
  @JoinColumn({ name: 'invited_by_id' })
  invitedBy?: User;

  @Column({ type: 'bytea' })
  nonce: Buffer;

  @Column({ name: 'token_hash', type: 'bytea', unique: true })
  tokenHash: Buffer;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;

  @Column({ name: 'accepted_at', type: 'timestamptz', nullable: true })
  acceptedAt: Date | null;

  @InsertedAtColumn()
  insertedAt: Date;
}
