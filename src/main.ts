import 'reflect-metadata';
import { AppLogger, logProcessErrors } from './common/http/logger';
import { ConfigError, loadConfig } from './config/config';
import { ShutdownState } from './health/shutdown-state';
import { startServer } from './server';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const logger = new AppLogger(config.logLevel);
  logProcessErrors(logger);
  const server = await startServer(config, { logger });
  process.stdout.write(`fleethub listening on ${server.url} (API docs: ${server.url}/api/docs)\n`);

  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    // Fail readiness first and keep serving for the drain period, so that a balancer stops routing here
    // before the listener closes; then finish in-flight requests and stop.
    server.app.get(ShutdownState).draining = true;
    new Promise((resolve) => setTimeout(resolve, config.shutdownDrainMs))
      .then(() => server.close())
      .then(
        () => process.exit(0),
        (err: unknown) => {
          logger.pino.error({ err, signal }, 'shutdown failed');
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((err: unknown) => {
  process.stderr.write(
    `fleethub failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
});
