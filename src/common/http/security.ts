import type { Server } from 'node:http';
import type { Duplex } from 'node:stream';
import cors from 'cors';
import type { Request, RequestHandler, Response } from 'express';
import helmet from 'helmet';
import type { AppConfig } from '../../config/config';
import { errorBody } from '../errors/error-body';
import { DomainError } from '../errors/domain-error';
import { ErrorCode } from '../errors/error-codes';
import { ASSETS_PATH, CONSOLE_PAGE } from './console-site';
import { PAGE_STYLE_SOURCE } from './html-page';
import type { AppLogger } from './logger';
import { RequestDeadlines } from './request-end';
import { newRequestId } from './request-id';

/** Headers must arrive within this; a whole request (a firmware upload included) within REQUEST_TIMEOUT_MS. */
export const HEADERS_TIMEOUT_MS = 20_000;
export const REQUEST_TIMEOUT_MS = 15 * 60_000;

const DOCS_PATH = /^\/api\/docs(\/|$)/;
/** Firmware and archive transfers may legitimately take minutes: no handler timeout for them. */
const FIRMWARE_UPLOAD = /^\/api\/orgs\/[^/]+\/products\/[^/]+\/(?:firmwares|archives)\/?$/;
/** A bulk change of devices over a filter: a million devices take minutes, in short transactions. */
const DEVICES_BULK = /^\/api\/orgs\/[^/]+\/products\/[^/]+\/devices\/bulk\/?$/;

type Header = [name: string, value: string | number | readonly string[]];

/**
 * The headers a helmet middleware sets, computed once: its directives are constants, so every response gets the
 * same ones, and setting them from a list spares a chain of a dozen middleware calls per request.
 */
function helmetHeaders(options: Parameters<typeof helmet>[0]): readonly Header[] {
  const headers: Header[] = [];
  const recorder = {
    setHeader: (name: string, value: Header[1]) => headers.push([name, value]),
    removeHeader: () => undefined,
  };
  let failure: unknown;
  helmet(options)({} as Request, recorder as unknown as Response, (err?: unknown) => (failure = err));
  if (failure !== undefined) throw new Error('helmet options are invalid', { cause: failure });
  return headers;
}

