import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { Tx } from '../database/transactions';
import { Org } from './org.entity';

/** The `orgs` table. */
@Injectable()
export class OrgsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** Inserts an organization (a unique violation when the name is taken). */
  insert(name: string, tx: Tx): Promise<Org> {
    return tx.getRepository(Org).save(tx.getRepository(Org).create({ name }));
  }

  findByName(name: string): Promise<Org | null> {
    return this.db.getRepository(Org).findOneBy({ name });
  }
}
