import type { ArgumentsHost } from '@nestjs/common';
import { BadRequestException, NotFoundException, PayloadTooLargeException } from '@nestjs/common';
import { AllExceptionsFilter } from './all-exceptions.filter';
import { DomainError } from './domain-error';

function render(exception: unknown) {
  const response = {
    statusCode: 0,
    body: undefined as unknown,
    headers: {} as Record<string, string>,
    headersSent: false,
    status(code: number) {
      this.statusCode = code;
      return this;
    },
    json(body: unknown) {
      this.body = body;
      return this;
    },
    setHeader(name: string, value: string) {
      this.headers[name] = value;
    },
    end() {},
  };
  const host = {
    switchToHttp: () => ({
      getResponse: () => response,
      getRequest: () => ({ id: 'req-1', method: 'GET', path: '/x' }),
    }),
  } as unknown as ArgumentsHost;
  const filter = new AllExceptionsFilter();
  jest.spyOn(filter['logger'], 'error').mockImplementation(() => undefined);
  jest.spyOn(filter['logger'], 'warn').mockImplementation(() => undefined);
  filter.catch(exception, host);
  return response;
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
