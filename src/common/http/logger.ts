import { type DynamicModule, Global, Injectable, type LoggerService, Module } from '@nestjs/common';
import type { Request, Response } from 'express';
import { type Level, pino, type Logger as Pino } from 'pino';
import type { AppConfig } from '../../config/config';

/** Request logs skip the probes a balancer calls every few seconds. */
const QUIET_PATHS = new Set(['/healthz', '/readyz']);
const STARTED = Symbol('request started');

/**
 * The process's JSON logger (pino) and Nest's logger on top of it. Headers and bodies are never logged, so
 * neither tokens nor passwords can reach the logs; the query string is dropped for the same reason.
 *
 * Request logging is one line per response, written when the response finishes, with the request id, method,
 * path, status and duration: no per-request child logger and no AsyncLocalStorage, and nothing at all per
 * request when the level would discard the line. Log lines written while handling a request name the request
 * id themselves (`{ requestId: req.id }`), as the exceptions filter and the request timeout do.
 */
@Injectable()
export class AppLogger implements LoggerService {
  readonly pino: Pino;

  constructor(level: AppConfig['logLevel']) {
    this.pino = pino({
      level,
      redact: { paths: ['req.headers', 'res.headers', '*.password', '*.token', '*.secret'], remove: true },
    });
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
    if (!this.pino.isLevelEnabled(level)) return;
    const fields: Record<string, unknown> = {};
    let rest = params;
    if (params.length > 0) {
      fields.context = params[params.length - 1];
      rest = params.slice(0, -1);
    }
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
   * Called for every request before the routes: one line per finished response (`error` for 5xx, else `info`),
   * and no work at all when the level would discard both.
   */
  requestLogger(): (req: Request & { id?: string }, res: Response) => void {
    const log = this.pino;
    const logsErrors = log.isLevelEnabled('error');
    const logsInfo = log.isLevelEnabled('info');
    // One listener function for all responses (`this` is the response): no closure per request.
    function finished(this: Response & { [STARTED]?: number }) {
      const status = this.statusCode;
      if (status < 500 && !logsInfo) return;
      const req = this.req as Request & { id?: string };
      log[status >= 500 ? 'error' : 'info'](
        {
          requestId: req.id,
          req: { method: req.method, path: (req.originalUrl ?? req.url).split('?')[0] },
          res: { status },
          durationMs: Date.now() - (this[STARTED] ?? 0),
        },
        status >= 500 ? 'request errored' : 'request completed',
      );
    }
    return (req, res) => {
      if (!logsErrors || QUIET_PATHS.has(req.url)) return;
      (res as Response & { [STARTED]?: number })[STARTED] = Date.now();
      res.on('finish', finished);
    };
  }
}

/** Provides the AppLogger everywhere (the HTTP setup installs it as Nest's logger and request logger). */
@Global()
@Module({})
export class LoggingModule {
  static register(config: Pick<AppConfig, 'logLevel'>): DynamicModule {
    return {
      module: LoggingModule,
      providers: [{ provide: AppLogger, useValue: new AppLogger(config.logLevel) }],
      exports: [AppLogger],
    };
  }
}
