/** SQLSTATE helpers: constraint names decide which field a race-lost insert reports. */
export interface PgError {
  code?: string;
  constraint?: string;
  message?: unknown;
}

/** The PostgreSQL error a TypeORM error wraps (its `driverError`), or the error itself. */
export function pgError(err: unknown): PgError | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const driverError = (err as { driverError?: unknown }).driverError ?? err;
  return typeof driverError === 'object' && driverError !== null ? driverError : undefined;
}

/** A transaction that lost a race and may be run again: deadlock or serialization failure. */
export function isRetryableConflict(err: unknown): boolean {
  const code = pgError(err)?.code;
  return code === '40P01' || code === '40001';
}

export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = pgError(err);
  return e?.code === '23505' && (constraint === undefined || e.constraint === constraint);
}

/** A foreign key refused the change (23503; PostgreSQL 18 reports ON DELETE RESTRICT as 23001). */
export function isForeignKeyViolation(err: unknown): boolean {
  const code = pgError(err)?.code;
  return code === '23503' || code === '23001';
}

/**
 * Connection-level failures: the database is unreachable or going away. TypeORM reports a transaction whose
 * connection died under it as "Query runner already released"; node-postgres refuses a statement on a client whose
 * connection failed ("... is not queryable").
 */
export function isDatabaseUnavailable(err: unknown): boolean {
  const e = pgError(err);
  if (!e) return false;
  const code = e.code ?? '';
  if (['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EPIPE'].includes(code))
    return true;
  if ((code.startsWith('08') && code !== '08P01') || code === '57P01' || code === '57P02' || code === '57P03')
    return true;
  const message = typeof e.message === 'string' ? e.message : '';
  return /Connection terminated|timeout exceeded when trying to connect|Connection ended|the database system is (starting up|shutting down)|Query runner already released|query runner was already released|Client has encountered a connection error and is not queryable|Client was closed and is not queryable/i.test(
    message,
  );
}

/** Text PostgreSQL cannot store: a NUL character (22021) or a character the encoding lacks (22P05). */
export function isUnstorableTextError(err: unknown): boolean {
  const code = pgError(err)?.code;
  return code === '22021' || code === '22P05';
}
