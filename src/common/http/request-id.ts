import { randomUUID } from 'node:crypto';
import type { Request, Response } from 'express';

const ACCEPTABLE_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

/** The caller's `x-request-id` when it is sane, else a new one; set on the request and the response. */
export function assignRequestId(req: Request & { id?: string }, res: Response): void {
  const given = req.headers['x-request-id'];
  const id = typeof given === 'string' && ACCEPTABLE_ID.test(given) ? given : randomUUID();
  req.id = id;
  res.setHeader('x-request-id', id);
}
