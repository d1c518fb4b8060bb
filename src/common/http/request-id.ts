import { randomBytes } from 'node:crypto';
import type { Request, Response } from 'express';

const ACCEPTABLE_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

/**
 * This process's request ids: UUID-shaped (RFC 9562 version 8, the vendor-defined layout), 74 random bits drawn when
 * the process starts, then a 48-bit count of its requests. Unique across instances and restarts as random UUIDs
 * are, without drawing 122 random bits and formatting them for every request (`randomUUID` was a measurable part
 * of what fleethub adds per request: bench/README.md §1).
 */
function requestIds(): () => string {
  const random = randomBytes(10);
  random[6] = (random[6] & 0x0f) | 0x80; // version 8
  random[8] = (random[8] & 0x3f) | 0x80; // RFC 9562 variant
  const hex = random.toString('hex');
  const prefix = `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-`;
  let count = 0;
  return () => prefix + (count++ % 0x1000000000000).toString(16).padStart(12, '0');
}

export const newRequestId = requestIds();

/** The caller's `x-request-id` when it is sane, else a new one; set on the request and the response. */
export function assignRequestId(req: Request & { id?: string }, res: Response): void {
  const given = req.headers['x-request-id'];
  const id = typeof given === 'string' && ACCEPTABLE_ID.test(given) ? given : newRequestId();
  req.id = id;
  res.setHeader('x-request-id', id);
}
