import type { Request } from 'express';
import { DomainError } from '../errors/domain-error';
import { ErrorCode } from '../errors/error-codes';

/**
 * Paths whose JSON body the app-wide parser leaves alone (its 1 MiB and 4,096-value limits are for ordinary
 * calls): the route reads it with readLargeJson and its own limit.
 */
export const LARGE_JSON_PATH = /^\/api\/orgs\/[^/]+\/products\/[^/]+\/devices\/import\/?$/;

/** The request's JSON body, up to `maxBytes` (413 beyond, 400 when it is not JSON). */
export async function readLargeJson(req: Request, maxBytes: number): Promise<unknown> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > maxBytes) throw tooLarge(maxBytes);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) {
      req.destroy();
      throw tooLarge(maxBytes);
    }
    chunks.push(chunk);
  }
  if (size === 0) return undefined;
  try {
    return JSON.parse(Buffer.concat(chunks, size).toString('utf8'));
  } catch {
    throw DomainError.badRequest('request body is not valid JSON');
  }
}

function tooLarge(maxBytes: number): DomainError {
  return new DomainError(ErrorCode.PAYLOAD_TOO_LARGE, `request body is larger than ${maxBytes} bytes`);
}
