import type { Request, Response } from 'express';
import { assignRequestId, newRequestId } from './request-id';

const UUID_V8 = /^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

function assigned(header?: string): { id: string | undefined; sent: string | undefined } {
  const req = { headers: header === undefined ? {} : { 'x-request-id': header } } as Request & {
    id?: string;
  };
  let sent: string | undefined;
  const res = { setHeader: (_: string, value: string) => (sent = value) } as unknown as Response;
  assignRequestId(req, res);
  return { id: req.id, sent };
}

describe('request ids', () => {
  it('are UUID-shaped (version 8, RFC variant) and never repeat', () => {
    const ids = Array.from({ length: 10_000 }, () => newRequestId());
    for (const id of ids.slice(0, 50)) expect(id).toMatch(UUID_V8);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it("keep the caller's sane x-request-id, on the request and the response", () => {
    expect(assigned('abc-123')).toEqual({ id: 'abc-123', sent: 'abc-123' });
  });

  it('replace a missing or unacceptable one', () => {
    for (const header of [undefined, 'has space', 'x'.repeat(129), 'semi;colon']) {
      const { id, sent } = assigned(header);
      expect(id).toMatch(UUID_V8);
      expect(sent).toBe(id);
    }
  });
});
