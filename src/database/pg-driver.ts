import pg from 'pg';

/**
 * node-postgres as TypeORM is given it (`driver` in dataSourceOptions), with one change: every pooled client has an
 * `error` listener from the moment it connects. pg-pool listens on idle clients and TypeORM's query runners on the
 * clients they hold, but between the two a client can be nobody's: TypeORM's start (`afterConnect`) runs its first
 * queries on a checked-out client without a listener. When PostgreSQL ended that connection (a restart, a
 * failover: 57P01) the client emitted `error` with no listener, which Node turns into an uncaught exception, and
 * an instance that was starting while PostgreSQL restarted exited (issue 21, the rolling-restart check). The
 * failure itself still reaches whoever uses the client (the query in flight, pg-pool, the query runner); this
 * listener only keeps an unheard `error` from ending the process.
 */
class ListenedPool extends pg.Pool {
  constructor(options?: pg.PoolConfig) {
    super(options);
    this.on('connect', (client) => {
      client.on('error', () => undefined);
    });
  }
}

export const PG_DRIVER: typeof pg = Object.assign(Object.create(pg) as typeof pg, { Pool: ListenedPool });
