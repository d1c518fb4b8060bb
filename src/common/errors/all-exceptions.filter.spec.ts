import type { ArgumentsHost } from '@nestjs/common';
import { BadRequestException, NotFoundException, PayloadTooLargeException } from '@nestjs/common';
import { QueryFailedError } from 'typeorm';
import { CapturedLog } from '../../../test/support/captured-log';
import { AllExceptionsFilter } from './all-exceptions.filter';
import { DomainError } from './domain-error';

const PLAIN_REQUEST = { id: 'req-1', method: 'GET', originalUrl: '/x', url: '/x', baseUrl: '' };

function render(exception: unknown, request: object = PLAIN_REQUEST, headersSent = false) {
  const response = {
    statusCode: headersSent ? 200 : 0,
    body: undefined as unknown,
    headers: {} as Record<string, string>,
    headersSent,
    ended: false,
    status(code: number) {
      this.statusCode = code;
      return this;
    },
    type(value: string) {
      this.headers['Content-Type'] = value;
      return this;
    },
    json(body: unknown) {
      this.body = body;
      return this;
    },
    setHeader(name: string, value: string) {
      this.headers[name] = value;
    },
    end() {
      this.ended = true;
    },
  };
  const host = {
    switchToHttp: () => ({
      getResponse: () => response,
      getRequest: () => request,
    }),
  } as unknown as ArgumentsHost;
  const log = new CapturedLog();
  new AllExceptionsFilter(log.logger('trace')).catch(exception, host);
  return Object.assign(response, { log });
}

describe('AllExceptionsFilter: every row of the contract error table', () => {
  it.each([
    [DomainError.unauthenticated(), 401, { error: 'unauthorized' }],
    [DomainError.readOnlyToken(), 403, { error: 'forbidden' }],
    [
      DomainError.roleTooLow(),
      403,
      { errors: { detail: 'Resource Not Found or Authorization Insufficient' } },
    ],
    [DomainError.notFound(), 404, { errors: { detail: 'Resource Not Found or Authorization Insufficient' } }],
    [
      new NotFoundException(),
      404,
      { errors: { detail: 'Resource Not Found or Authorization Insufficient' } },
    ],
    [
      DomainError.badRequest('request body is not valid JSON'),
      400,
      { errors: { detail: 'request body is not valid JSON' } },
    ],
    [DomainError.invalid({ name: ["can't be blank"] }), 422, { errors: { name: ["can't be blank"] } }],
    [DomainError.conflict('device is not connected'), 409, { errors: { detail: 'device is not connected' } }],
    [DomainError.deviceUnavailable(), 403, { errors: { detail: 'device not available or responding' } }],
    [DomainError.certificateUnauthorized(), 403, { status: 'Unauthorized' }],
    [new PayloadTooLargeException(), 413, { errors: { detail: 'request body is too large' } }],
    [
      new BadRequestException('Failed to decode param'),
      400,
      { errors: { detail: 'Failed to decode param' } },
    ],
  ])('%s → %i', (exception, status, body) => {
    const response = render(exception);
    expect(response.statusCode).toBe(status);
    expect(response.body).toEqual(body);
    // JSON even where the route set a content type of its own for its success answer.
    expect(response.headers['Content-Type']).toBe('json');
  });

  it('a body-parser error is mapped by its type', () => {
    const parse = Object.assign(new Error('Unexpected token'), { type: 'entity.parse.failed', status: 400 });
    expect(render(parse).body).toEqual({ errors: { detail: 'request body is not valid JSON' } });
    const large = Object.assign(new Error('too large'), { type: 'entity.too.large', status: 413 });
    expect(render(large).statusCode).toBe(413);
  });

  it('an unreachable database is a 503 with Retry-After', () => {
    for (const err of [
      Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }),
      {
        driverError: Object.assign(new Error('terminating connection due to administrator command'), {
          code: '57P01',
        }),
      },
      new Error('Connection terminated unexpectedly'),
    ]) {
      const response = render(err);
      expect(response.statusCode).toBe(503);
      expect(response.body).toEqual({ errors: { detail: expect.any(String) } });
      expect(response.headers['Retry-After']).toBe('5');
    }
  });

  it('anything else is the generic 500 body, and the cause is logged, not shown', () => {
    const response = render(new TypeError('secret internals: cannot read x of undefined'));
    expect(response.statusCode).toBe(500);
    expect(response.body).toEqual({ errors: { detail: 'Internal server error' } });
    const protocolBug = render({
      driverError: { code: '08P01', message: 'bind message supplies 1 parameters' },
    });
    expect(protocolBug.statusCode).toBe(500);
  });
});

