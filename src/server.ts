import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { AppModule } from './app.module';
import type { AppConfig } from './config/config';
import { DatabaseLocation } from './database/database-url';
import { runMigrations } from './database/migrate';
import { configureHttpApp } from './http-app';

export interface RunningServer {
  app: NestExpressApplication;
  url: string;
  close(): Promise<void>;
}

/** Resolves the database, applies migrations and serves HTTP. `close()` undoes all of it. */
export async function startServer(config: AppConfig): Promise<RunningServer> {
  const location = new DatabaseLocation(config);
  const databaseUrl = await location.url();
  try {
    await runMigrations(databaseUrl);
    const app = await NestFactory.create<NestExpressApplication>(AppModule.register(config, databaseUrl), {
      bodyParser: false,
      bufferLogs: true,
    });
    configureHttpApp(app);
    await app.listen(config.port, config.host);
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
