import type { Server } from 'node:http';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { AppModule } from './app.module';
import type { ConnectionDrain } from './common/http/connection-drain';
import { ExpressHttpAdapter } from './common/http/express-adapter';
import { AppLogger } from './common/http/logger';
import type { AppConfig } from './config/config';
import { DatabaseLocation } from './database/database-url';
import { runMigrations } from './database/migrate';
import { ShutdownState } from './health/shutdown-state';
import { configureHttpApp } from './http-app';

export interface RunningServer {
  app: NestExpressApplication;
  url: string;
  /**
   * Starts the shutdown's drain: /readyz fails, every response says `Connection: close` and idle keep-alive
   * connections close, device sockets close spread over `periodMs` and no new one is accepted.
   */
  drain(periodMs: number): void;
  /**
   * Stops listening and lets the requests in flight finish, for at most `limitMs` (then they are cut, and the log
   * says so); then closes the application and the embedded PostgreSQL if it started it. Resolves with the number
   * of requests cut.
   */
  close(limitMs?: number): Promise<number>;
  /** Cuts every HTTP connection now, requests in flight included (a second signal); returns how many requests. */
  cut(): number;
}

export interface ServerOptions {
  /** Every log line of the server goes through it; by default one for `config.logLevel` writing to stdout. */
  logger?: AppLogger;
}

/**
 * Connections the kernel may queue before the server accepts them (capped by net.core.somaxconn). Node's default,
 * 511, overflows when thousands of devices reconnect in the same instant; the kernel then drops their handshakes
 * and they wait out a retransmission (1 s, 3 s, ...).
 */
const LISTEN_BACKLOG = 4096;

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host, backlog: LISTEN_BACKLOG }, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

/**
 * Closes the listener and waits until every connection is gone (Nest's own close, which comes after its shutdown
 * hooks have run, would find the database already closing under requests in flight); past `limitMs`, cuts them.
 */
async function stopServing(
  connections: ConnectionDrain,
  limitMs: number,
  logger: AppLogger,
): Promise<number> {
  const closed = connections.closeListener();
  let timer: NodeJS.Timeout | undefined;
  const limitReached = Number.isFinite(limitMs)
    ? new Promise<true>((resolve) => (timer = setTimeout(() => resolve(true), limitMs)))
    : null;
  const cutOff = await Promise.race(limitReached ? [closed, limitReached] : [closed]);
  clearTimeout(timer);
  connections.stop();
  if (cutOff !== true) return 0;
  const cut = connections.cutAll();
  if (cut === 0) return 0;
  logger.pino.warn(
    { context: 'Shutdown', limitMs, cut },
    'shutdown limit reached: cutting the requests still in flight',
  );
  return cut;
}

/** Resolves the database, applies migrations and serves HTTP. `close()` undoes all of it. */
export async function startServer(config: AppConfig, options: ServerOptions = {}): Promise<RunningServer> {
  const logger = options.logger ?? new AppLogger(config.logLevel);
  const location = new DatabaseLocation(config);
  const databaseUrl = await location.url((output) =>
    logger.pino.debug({ context: 'EmbeddedPostgres', output }, 'embedded PostgreSQL'),
  );
  try {
    const applied = await runMigrations(databaseUrl);
    if (applied.length > 0) {
      logger.pino.info({ context: 'Migrations', migrations: applied }, 'applied migrations');
    }
    // The logger from the start, not Nest's buffer: Nest flushes that only in its own listen(), and lines
    // logged while the modules start (a generated server key, say) must not wait for it.
    const app = await NestFactory.create<NestExpressApplication>(
      AppModule.register(config, databaseUrl, logger),
      new ExpressHttpAdapter(),
      { bodyParser: false, logger },
    );
    const connections = configureHttpApp(app);
    await app.init();
    await listen(app.getHttpServer(), config.port, config.host);
    const address = app.getHttpServer().address() as { port: number } | string;
    const port = typeof address === 'string' ? config.port : address.port;
    let closing: Promise<number> | undefined;
    return {
      app,
      url: `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`,
      drain: (periodMs) => app.get(ShutdownState).startDraining(periodMs),
      close: (limitMs = Infinity) =>
        (closing ??= (async () => {
          const cut = await stopServing(connections, limitMs, logger);
          await app.close();
          await location.release();
          return cut;
        })()),
      cut: () => connections.cutAll(),
    };
  } catch (err) {
    await location.release();
    throw err;
  }
}
