import type { Server } from 'node:http';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { AppModule } from './app.module';
import { ExpressHttpAdapter } from './common/http/express-adapter';
import { AppLogger } from './common/http/logger';
import type { AppConfig } from './config/config';
import { DatabaseLocation } from './database/database-url';
import { runMigrations } from './database/migrate';
import { configureHttpApp } from './http-app';

export interface RunningServer {
  app: NestExpressApplication;
  url: string;
  close(): Promise<void>;
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
    configureHttpApp(app);
    await app.init();
    await listen(app.getHttpServer(), config.port, config.host);
    const address = app.getHttpServer().address() as { port: number } | string;
    const port = typeof address === 'string' ? config.port : address.port;
    let closing: Promise<void> | undefined;
    return {
      app,
      url: `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`,
      close: () =>
        (closing ??= (async () => {
          await app.close();
          await location.release();
        })()),
    };
  } catch (err) {
    await location.release();
    throw err;
  }
}
