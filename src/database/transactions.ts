import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';

/**
 * A transaction in progress. Services receive it from `Transactions.run` and hand it to the repositories whose
 * statements must commit together; they never run SQL on it themselves.
 */
export type Tx = EntityManager;

/** What a repository runs a statement on: the pool (outside a transaction) or a transaction in progress. */
export interface Queryable {
  query<T = unknown>(sql: string, parameters?: unknown[]): Promise<T>;
}

/** Runs work in one database transaction: the one way services open a transaction (they never see DataSource). */
@Injectable()
export class Transactions {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  run<T>(work: (tx: Tx) => Promise<T>): Promise<T> {
    return this.db.transaction(work);
  }
}
