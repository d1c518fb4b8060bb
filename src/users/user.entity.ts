import { Column, Entity, Index } from 'typeorm';
import { BigIdColumn, InsertedAtColumn, UpdatedAtColumn } from '../database/columns';

@Entity('users')
@Index('users_name_trgm_idx', { synchronize: false })
export class User {
  @BigIdColumn()
  id: string;

  /** Stored trimmed and lower-cased; unique. */
  @Column({ type: 'varchar', length: 320, unique: true })
  email: string;

  @Column({ type: 'varchar', length: 64, unique: true })
  username: string;

  @Column({ type: 'varchar', length: 255 })
  name: string;

  /** scrypt hash (see PasswordHasher); null for accounts that only use tokens. */
  @Column({ name: 'password_hash', type: 'text', nullable: true })
  passwordHash: string | null;

  @InsertedAtColumn()
  insertedAt: Date;

  @UpdatedAtColumn()
  updatedAt: Date;
}
