import { Column, Entity, Index, JoinColumn, ManyToOne } from 'typeorm';
import { BigIdColumn, InsertedAtColumn } from '../database/columns';
import { User } from '../users/user.entity';

/**
 * A user signed in in a browser (`POST /api/session`), until it is signed out, ended from the account page, idle
 * too long or too old. Its expiry is computed from `last_seen_at`, `inserted_at` and the configuration
 * (docs/decisions.md, "Browser sessions").
 */
@Entity('browser_sessions')
@Index('browser_sessions_user_id_idx', ['userId'])
export class BrowserSession {
  @BigIdColumn()
  id: string;

  @Column({ name: 'user_id', type: 'bigint' })
  userId: string;

  @ManyToOne(() => User, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'user_id' })
  user?: User;

  /** SHA-256 of the cookie's secret; the secret itself is never stored. */
  @Column({ name: 'token_hash', type: 'bytea', unique: true })
  tokenHash: Buffer;

  /** Kept current to the minute, not on every request. */
  @Column({ name: 'last_seen_at', type: 'timestamptz', default: () => 'now()' })
  lastSeenAt: Date;

  /** The browser's `User-Agent` at sign-in, truncated, to recognise the session by. */
  @Column({ name: 'user_agent', type: 'varchar', length: 255, nullable: true })
  userAgent: string | null;

  /** How the session signed in: `password` (with its second factor, if any) or `oidc` (single sign-on). */
  @Column({ name: 'sign_in_method', type: 'varchar', length: 16, default: 'password' })
  signInMethod: string;

  @Column({ name: 'source_address', type: 'varchar', length: 64, nullable: true })
  sourceAddress: string | null;

  @InsertedAtColumn()
  insertedAt: Date;
}
