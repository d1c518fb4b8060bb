import { createHash } from 'node:crypto';
import type { Pool, QueryConfig, QueryResultRow } from 'pg';
import type { DataSource } from 'typeorm';

/**
 * A statement PostgreSQL parses and plans once per pool connection (a named prepared statement), for the device
 * path's statements that run several times per device and update: the parse and plan of each was most of their cost
 * in PostgreSQL. Only for fixed SQL text: every distinct text stays prepared on every connection.
 */
export class PreparedStatement {
  readonly name: string;

  constructor(readonly text: string) {
    this.name = `fh_${createHash('sha256').update(text).digest('hex').slice(0, 24)}`;
  }
}

function config(sql: string | PreparedStatement, params: readonly unknown[]): QueryConfig {
  const values = params as unknown[];
  return typeof sql === 'string' ? { text: sql, values } : { name: sql.name, text: sql.text, values };
}

const poolOf = (db: DataSource) => (db.driver as unknown as { master: Pool }).master;

/**
 * The rows of one read statement, sent through the pg pool TypeORM holds (the same connections, size and
 * timeouts) rather than `DataSource.query`, which creates, wires up and releases a QueryRunner for every statement:
 * on the hot reads (the guard's lookups, lists, single records) that was a tenth of the server's CPU per request.
 * For reads outside transactions only; errors are pg's own, which the error mapping reads as it reads TypeORM's
 * (`pgError`).
 */
export async function readRows<Row extends QueryResultRow>(
  db: DataSource,
  sql: string | PreparedStatement,
  params: readonly unknown[],
): Promise<Row[]> {
  return (await poolOf(db).query<Row>(config(sql, params))).rows;
}

/**
 * One writing statement outside a transaction (it commits on its own), through the pg pool as `readRows`: its
 * returned rows and the number of rows it changed.
 */
export async function writeRows<Row extends QueryResultRow = QueryResultRow>(
  db: DataSource,
  sql: string | PreparedStatement,
  params: readonly unknown[],
): Promise<{ rows: Row[]; count: number }> {
  const result = await poolOf(db).query<Row>(config(sql, params));
  return { rows: result.rows, count: result.rowCount ?? 0 };
}
