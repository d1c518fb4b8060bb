import { Column, Entity } from 'typeorm';
import { BigIdColumn, InsertedAtColumn, UpdatedAtColumn } from '../database/columns';

@Entity('orgs')
export class Org {
  @BigIdColumn()
  id: string;

  @Column({ type: 'varchar', length: 64, unique: true })
  name: string;

  @InsertedAtColumn()
  insertedAt: Date;

  @UpdatedAtColumn()
  updatedAt: Date;
}
