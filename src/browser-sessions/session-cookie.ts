import {
  type CallHandler,
  type ExecutionContext,
  Inject,
  Injectable,
  type NestInterceptor,
  UseInterceptors,
} from '@nestjs/common';
import type { Request, Response } from 'express';
import { map, type Observable } from 'rxjs';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { SESSION_COOKIE } from './session-request';

/** What a sign-in or a sign-out returns: the body, and the session cookie to set (`null`: clear it). */
export class WithSessionCookie<T> {
  constructor(
    readonly secret: string | null,
    readonly body: T,
  ) {}

  /** Only a route with SetsSessionCookie() may return this: anywhere else it would be serialized whole. */
  toJSON(): never {
    throw new Error('a WithSessionCookie result reached the response: the route needs SetsSessionCookie()');
  }
}

/** The `Set-Cookie` value of a session's cookie (`null`: one that clears it). */
export function sessionCookie(secret: string | null, secure: boolean): string {
  const clear = secret === null ? '; Max-Age=0' : '';
  return `${SESSION_COOKIE}=${secret ?? ''}; Path=/; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}${clear}`;
}

/**
 * Sets the session cookie of a `WithSessionCookie` result and answers with its body. The cookie lasts as long as
 * the browser (the server ends the session); `Secure` when the public URL is https or the request came over TLS.
 */
@Injectable()
export class SessionCookieInterceptor implements NestInterceptor {
  private readonly httpsPublicUrl: boolean;

  constructor(@Inject(APP_CONFIG) config: AppConfig) {
    this.httpsPublicUrl = config.publicUrl.startsWith('https:');
  }

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle().pipe(
      map((result: unknown) => {
        if (!(result instanceof WithSessionCookie)) return result;
        const http = context.switchToHttp();
        const secure = this.httpsPublicUrl || http.getRequest<Request>().secure ? '; Secure' : '';
        http.getResponse<Response>().append('Set-Cookie', sessionCookie(result.secret, secure !== ''));
        return result.body as unknown;
      }),
    );
  }
}

export const SetsSessionCookie = () => UseInterceptors(SessionCookieInterceptor);
