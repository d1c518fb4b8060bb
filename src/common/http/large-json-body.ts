import type { Request } from 'express';
import { DomainError } from '../errors/domain-error';
import { ErrorCode } from '../errors/error-codes';
import { MAX_JSON_DEPTH, jsonTextProblem, rawBodyShapeError } from '../validation/json-limits';

/** The largest body LARGE_JSON_PATH takes (a Trust&GO manifest of 10,000 devices is about 9.4 MiB). */
export const MAX_LARGE_JSON_BYTES = 64 * 1024 * 1024;

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
  const bytes = Buffer.concat(chunks, size);
  // The app-wide depth limit holds here too (the value count does not: a manifest has hundreds of thousands).
  if (
    jsonTextProblem(bytes, { maxDepth: MAX_JSON_DEPTH, maxValues: Number.POSITIVE_INFINITY }) === 'too_deep'
  )
    throw rawBodyShapeError(bytes)!;
  try {
    return JSON.parse(bytes.toString('utf8'));
  } catch {
    throw DomainError.badRequest('request body is not valid JSON');
  }
}

function tooLarge(maxBytes: number): DomainError {
  return new DomainError(ErrorCode.PAYLOAD_TOO_LARGE, `request body is larger than ${maxBytes} bytes`);
}
