import 'reflect-metadata';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Type } from '@nestjs/common';
import { CommandFactory, type CommandRunner } from 'nest-commander';
import { destination } from 'pino';
import { AppLogger } from '../common/http/logger';
import { ConfigError, loadConfig } from '../config/config';
import { DatabaseLocation } from '../database/database-url';
import { runMigrations } from '../database/migrate';
import { describeError } from './cli-command';
import { CliModule, DATABASE_FREE_COMMANDS } from './cli.module';

/**
 * Thrown where commander would call `process.exit` itself (help, version, usage errors, after printing them), so
 * that the process ends by returning from main() and every `finally` runs, the embedded PostgreSQL's stop included.
 */
class CommandLineExit extends Error {
  constructor(readonly exitCode: number) {
    super(`exit ${exitCode}`);
  }
}

/** The version in the package.json above this file (src/cli in a checkout, dist/src/cli when built). */
function packageVersion(): string {
  for (let dir = __dirname; dirname(dir) !== dir; dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
  }
  return 'unknown';
}

/**
 * `fleethub <command>`: the same configuration and database as the server (DATABASE_URL, or the embedded
 * PostgreSQL under FLEETHUB_DATA_DIR, shared with a running server), with migrations applied first. The command
 * line is parsed before that, against the commands alone: help, version and usage errors touch no database.
 */
async function main(): Promise<void> {
  const config = loadConfig();
  const options = {
    // What services log (a generated server key, a file not removed) goes to stderr as the server's JSON lines:
    // stdout is the command's output.
    logger: new AppLogger(config.logLevel, destination(2)),
    cliName: 'fleethub',
    version: packageVersion(),
    // commander has printed its message (help, version, usage error) by the time it calls this.
    errorHandler: (err: Error) => {
      throw new CommandLineExit((err as { exitCode?: number }).exitCode ?? 2);
    },
    serviceErrorHandler: (err: Error) => {
      if (err instanceof CommandLineExit) {
        process.exitCode = err.exitCode;
        return;
      }
      process.stderr.write(`error: ${describeError(err)}\n`);
      process.exitCode = 1;
    },
  };
  const parsed: { command: Type<CommandRunner> | null } = { command: null };
  await CommandFactory.run(
    CliModule.forParsing(config, (command) => (parsed.command = command)),
    options,
  );
  if (parsed.command === null) return;
  // `simulate` and `certs` are network clients of a server: no database, no migrations.
  if (DATABASE_FREE_COMMANDS.includes(parsed.command)) {
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
    // Stops the embedded PostgreSQL when this command started it (a running server's is left to the server).
    await location.release();
  }
}

main().catch((err: unknown) => {
  const message = err instanceof ConfigError ? err.message : `error: ${describeError(err)}`;
  process.stderr.write(`${message}\n`);
  process.exitCode = 1;
});
