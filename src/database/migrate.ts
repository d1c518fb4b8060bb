import { DataSource } from 'typeorm';
import { dataSourceOptions } from './data-source-options';

// Any fixed number: instances starting together apply migrations one at a time.
const MIGRATION_LOCK = 727_146_001;

/** Applies pending migrations under an advisory lock; returns the names applied. */
export async function runMigrations(databaseUrl: string): Promise<string[]> {
  const dataSource = new DataSource({
    ...dataSourceOptions(databaseUrl, { poolSize: 1, appName: 'fleethub-migrate' }),
  });
  await dataSource.initialize();
  try {
    await dataSource.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    try {
      const applied = await dataSource.runMigrations({ transaction: 'each' });
      return applied.map((m) => m.name);
    } finally {
      await dataSource.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
    }
  } finally {
    await dataSource.destroy();
  }
}
