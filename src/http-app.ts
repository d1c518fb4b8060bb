import type { INestApplication } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Server } from 'node:http';
import express, { type NextFunction, type Request, type Response } from 'express';
import { toDomainError } from './common/errors/all-exceptions.filter';
import { Logger } from 'nestjs-pino';
import { requestIdMiddleware } from './common/http/request-id';
import {
  configureCors,
  configureServerTimeouts,
  requestTimeout,
  securityHeaders,
} from './common/http/security';
import { APP_CONFIG, type AppConfig } from './config/config';
import { setupOpenApi } from './openapi';

export const JSON_BODY_LIMIT = '1mb';

/** HTTP settings shared by the server and the tests: request ids, security headers, CORS, timeouts, body limits, OpenAPI. */
export function configureHttpApp(app: INestApplication): void {
  const express_ = app as NestExpressApplication;
  express_.useLogger(app.get(Logger));
  express_.disable('x-powered-by');
  express_.set('query parser', 'simple');
  express_.set('trust proxy', false);
  const config = app.get<AppConfig>(APP_CONFIG);
  configureServerTimeouts(app.getHttpServer() as Server);
  app.use(requestIdMiddleware);
  app.use(securityHeaders);
  configureCors(app, config);
  app.use(requestTimeout(config.requestTimeoutMs));
  const parseJson = express.json({
    limit: JSON_BODY_LIMIT,
    strict: false,
    type: ['application/json', 'application/*+json'],
  });
  // Body-parser failures become the contract's errors here, before Nest maps them to its own.
  app.use((req: Request, res: Response, next: NextFunction) =>
    parseJson(req, res, (err?: unknown) => next(err === undefined ? undefined : (toDomainError(err) ?? err))),
  );
  setupOpenApi(app);
}
