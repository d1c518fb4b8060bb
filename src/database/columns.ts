import { CreateDateColumn, PrimaryGeneratedColumn, UpdateDateColumn } from 'typeorm';

/** Every table's surrogate key: a bigint identity, which `pg` returns as a string. */
export const BigIdColumn = () =>
  PrimaryGeneratedColumn('identity', { type: 'bigint', generatedIdentity: 'ALWAYS' });

export const InsertedAtColumn = () =>
  CreateDateColumn({ name: 'inserted_at', type: 'timestamptz', default: () => 'now()' });

export const UpdatedAtColumn = () =>
  UpdateDateColumn({ name: 'updated_at', type: 'timestamptz', default: () => 'now()' });
