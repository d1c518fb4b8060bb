import { type CallHandler, type ExecutionContext, Injectable, type NestInterceptor } from '@nestjs/common';
import type { Response } from 'express';
import { map, type Observable } from 'rxjs';

/** What a service returns for a created resource: the body, and where the resource now lives. */
export class Created<T> {
  constructor(
    readonly location: string,
    readonly body: T,
  ) {}
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
