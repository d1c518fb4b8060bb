import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException } from '@nestjs/common';
import type { Request, Response } from 'express';
import { AppLogger } from '../http/logger';
import { DomainError } from './domain-error';
import { errorBody } from './error-body';
import { ErrorCode, INTERNAL_DETAIL } from './error-codes';
import { isDatabaseUnavailable, isUnstorableTextError } from './postgres-errors';

/** Errors raised by body-parser and other express middleware carry a status and a type. */
interface MiddlewareError {
  status?: number;
  statusCode?: number;
  type?: string;
  expose?: boolean;
}

/** Turns anything thrown on the request path into one of the contract's bodies. */
export function toDomainError(exception: unknown): DomainError | null {
  if (exception instanceof DomainError) return exception;
  if (exception instanceof HttpException) {
    const status = exception.getStatus();
    if (status === 404 || status === 405) return DomainError.notFound();
    if (status === 413) return new DomainError(ErrorCode.PAYLOAD_TOO_LARGE, 'request body is too large');
    if (status === 429) return new DomainError(ErrorCode.RATE_LIMITED, 'too many requests');
    if (status === 415) return new DomainError(ErrorCode.UNSUPPORTED_MEDIA_TYPE, 'unsupported content type');
    if (status >= 400 && status < 500) return DomainError.badRequest(exception.message || 'bad request');
    // e.g. the readiness check (terminus) when the database does not answer.
    if (status === 503) {
      return new DomainError(
        ErrorCode.DATABASE_UNAVAILABLE,
        'service unavailable',
        {},
        { 'Retry-After': '5' },
      );
    }
    return null;
  }
  const middleware = exception as MiddlewareError | null;
  if (middleware && typeof middleware === 'object' && typeof middleware.type === 'string') {
    switch (middleware.type) {
      case 'entity.parse.failed':
        return DomainError.badRequest('request body is not valid JSON');
      case 'entity.too.large':
        return new DomainError(ErrorCode.PAYLOAD_TOO_LARGE, 'request body is too large');
      case 'encoding.unsupported':
      case 'charset.unsupported':
        return new DomainError(ErrorCode.UNSUPPORTED_MEDIA_TYPE, 'unsupported content encoding or charset');
      case 'request.aborted':
      case 'request.size.invalid':
      case 'stream.encoding.set':
        return DomainError.badRequest('request body could not be read');
    }
  }
  const status = middleware?.status ?? middleware?.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500 && middleware?.expose) {
    return DomainError.badRequest('bad request');
  }
  if (exception instanceof URIError) return DomainError.badRequest('malformed URL encoding');
  if (isUnstorableTextError(exception)) {
    return DomainError.badRequest('the request contains a NUL character or text that cannot be stored');
  }
  if (isDatabaseUnavailable(exception)) {
    return new DomainError(
      ErrorCode.DATABASE_UNAVAILABLE,
      'database unavailable, try again shortly',
      {},
      {
        'Retry-After': '5',
      },
    );
  }
  return null;
}

/**
 * Renders every error as the contract's body and logs the failures worth a cause: an unexpected error (500) at
 * `error`, with its message, stack and SQLSTATE, and an unavailable database at `warn`. That line is the
 * request's one line (`AppLogger.logFailedRequest`).
 */
@Catch()
export class AllExceptionsFilter implements ExceptionFilter {
  constructor(private readonly logger: AppLogger) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const response = http.getResponse<Response>();
    const request = http.getRequest<Request & { id?: string }>();
    const domain = toDomainError(exception);
    if (response.headersSent) {
      // The answer has started (or timed out): the error can only cut it short, but is still worth its trace.
      if (!domain) this.logUnexpected(request, response, response.statusCode, exception);
      response.end();
      return;
    }
    if (!domain) {
      this.logUnexpected(request, response, 500, exception);
      // `type`: a route may have set its own content type (`@Header`) for its success answer.
      response
        .status(500)
        .type('json')
        .json({ errors: { detail: INTERNAL_DETAIL } });
      return;
    }
    const { status, body } = errorBody(domain);
    if (domain.code === ErrorCode.DATABASE_UNAVAILABLE || domain.code === ErrorCode.SERVICE_UNAVAILABLE) {
      this.logger.logFailedRequest(
        'warn',
        isDatabaseUnavailable(exception) ? 'database unavailable' : 'service unavailable',
        request,
        response,
        status,
        { err: exception },
      );
    }
    for (const [name, value] of Object.entries(domain.headers)) response.setHeader(name, value);
    response.status(status).type('json').json(body);
  }

  private logUnexpected(request: Request, response: Response, status: number, exception: unknown): void {
    this.logger.logFailedRequest('error', 'request failed', request, response, status, { err: exception });
  }
}
