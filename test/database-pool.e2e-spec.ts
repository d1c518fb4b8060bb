import { DataSource } from 'typeorm';
import type { PoolClient } from 'pg';
import { isDatabaseUnavailable } from '../src/common/errors/postgres-errors';
import { dataSourceOptions } from '../src/database/data-source-options';
import { eventually } from './support/eventually';
import { createTestDatabase } from './support/test-database';

/**
 * A pooled connection that PostgreSQL ends while nobody listens on it (checked out between two statements, as
 * TypeORM's own start holds one) must not end the process: before, its `error` event had no listener and Node made
 * it an uncaught exception (issue 21: an instance starting while PostgreSQL restarted exited).
 */
describe('database pool', () => {
  let database: { url: string; drop(): Promise<void> };
  let db: DataSource;
  beforeAll(async () => {
    database = await createTestDatabase();
    db = new DataSource(dataSourceOptions(database.url, { poolSize: 2 }));
    await db.initialize();
  });
  afterAll(async () => {
    await db.destroy();
    await database.drop();
  });

  it('a checked-out client whose backend is terminated between statements does not throw, its next statement is a 503, the pool goes on', async () => {
    const pool = (db.driver as unknown as { master: { connect(): Promise<PoolClient> } }).master;
    const client = await pool.connect();
    const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const ended = new Promise<void>((resolve) => client.once('end', () => resolve()));
    await db.query('SELECT pg_terminate_backend($1)', [rows[0].pid]);
    await ended;
    // A statement on it fails with node-postgres's own error, which the error filter counts as the database away.
    const refused: unknown = await client.query('SELECT 1').then(
      () => null,
      (err: unknown) => err,
    );
    expect(refused).toBeInstanceOf(Error);
    expect(isDatabaseUnavailable(refused)).toBe(true);
    client.release(new Error('terminated'));
    await eventually(
      () => db.query<{ one: number }[]>('SELECT 1 AS one'),
      (result) => result[0].one === 1,
    );
  });
});
