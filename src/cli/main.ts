import 'reflect-metadata';
import { CommandFactory } from 'nest-commander';
import { destination } from 'pino';
import { AppLogger } from '../common/http/logger';
import { ConfigError, loadConfig } from '../config/config';
import { DatabaseLocation } from '../database/database-url';
import { runMigrations } from '../database/migrate';
import { describeError } from './cli-command';
import { CliModule } from './cli.module';

/**
 * `fleethub <command>`: the same configuration and database as the server (DATABASE_URL, or the embedded
 * PostgreSQL under FLEETHUB_DATA_DIR, shared with a running server), with migrations applied first.
 */
async function main(): Promise<void> {
  const config = loadConfig();
  const options = {
    // What services log (a generated server key, a file not removed) goes to stderr as the server's JSON lines:
    // stdout is the command's output.
    logger: new AppLogger(config.logLevel, destination(2)),
    cliName: 'fleethub',
    errorHandler: (err: Error) => {
      // commander's own exits (help, version, unknown option) have already printed their message.
      const code = (err as { exitCode?: number }).exitCode;
      process.exitCode = code ?? 2;
    },
  };
  // `simulate` is a network client of a server: no database, no migrations.
  if (process.argv[2] === 'simulate') {
    await CommandFactory.run(CliModule.register(config, null), options);
    return;
  }
  const location = new DatabaseLocation(config);
  try {
    const databaseUrl = await location.url();
    const applied = await runMigrations(databaseUrl);
    if (applied.length > 0) process.stderr.write(`applied migrations: ${applied.join(', ')}\n`);
    await CommandFactory.run(CliModule.register(config, databaseUrl), options);
  } finally {
    await location.release();
  }
}

main().catch((err: unknown) => {
  const message = err instanceof ConfigError ? err.message : `error: ${describeError(err)}`;
  process.stderr.write(`${message}\n`);
  process.exitCode = 1;
});
