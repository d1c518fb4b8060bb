import { type DynamicModule, Global, Injectable, type LoggerService, Module } from '@nestjs/common';
import type { Request, Response } from 'express';
import { type DestinationStream, type Level, pino, type Logger as Pino } from 'pino';
import type { AppConfig } from '../../config/config';
import { pgError } from '../errors/postgres-errors';
import { elapsedMs, type FinishedResponse } from './request-end';

/** Request logs skip the probes a balancer calls every few seconds. */
const QUIET_PATHS = new Set(['/healthz', '/readyz']);
/** Set on a response whose one log line has been written already (a failure logged with its cause). */
const LOGGED = Symbol('request logged');

type TrackedResponse = Response & { [LOGGED]?: boolean };
type IdentifiedRequest = Request & { id?: string };

/**
 * Nest's own start-up chatter (a line per module, controller and route: over a hundred) is `debug`, so that
 * `info` starts with fleethub's own lines. Nest's warnings and errors keep their level.
 */
const NEST_BOOTSTRAP_CONTEXTS = new Set([
  'NestFactory',
  'NestApplication',
  'NestApplicationContext',
  'InstanceLoader',
  'RoutesResolver',
  'RouterExplorer',
]);

const MAX_NESTED_ERRORS = 3;

/**
 * What a log line tells of an error (`err`): its type, message, stack, `code` (PostgreSQL's SQLSTATE, also when
 * TypeORM wraps the error, or a Node system error code) and the constraint PostgreSQL names, with its `cause`.
 * Nothing else: TypeORM's QueryFailedError carries the SQL and its parameters and pg's errors a `detail` quoting
 * row values, any of which may hold a user's data or a secret.
 */
export function serializeError(value: unknown, depth = 0): Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return { message: String(value) };
  const err = value as { message?: unknown; stack?: unknown; cause?: unknown; errors?: unknown };
  const driver = pgError(value);
  const fields: Record<string, unknown> = {
    type: (Object.getPrototypeOf(value) as { constructor?: { name?: string } } | null)?.constructor?.name,
  };
  const message = typeof err.message === 'string' ? err.message : driver?.message;
  if (typeof message === 'string') fields.message = message;
  if (typeof err.stack === 'string') fields.stack = err.stack;
  if (typeof driver?.code === 'string') fields.code = driver.code;
  if (typeof driver?.constraint === 'string') fields.constraint = driver.constraint;
  if (depth < MAX_NESTED_ERRORS) {
    if (err.cause !== undefined) fields.cause = serializeError(err.cause, depth + 1);
    // AggregateError: e.g. a refused connection to each address of a host name.
    if (Array.isArray(err.errors)) {
      fields.errors = err.errors.slice(0, 5).map((inner: unknown) => serializeError(inner, depth + 1));
    }
  }
  return fields;
}

/** Paths whose segment after the prefix is a credential (CLI sign-in sessions, invitation links). */
const CREDENTIAL_PATH = /^(\/auth\/cli\/|\/api\/auth\/cli_session\/|\/invitations\/)[^/]+/;

/**
 * The request as log lines name it: method, route template when a route matched, path without the query (and
 * without the credential of a CLI sign-in or invitation link).
 */
function describeRequest(req: IdentifiedRequest): { method: string; route?: string; path: string } {
  const route = (req.route as { path?: unknown } | undefined)?.path;
  return {
    method: req.method,
    // Nest answers unknown paths from a catch-all route (`/{*path}`): no route of the API has a wildcard.
    ...(typeof route === 'string' && !route.includes('*') ? { route: `${req.baseUrl}${route}` } : {}),
    path: (req.originalUrl ?? req.url).split('?')[0].replace(CREDENTIAL_PATH, '$1[redacted]'),
  };
}

/**
 * The process's JSON logger (pino) and Nest's logger on top of it: everything logged through Nest's `Logger`
 * (services' `new Logger(X.name)`, Nest itself) ends up here. Headers and bodies are never logged, so neither
 * tokens nor passwords can reach the logs; the query string is dropped for the same reason, and errors are
 * reduced to `serializeError`'s fields.
 *
 * Request logging is one line per response, with the request id, method, route, path, status and duration:
 * no per-request child logger and no AsyncLocalStorage, and nothing at all per request when the level would
 * discard the line. Usually that line is written when the response finishes; a request that fails for a reason
 * worth its cause (an unexpected error, the database unavailable, a timeout) gets its line from
 * `logFailedRequest` instead, with the cause. Other lines written while handling a request name the request id
 * themselves (`{ requestId: req.id }`).
 */
@Injectable()
export class AppLogger implements LoggerService {
  readonly pino: Pino;

  /** `destination`: where the JSON lines go, stdout when not given. */
  constructor(level: AppConfig['logLevel'], destination?: DestinationStream) {
    const options = {
      level,
      serializers: { err: serializeError },
      redact: { paths: ['req.headers', 'res.headers', '*.password', '*.token', '*.secret'], remove: true },
    };
    this.pino = destination ? pino(options, destination) : pino(options);
  }

