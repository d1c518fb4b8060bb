import type { DataSourceOptions } from 'typeorm';
import { MIGRATIONS } from '../../migrations';
import { ENTITIES } from './entities';
import { PG_DRIVER } from './pg-driver';

/** The one description of the database, shared by the app, the CLI, the tests and the migration tools. */
export function dataSourceOptions(
  url: string,
  extra: { poolSize?: number; appName?: string } = {},
): DataSourceOptions {
  return {
    type: 'postgres',
    driver: PG_DRIVER,
    url,
    entities: ENTITIES,
    migrations: MIGRATIONS,
    migrationsTableName: 'schema_migrations',
    migrationsTransactionMode: 'each',
    synchronize: false,
    migrationsRun: false,
    uuidExtension: 'pgcrypto',
    poolSize: extra.poolSize ?? 10,
    applicationName: extra.appName ?? 'fleethub',
    extra: {
      connectionTimeoutMillis: 5000,
      idleTimeoutMillis: 30000,
      // A statement never holds a pool connection for longer than this (no hang on a stuck query).
      statement_timeout: 30000,
    },
  };
}
