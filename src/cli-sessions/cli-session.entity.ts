import { Column, Entity, Index, JoinColumn, ManyToOne } from 'typeorm';
import { BigIdColumn, InsertedAtColumn } from '../database/columns';
import { User } from '../users/user.entity';

export const CLI_SESSION_STATUSES = ['waiting', 'approved', 'claimed', 'closed'] as const;
/**
 * `waiting` for the user's approval; `approved` by a user (the CLI's next poll claims it); `claimed`: the API
 * token was handed out (once); `closed`: denied in the browser, or out of confirmation attempts.
 */
export type CliSessionStatus = (typeof CLI_SESSION_STATUSES)[number];

/** A sign-in of NervesHub's CLI through the browser (`POST /api/auth/cli_session`), until it expires. */
@Entity('cli_sessions')
@Index('cli_sessions_expires_at_idx', ['expiresAt'])
export class CliSession {
  @BigIdColumn()
  id: string;

  /** SHA-256 of the session token the CLI polls with; the token itself is never stored. */
  @Column({ name: 'token_hash', type: 'bytea', unique: true })
  tokenHash: Buffer;

  @Column({ name: 'confirmation_code', type: 'varchar', length: 6 })
  confirmationCode: string;

  /** The note of the API token it mints. */
  @Column({ type: 'varchar', length: 255, nullable: true })
  note: string | null;

  @Column({ type: 'enum', enum: CLI_SESSION_STATUSES, enumName: 'cli_session_status', default: 'waiting' })
  status: CliSessionStatus;

  /** Every submission of the browser form uses one, whatever its outcome. */
  @Column({ name: 'attempts', type: 'smallint', default: 0 })
  attempts: number;

  @Column({ name: 'user_id', type: 'bigint', nullable: true })
  userId: string | null;

  @ManyToOne(() => User, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'user_id' })
  user?: User;

  @Column({ name: 'expires_at', type: 'timestamptz' })
  expiresAt: Date;

  @InsertedAtColumn()
  insertedAt: Date;
}