describe('AllExceptionsFilter: what an error leaves in the log', () => {
  /** A product insert refused by a CHECK constraint, as TypeORM reports it: SQL, parameters, pg's detail. */
  function failedInsert(): QueryFailedError {
    const driverError = Object.assign(
      new Error('new row for relation "products" violates check constraint "products_name_check"'),
      {
        code: '23514',
        constraint: 'products_name_check',
        table: 'products',
        detail: 'Failing row contains (7, product-name-in-the-body, nhu_parameter_secret).',
      },
    );
    return new QueryFailedError(
      'INSERT INTO "products"("name", "note") VALUES ($1, $2)',
      ['product-name-in-the-body', 'nhu_parameter_secret'],
      driverError,
    );
  }

  const productCreate = {
    id: 'req-42',
    method: 'POST',
    baseUrl: '',
    route: { path: '/api/orgs/:org_name/products' },
    originalUrl: '/api/orgs/acme/products?token=nhu_query_secret',
    url: '/api/orgs/acme/products?token=nhu_query_secret',
    headers: { authorization: 'Bearer nhu_header_secret' },
    body: { name: 'product-name-in-the-body', password: 'body password' },
  };

  it('an unexpected database error: one error line with message, stack, request id, route and SQLSTATE', () => {
    const { statusCode, body, log } = render(failedInsert(), productCreate);
    expect(statusCode).toBe(500);
    expect(body).toEqual({ errors: { detail: 'Internal server error' } });
    expect(log.lines).toHaveLength(1);
    const [line] = log.lines;
    expect(line).toMatchObject({
      level: 50,
      msg: 'request failed',
      requestId: 'req-42',
      req: { method: 'POST', route: '/api/orgs/:org_name/products', path: '/api/orgs/acme/products' },
      res: { status: 500 },
      err: {
        type: 'QueryFailedError',
        message: 'new row for relation "products" violates check constraint "products_name_check"',
        code: '23514',
        constraint: 'products_name_check',
      },
    });
    expect((line.err as { stack: string }).stack).toMatch(
      /^QueryFailedError: new row .*\n\s+at failedInsert /,
    );
  });

  it("never logs the SQL, its parameters, pg's detail, the body, headers or the query string", () => {
    const { log } = render(failedInsert(), productCreate);
    expect(log.lines).toEqual([expect.objectContaining({ err: expect.objectContaining({ code: '23514' }) })]);
    for (const leak of [
      'product-name-in-the-body',
      'nhu_parameter_secret',
      'nhu_query_secret',
      'nhu_header_secret',
      'body password',
      'INSERT INTO',
      'Failing row',
      'parameters',
      'query',
    ]) {
      expect(log.text).not.toContain(leak);
    }
  });

  it("an error that is not PostgreSQL's: type, message and stack, no code; the path when no route matched", () => {
    const { log } = render(new TypeError('cannot read properties of undefined'));
    expect(log.lines).toEqual([
      expect.objectContaining({
        level: 50,
        requestId: 'req-1',
        req: { method: 'GET', path: '/x' },
        err: {
          type: 'TypeError',
          message: 'cannot read properties of undefined',
          stack: expect.stringMatching(/^TypeError: cannot read .*\n\s+at /),
        },
      }),
    ]);
  });

  it('a cause is kept, reduced the same way', () => {
    const { log } = render(new Error('storage failed', { cause: failedInsert() }));
    expect(log.lines[0].err).toMatchObject({
      type: 'Error',
      message: 'storage failed',
      cause: { type: 'QueryFailedError', code: '23514' },
    });
    expect(log.text).not.toContain('nhu_parameter_secret');
  });

  it('an error after the answer has started is still logged, with the status sent', () => {
    const response = render(new Error('stream broke'), PLAIN_REQUEST, true);
    expect(response.ended).toBe(true);
    expect(response.log.lines).toEqual([
      expect.objectContaining({
        level: 50,
        res: { status: 200 },
        err: expect.objectContaining({ message: 'stream broke' }),
      }),
    ]);
  });

  it('an unavailable database is one warn line with the cause; client errors log nothing here', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    expect(render(refused).log.lines).toEqual([
      expect.objectContaining({
        level: 40,
        msg: 'database unavailable',
        requestId: 'req-1',
        res: { status: 503 },
        err: expect.objectContaining({ code: 'ECONNREFUSED' }),
      }),
    ]);
    for (const clientError of [DomainError.notFound(), DomainError.invalid({ name: ['is invalid'] })]) {
      expect(render(clientError).log.lines).toEqual([]);
    }
  });
});