  verbose(message: unknown, ...params: unknown[]): void {
    this.call('trace', message, params);
  }
  debug(message: unknown, ...params: unknown[]): void {
    this.call('debug', message, params);
  }
  log(message: unknown, ...params: unknown[]): void {
    this.call('info', message, params);
  }
  warn(message: unknown, ...params: unknown[]): void {
    this.call('warn', message, params);
  }
  error(message: unknown, ...params: unknown[]): void {
    this.call('error', message, params);
  }
  fatal(message: unknown, ...params: unknown[]): void {
    this.call('fatal', message, params);
  }

  /**
   * Nest passes the logger's context last: `new Logger('Errors').warn({ requestId }, 'message')` arrives as
   * `({ requestId }, 'message', 'Errors')`. An object first is merged into the line; an Error becomes `err`.
   */
  private call(level: Level, message: unknown, params: unknown[]): void {
    const fields: Record<string, unknown> = {};
    let rest = params;
    if (params.length > 0) {
      fields.context = params[params.length - 1];
      // Nest's Logger.error() without a stack passes `undefined` in its place.
      rest = params.slice(0, -1).filter((param) => param !== undefined);
    }
    if (level === 'info' && NEST_BOOTSTRAP_CONTEXTS.has(fields.context as string)) level = 'debug';
    if (!this.pino.isLevelEnabled(level)) return;
    if (message instanceof Error) {
      fields.err = message;
      this.pino[level](fields, ...(rest as [string]));
    } else if (typeof message === 'object' && message !== null) {
      this.pino[level](Object.assign(fields, message), ...(rest as [string]));
    } else if (
      // Nest's own exception handlers call error(message, stack, context).
      level === 'error' &&
      typeof message === 'string' &&
      rest.length === 1 &&
      typeof rest[0] === 'string' &&
      /\n\s*at /.test(rest[0])
    ) {
      const err = new Error(message);
      err.stack = rest[0];
      fields.err = err;
      this.pino[level](fields);
    } else {
      this.pino[level](fields, String(message), ...rest);
    }
  }

  /**
   * The one line of a request that failed for a reason logged with it (`fields`: `err`, say): request id, method,
   * route, path, `status` and duration, like the completion line, which is then not written. Written now, not
   * when the response finishes: a client that has gone away does not take the error with it.
   */
  logFailedRequest(
    level: Level,
    message: string,
    req: IdentifiedRequest,
    res: Response,
    status: number,
    fields: Record<string, unknown> = {},
  ): void {
    const tracked = res as TrackedResponse;
    tracked[LOGGED] = true;
    if (!this.pino.isLevelEnabled(level)) return;
    const durationMs = elapsedMs(res);
    this.pino[level](
      {
        requestId: req.id,
        req: describeRequest(req),
        res: { status },
        ...(durationMs === undefined ? {} : { durationMs: Math.round(durationMs) }),
        ...fields,
      },
      message,
    );
  }

  /**
   * The line of a finished response (`error` for 5xx, else `info`) unless `logFailedRequest` wrote it; null when
   * the level would discard both, so that requests then cost nothing here. Called by trackRequests.
   */
  requestLogger(): FinishedResponse | null {
    const log = this.pino;
    const logsInfo = log.isLevelEnabled('info');
    if (!log.isLevelEnabled('error')) return null;
    return (req: IdentifiedRequest, res: TrackedResponse, durationMs: number) => {
      const status = res.statusCode;
      if ((status < 500 && !logsInfo) || res[LOGGED] || QUIET_PATHS.has(req.originalUrl)) return;
      log[status >= 500 ? 'error' : 'info'](
        {
          requestId: req.id,
          req: describeRequest(req),
          res: { status },
          durationMs: Math.round(durationMs),
        },
        status >= 500 ? 'request errored' : 'request completed',
      );
    };
  }
}

/**
 * Errors no code path caught, with their stacks: an unhandled rejection is logged at `error` and the process
 * goes on (the promise's work has already unwound); an uncaught exception is logged at `fatal` and ends the
 * process, as Node would, since its state is unknown.
 */
export function logProcessErrors(
  logger: AppLogger,
  target: Pick<NodeJS.Process, 'on' | 'exit'> = process,
): void {
  target.on('unhandledRejection', (reason: unknown) => {
    logger.pino.error({ err: reason }, 'unhandled promise rejection');
  });
  target.on('uncaughtException', (err: Error) => {
    logger.pino.fatal({ err }, 'uncaught exception');
    target.exit(1);
  });
}

/**
 * Provides the AppLogger everywhere. The same instance is Nest's logger from the moment the application is
 * created (`NestFactory.create(..., { logger })`), so that nothing is logged to Nest's console logger or held in
 * its buffer; the HTTP setup installs it as the request logger.
 */
@Global()
@Module({})
export class LoggingModule {
  static register(logger: AppLogger): DynamicModule {
    return {
      module: LoggingModule,
      providers: [{ provide: AppLogger, useValue: logger }],
      exports: [AppLogger],
    };
  }
}
