import 'reflect-metadata';
import { AppLogger, logProcessErrors } from './common/http/logger';
import { ConfigError, loadConfig } from './config/config';
import { DeviceTlsListener } from './gateway/device-tls-listener';
import { startServer } from './server';
import { GracefulShutdown } from './shutdown';

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
  const deviceTls = server.app.get(DeviceTlsListener);
  if (deviceTls.port !== null) {
    const trust = deviceTls.caFile ? ` (devices trust the server CA ${deviceTls.caFile})` : '';
    process.stdout.write(`device mTLS socket on port ${deviceTls.port}${trust}\n`);
  }

  const shutdown = new GracefulShutdown(server, config, logger);
  process.on('SIGTERM', (signal) => shutdown.handle(signal));
  process.on('SIGINT', (signal) => shutdown.handle(signal));
}

main().catch((err: unknown) => {
  process.stderr.write(
    `fleethub failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
});
