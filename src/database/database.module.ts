import { type DynamicModule, Global, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { DatabasePool } from './database-pool';
import { dataSourceOptions } from './data-source-options';
import { Transactions } from './transactions';

/**
 * The TypeORM connection, `Transactions` and `DatabasePool`, global. Only repositories (one per aggregate,
 * `*.repository.ts`) and src/database/ touch the DataSource; services call repositories and open transactions with
 * `Transactions.run`.
 */
@Global()
@Module({})
export class DatabaseModule {
  /** `databaseUrl` is resolved before the app starts (DATABASE_URL, or the embedded server). */
  static register(databaseUrl: string, poolSize?: number): DynamicModule {
    return {
      module: DatabaseModule,
      imports: [TypeOrmModule.forRoot({ ...dataSourceOptions(databaseUrl, { poolSize }), retryAttempts: 0 })],
      providers: [Transactions, DatabasePool],
      exports: [Transactions, DatabasePool],
    };
  }
}