// JSON answers need no resources at all, and only the headers that protect a response a browser does not render
// as a page (OWASP's REST Security Cheat Sheet): no resources or framing (Content-Security-Policy,
// X-Frame-Options), no sniffing into a page (X-Content-Type-Options), no cross-origin embedding
// (Cross-Origin-Resource-Policy), HTTPS only (Strict-Transport-Security). helmet's other seven govern what a
// rendered document does (its referrer, DNS prefetching, opener, agent cluster, the XSS auditor, IE's download
// prompt, Flash's cross-domain policies): sent on the pages, the console and the docs, not on every API answer.
const STRICT = helmetHeaders({
  contentSecurityPolicy: {
    useDefaults: false,
    directives: {
      defaultSrc: ["'none'"],
      frameAncestors: ["'none'"],
      baseUri: ["'none'"],
      formAction: ["'none'"],
    },
  },
  crossOriginOpenerPolicy: false,
  originAgentCluster: false,
  referrerPolicy: false,
  xDnsPrefetchControl: false,
  xDownloadOptions: false,
  xPermittedCrossDomainPolicies: false,
  xXssProtection: false,
});
// Swagger UI needs inline scripts and styles (its init script and theme) and data: images.
const DOCS = helmetHeaders({
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

// The server-rendered pages (CLI sign-in, invitations): their one inline stylesheet by hash, forms posting back.
const PAGES = helmetHeaders({
  contentSecurityPolicy: {
    useDefaults: false,
    directives: {
      defaultSrc: ["'none'"],
      styleSrc: [PAGE_STYLE_SOURCE],
      formAction: ["'self'"],
      frameAncestors: ["'none'"],
      baseUri: ["'none'"],
    },
  },
});
const PAGE_PATH = /^\/(auth\/cli|invitations)\//;

// The operator console: its own scripts, styles and API calls, nothing inline, nothing from elsewhere.
const CONSOLE = helmetHeaders({
  contentSecurityPolicy: {
    useDefaults: false,
    directives: {
      defaultSrc: ["'none'"],
      scriptSrc: ["'self'"],
      styleSrc: ["'self'"],
      imgSrc: ["'self'", 'data:'],
      fontSrc: ["'self'"],
      connectSrc: ["'self'"],
      manifestSrc: ["'self'"],
      formAction: ["'self'"],
      frameAncestors: ["'none'"],
      baseUri: ["'none'"],
      objectSrc: ["'none'"],
    },
  },
});

/**
 * helmet's headers everywhere; a Content-Security-Policy that Swagger UI can live with under /api/docs, and one
 * for the server-rendered pages.
 */
export function setSecurityHeaders(req: Request, res: Response): void {
  const headers =
    req.url.startsWith('/api/docs') && DOCS_PATH.test(req.path)
      ? DOCS
      : req.url.startsWith('/api/')
        ? STRICT
        : PAGE_PATH.test(req.path)
          ? PAGES
          : CONSOLE_PAGE.test(req.path) || req.path.startsWith(`${ASSETS_PATH}/`)
            ? CONSOLE
            : STRICT;
  for (let i = 0; i < headers.length; i++) res.setHeader(headers[i][0], headers[i][1]);
}

/** CORS is off (undefined) unless FLEETHUB_CORS_ORIGINS lists origins (or `*`). */
export function corsMiddleware(config: Pick<AppConfig, 'corsOrigins'>): RequestHandler | undefined {
  if (config.corsOrigins.length === 0) return undefined;
  const any = config.corsOrigins.includes('*');
  return cors({
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

/** What Node's HTTP parser refuses before any route runs: status line and the contract's `detail` body. */
function clientErrorAnswer(code: string | undefined): [status: number, reason: string, detail: string] {
  if (code === 'HPE_HEADER_OVERFLOW') {
    return [431, 'Request Header Fields Too Large', 'the request line and headers are too large'];
  }
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return [408, 'Request Timeout', 'the request was not received in time'];
  }
  return [400, 'Bad Request', 'malformed HTTP request'];
}

/**
 * Requests the HTTP parser refuses (headers or URL over Node's 16 KiB limit, malformed HTTP, headers too slow)
 * get the contract's error body too, instead of Node's bare status line.
 */
export function answerClientErrors(server: Server): void {
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (!socket.writable || err.code === 'ECONNRESET') {
      socket.destroy();
      return;
    }
    const [status, reason, detail] = clientErrorAnswer(err.code);
    const body = JSON.stringify({ errors: { detail } });
    // The request could not be parsed, so there is no caller's id to echo: a new one, as for any response.
    socket.end(
      `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nx-request-id: ${newRequestId()}\r\n` +
        `Connection: close\r\n\r\n${body}`,
    );
  });
}

/**
 * An API call that has not answered within `timeoutMs` gets the contract's 503 (firmware uploads and
 * downloads excepted, and nothing is done once the response has started). Whatever the handler answers
 * later is discarded. `timeoutMs` 0 disables it. Started for every request before the routes by trackRequests,
 * which ends the deadline when the response closes.
 */
export function requestTimeout(timeoutMs: number, logger: AppLogger): RequestDeadlines {
  const expire = (req: Request & { id?: string }, res: Response) => {
    if (res.headersSent || res.writableEnded) return;
    const { status, body } = errorBody(
      new DomainError(ErrorCode.DATABASE_UNAVAILABLE, 'the request took too long, try again shortly', {}, {}),
    );
    logger.logFailedRequest('warn', 'request timed out', req, res, status, { timeoutMs });
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
  };
  // Transfers that may legitimately take minutes, and what is not an API call, have no handler timeout.
  const applies = (req: Request) =>
    req.url.startsWith('/api/') &&
    !(req.method === 'POST' && (FIRMWARE_UPLOAD.test(req.path) || DEVICES_BULK.test(req.path)));
  return new RequestDeadlines(timeoutMs, applies, expire);
}
