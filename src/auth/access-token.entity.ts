import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne } from 'typeorm';
import { BigIdColumn } from '../database/columns';
import { User } from '../users/user.entity';
import { TOKEN_RENDERINGS, type TokenRendering } from './token-rendering';
import { TOKEN_SCOPES, type TokenScope } from './token-scope';

@Entity('access_tokens')
@Index('access_tokens_user_id_idx', ['userId'])
export class AccessToken {
  @BigIdColumn()
  id: string;

  @Column({ name: 'user_id', type: 'bigint' })
  userId: string;

  @ManyToOne(() => User, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'user_id' })
  user?: User;

  /** SHA-256 of the whole token string; the token itself is never stored. */
  @Column({ name: 'token_hash', type: 'bytea', unique: true })
  tokenHash: Buffer;

  @Column({ type: 'varchar', length: 255, nullable: true })
  note: string | null;

  @Column({ type: 'enum', enum: TOKEN_SCOPES, enumName: 'token_scope', default: 'all' })
  scope: TokenScope;

  @Column({ type: 'enum', enum: TOKEN_RENDERINGS, enumName: 'token_rendering', default: 'fleethub' })
  rendering: TokenRendering;

  @Column({ name: 'expires_at', type: 'timestamptz', nullable: true })
  expiresAt: Date | null;

  @Column({ name: 'revoked_at', type: 'timestamptz', nullable: true })
  revokedAt: Date | null;

  @Column({ name: 'last_used_at', type: 'timestamptz', nullable: true })
  lastUsedAt: Date | null;

  /** The address the token was last used from (written with last_used_at, at most once a minute). */
  @Column({ name: 'last_used_address', type: 'varchar', length: 64, nullable: true })
  lastUsedAddress: string | null;

  @CreateDateColumn({ name: 'inserted_at', type: 'timestamptz', default: () => 'now()' })
  insertedAt: Date;
}
