import type { Pool, QueryResultRow } from 'pg';
import type { DataSource } from 'typeorm';

/**
 * The rows of one read statement, sent through the pg pool TypeORM holds (the same connections, size and
 * timeouts) rather than `DataSource.query`, which creates, wires up and releases a QueryRunner for every statement:
 * on the hot reads (the guard's lookups, lists, single records) that was a tenth of the server's CPU per request.
 * For reads outside transactions only; errors are pg's own, which the error mapping reads as it reads TypeORM's
 * (`pgError`).
 */
export async function readRows<Row extends QueryResultRow>(
  db: DataSource,
  sql: string,
  params: readonly unknown[],
): Promise<Row[]> {
  const pool = (db.driver as unknown as { master: Pool }).master;
  return (await pool.query<Row>(sql, params as unknown[])).rows;
}
