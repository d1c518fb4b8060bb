import { Column, Entity, Index } from 'typeorm';
import { BigIdColumn, InsertedAtColumn } from '../../database/columns';

/**
 * A stored file whose firmware row is gone and which is still to be removed from storage: written in the
 * transaction that deletes the row, removed once the file is. A row never points at a missing file; a file may
 * outlive its row until its removal succeeds.
 */
@Entity('storage_deletions')
@Index('storage_deletions_next_attempt_at_idx', ['nextAttemptAt'])
export class StorageDeletion {
  @BigIdColumn()
  id: string;

  @Column({ name: 'storage_key', type: 'varchar', length: 255 })
  storageKey: string;

  @Column({ type: 'integer', default: 0 })
  attempts: number;

  @Column({ name: 'next_attempt_at', type: 'timestamptz', default: () => 'now()' })
  nextAttemptAt: Date;

  @InsertedAtColumn()
  insertedAt: Date;
}
