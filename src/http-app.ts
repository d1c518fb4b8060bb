import type { INestApplication } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Server } from 'node:http';
import express, { type NextFunction, type Request, type Response } from 'express';
import { toDomainError } from './common/errors/all-exceptions.filter';
import { ConnectionDrain } from './common/http/connection-drain';
import { findConsoleBuild, serveConsole } from './common/http/console-site';
import { replyJsonDirectly } from './common/http/json-reply';
import { LARGE_JSON_PATH, MAX_LARGE_JSON_BYTES, readLargeJson } from './common/http/large-json-body';
import { AppLogger } from './common/http/logger';
import { trackRequests } from './common/http/request-end';
import { assignRequestId } from './common/http/request-id';
import {
  answerClientErrors,
  corsMiddleware,
  configureServerTimeouts,
  requestTimeout,
  setSecurityHeaders,
} from './common/http/security';
import { bodyShapeError, MAX_JSON_BODY_BYTES, rawBodyShapeError } from './common/validation/json-limits';
import { APP_CONFIG, type AppConfig } from './config/config';
import { ShutdownState } from './health/shutdown-state';
import { MetricsService } from './metrics/metrics.service';
import { setupOpenApi } from './openapi';

/** Paths under /api/ other than the documentation's (matched as Express matches routes: case-insensitively). */
const API_CALL = /^\/api\/(?!docs(?:[/?]|$)|openapi\.)/i;

/**
 * HTTP settings shared by the server and the tests: request ids, security headers, CORS, timeouts, body limits,
 * OpenAPI, and the connections' drain at shutdown (returned: the server closes with it).
 */
export function configureHttpApp(app: INestApplication): ConnectionDrain {
  const express_ = app as NestExpressApplication;
  const logger = app.get(AppLogger);
  express_.useLogger(logger);
  // Nest flushes lines it buffered (an app created with `bufferLogs`) only in its own listen(), which the
  // server does not call: out they go now, through pino.
  express_.flushLogs();
  express_.disable('x-powered-by');
  // No API response is cached by validators: an ETag would cost a hash of every body for nothing.
  express_.set('etag', false);
  express_.set('query parser', 'simple');
  express_.set('trust proxy', false);
  const config = app.get<AppConfig>(APP_CONFIG);
  configureServerTimeouts(app.getHttpServer() as Server);
  answerClientErrors(app.getHttpServer() as Server);
  replyJsonDirectly(app);
  const connections = new ConnectionDrain(app.getHttpServer() as Server);
  app.get(ShutdownState).onDrain(() => connections.start());
  const cors = corsMiddleware(config);
  const parseJson = express.json({
    limit: MAX_JSON_BODY_BYTES,
    strict: false,
    type: ['application/json', 'application/*+json'],
    // A body nested too deeply or holding too many values is refused before JSON.parse builds it. body-parser
    // passes what is thrown here to the callback below, where toDomainError keeps a DomainError as it is.
    verify: (_req, _res, bytes, encoding) => {
      const refused = encoding === 'utf-8' ? rawBodyShapeError(bytes) : undefined;
      if (refused) throw refused;
    },
  });
  // The API documentation and the console: a dozen Express layers (Swagger UI's routes and files, the console's
  // files and pages) that every API call would otherwise be tested against, on every request, before its route.
  // They go into a router of their own, entered only by requests that are not API calls.
  const pages = express.Router();
  const toRoutes = (req: Request, res: Response, next: NextFunction) =>
    API_CALL.test(req.url) ? next() : pages(req, res, next);
  // Body-parser failures become the contract's errors here, before Nest maps them to its own. A request
  // without a body (no Content-Length, no Transfer-Encoding: most of them) skips the parser, as it would itself.
  const readBody = (req: Request, res: Response, next: NextFunction) => {
    // A bulk import's body is large: read here with its own size limit and the same depth limit, before
    // anything else, as every body is.
    if (req.method === 'POST' && LARGE_JSON_PATH.test(req.path)) {
      readLargeJson(req, MAX_LARGE_JSON_BYTES).then(
        (body) => {
          req.body = body;
          toRoutes(req, res, next);
        },
        (err: unknown) => next(err),
      );
      return;
    }
    if (req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined) {
      req.body = undefined;
      toRoutes(req, res, next);
      return;
    }
    // The parsed body is checked again (cheap, it is small by now) for the other UTF charsets body-parser allows,
    // before anything walks it recursively (class-transformer, validation).
    parseJson(req, res, (err?: unknown) => {
      const refused = err === undefined ? bodyShapeError(req.body) : (toDomainError(err) ?? err);
      if (refused === undefined) toRoutes(req, res, next);
      else next(refused);
    });
  };
  // What every request goes through before the routes, in this order, as one Express layer (each layer is a
  // router step on every request): connection tracking, request id, security headers, the request's end (log
  // line, metrics, timeout: one listener of trackRequests), CORS, the body, then the API's routes or the pages'.
  const logRequest = logger.requestLogger();
  const track = trackRequests(
    [app.get(MetricsService).observeResponse, ...(logRequest ? [logRequest] : [])],
    requestTimeout(config.requestTimeoutMs, logger),
  );
  app.use((req: Request, res: Response, next: NextFunction) => {
    connections.track(req, res);
    assignRequestId(req, res);
    setSecurityHeaders(req, res);
    track(req, res);
    if (cors === undefined) readBody(req, res, next);
    else cors(req, res, (err?: unknown) => (err === undefined ? readBody(req, res, next) : next(err)));
  });
  const layers = express_.getHttpAdapter().getInstance().router.stack;
  const before = layers.length;
  setupOpenApi(app);
  if (!serveConsole(app, findConsoleBuild()))
    logger.warn('no console build (dist/web): `npm run build` makes it', 'Console');
  pages.stack.push(...layers.splice(before));
  return connections;
}
