import {
  type CallHandler,
  type ExecutionContext,
  Injectable,
  type NestInterceptor,
  UseInterceptors,
} from '@nestjs/common';
import type { Response } from 'express';
import { map, type Observable } from 'rxjs';

/** What a service returns for a created resource: the body, and where the resource now lives. */
export class Created<T> {
  constructor(
    readonly location: string,
    readonly body: T,
  ) {}

  /** Only a route with SetsLocation() may return this: anywhere else it would be serialized whole. */
  toJSON(): never {
    throw new Error('a Created result reached the response: the route needs SetsLocation()');
  }
}

/** Percent-encodes one path segment of a Location header. */
export const pathSegment = (value: string) => encodeURIComponent(value);

/** Sets `Location` for a `Created` result and answers with its body. */
@Injectable()
export class CreatedInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle().pipe(
      map((result: unknown) => {
        if (!(result instanceof Created)) return result;
        context.switchToHttp().getResponse<Response>().setHeader('Location', result.location);
        return result.body as unknown;
      }),
    );
  }
}

/**
 * For the handlers that create a resource (their services return `Created`): applied per route, not globally,
 * because any global interceptor makes Nest wrap every request in an AsyncResource and an rxjs pipeline.
 * ApiOperationDoc applies it to every operation that documents a `Location` header.
 */
export const SetsLocation = () => UseInterceptors(CreatedInterceptor);
