import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';

/** What a file download asks besides its path: a byte range, and whether it wants the headers only. */
export interface FileRangeRequest {
  /** The `Range` header, when sent. */
  range: string | undefined;
  /** A HEAD request: headers only. */
  headOnly: boolean;
}

/** A download by a signed, expiring link (devices'): its query's `expires` and `signature`, as sent. */
export interface SignedLinkRequest extends FileRangeRequest {
  expires: unknown;
  signature: unknown;
}

const rangeOf = (req: Request): FileRangeRequest => ({
  range: req.headers.range,
  headOnly: req.method === 'HEAD',
});

/** The download's `Range` header and method (a route's `@Res()` writes the file). */
export const FileRange = createParamDecorator((_: unknown, ctx: ExecutionContext): FileRangeRequest =>
  rangeOf(ctx.switchToHttp().getRequest<Request>()),
);

/** The signed link's query values with the download's `Range` header and method. */
export const SignedLink = createParamDecorator((_: unknown, ctx: ExecutionContext): SignedLinkRequest => {
  const req = ctx.switchToHttp().getRequest<Request>();
  const query = req.query as Record<string, unknown>;
  return { ...rangeOf(req), expires: query.expires, signature: query.signature };
});
