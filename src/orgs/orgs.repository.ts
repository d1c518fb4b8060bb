import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { Queryable, Tx } from '../database/transactions';
import { Org } from './org.entity';

/** The `orgs` table. */
@Injectable()
export class OrgsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** Inserts an organization (a unique violation when the name is taken). */
  insert(name: string, tx: Tx): Promise<Org> {
    return tx.getRepository(Org).save(tx.getRepository(Org).create({ name }));
  }

  /** The names of the organizations with these ids (those that still exist). */
  namesByIds(ids: string[]): Promise<{ id: string; name: string }[]> {
    return this.db.query(`SELECT id, name FROM orgs WHERE id = ANY($1::bigint[])`, [ids]);
  }

  findByName(name: string): Promise<Org | null> {
    return this.db.getRepository(Org).findOneBy({ name });
  }

  /**
   * Deletes an organization by name; what it holds goes with it (foreign keys cascade), except devices, whose
   * product refuses (a foreign key violation): only for an organization without devices (`fleethub demo`
   * undoing a failed seed). False when there was none.
   */
  async deleteByName(name: string, tx: Queryable): Promise<boolean> {
    const [, deleted] = await tx.query<[unknown, number]>(`DELETE FROM orgs WHERE name = $1`, [name]);
    return deleted > 0;
  }
}
