import type { Server } from 'node:http';
import type { INestApplication } from '@nestjs/common';
import { Logger } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import helmet from 'helmet';
import type { AppConfig } from '../../config/config';
import { errorBody } from '../errors/error-body';
import { DomainError } from '../errors/domain-error';
import { ErrorCode } from '../errors/error-codes';

/** Headers must arrive within this; a whole request (a firmware upload included) within REQUEST_TIMEOUT_MS. */
export const HEADERS_TIMEOUT_MS = 20_000;
export const REQUEST_TIMEOUT_MS = 15 * 60_000;

const DOCS_PATH = /^\/api\/docs(\/|$)/;
/** Firmware transfers may legitimately take minutes: no handler timeout for them. */
const FIRMWARE_UPLOAD = /^\/api\/orgs\/[^/]+\/products\/[^/]+\/firmwares\/?$/;

// JSON answers need no resources at all.
const strict = helmet({
  contentSecurityPolicy: {
    useDefaults: false,
    directives: {
      defaultSrc: ["'none'"],
      frameAncestors: ["'none'"],
      baseUri: ["'none'"],
      formAction: ["'none'"],
    },
  },
});
// Swagger UI needs inline scripts and styles (its init script and theme) and data: images.
const docs = helmet({
  contentSecurityPolicy: {
    directives: {
      defaultSrc: ["'self'"],
      scriptSrc: ["'self'", "'unsafe-inline'"],
      styleSrc: ["'self'", "'unsafe-inline'"],
      imgSrc: ["'self'", 'data:'],
      connectSrc: ["'self'"],
      fontSrc: ["'self'", 'data:'],
      objectSrc: ["'none'"],
      frameAncestors: ["'self'"],
    },
  },
});

/** helmet's headers everywhere; a Content-Security-Policy that Swagger UI can live with under /api/docs. */
export function securityHeaders(req: Request, res: Response, next: NextFunction): void {
  if (DOCS_PATH.test(req.path)) docs(req, res, next);
  else strict(req, res, next);
}

/** CORS is off unless FLEETHUB_CORS_ORIGINS lists origins (or `*`). */
export function configureCors(app: INestApplication, config: Pick<AppConfig, 'corsOrigins'>): void {
  if (config.corsOrigins.length === 0) return;
  const any = config.corsOrigins.includes('*');
  app.enableCors({
    origin: any ? '*' : config.corsOrigins,
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    allowedHeaders: ['Authorization', 'Content-Type', 'X-Request-Id'],
    exposedHeaders: ['X-Request-Id', 'Location', 'Retry-After', 'Content-Disposition'],
    credentials: false,
    maxAge: 600,
  });
}

/** Server-level limits: slow-header clients are cut off; a request body must arrive within REQUEST_TIMEOUT_MS. */
export function configureServerTimeouts(server: Server): void {
  server.headersTimeout = HEADERS_TIMEOUT_MS;
  server.requestTimeout = REQUEST_TIMEOUT_MS;
}

const logger = new Logger('RequestTimeout');

/**
 * An API call that has not answered within `timeoutMs` gets the contract's 503 (firmware uploads and
 * downloads excepted, and nothing is done once the response has started). Whatever the handler answers
 * later is discarded. `timeoutMs` 0 disables it.
 */
export function requestTimeout(timeoutMs: number) {
  return (req: Request & { id?: string }, res: Response, next: NextFunction): void => {
    if (
      timeoutMs <= 0 ||
      !req.path.startsWith('/api/') ||
      (req.method === 'POST' && FIRMWARE_UPLOAD.test(req.path))
    ) {
      next();
      return;
    }
    const timer = setTimeout(() => {
      if (res.headersSent || res.writableEnded) return;
      logger.warn({ requestId: req.id, method: req.method, path: req.path, timeoutMs }, 'request timed out');
      const { status, body } = errorBody(
        new DomainError(
          ErrorCode.DATABASE_UNAVAILABLE,
          'the request took too long, try again shortly',
          {},
          {},
        ),
      );
      res.setHeader('Retry-After', '5');
      res.status(status).json(body);
      // The handler may still finish: its answer goes nowhere.
      const ignore = function (this: Response) {
        return this;
      };
      res.status = ignore;
      res.json = ignore;
      res.send = ignore;
      const quiet = res as unknown as Record<'setHeader' | 'end' | 'write', unknown>;
      quiet.setHeader = ignore;
      quiet.end = ignore;
      quiet.write = () => true;
    }, timeoutMs);
    timer.unref();
    const clear = () => clearTimeout(timer);
    res.once('finish', clear);
    res.once('close', clear);
    next();
  };
}
