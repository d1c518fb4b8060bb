/**
 * The framework floor: the least a NestJS application on fleethub's HTTP stack does to answer
 * `GET /api/users/me` as fleethub does, so that fleethub's own per-request work (its global guard, request id,
 * logging, metrics, security headers, timeout, exception filter) can be measured apart from what NestJS and Express
 * cost on their own. The bare floor (floor-server.ts) measures the whole stack; this one measures what fleethub adds
 * to it (docs/decisions.md, "The framework floor").
 *
 * It runs fleethub's own code wherever fleethub's answer depends on it, so that a change there changes both: the
 * same Nest and Express, created the same way (NestFactory, fleethub's Express adapter, no body parser, no ETag,
 * no `X-Powered-By`, plain objects written by fleethub's JSON reply); the token verified by fleethub's
 * TokensService through its TokenCache (the cache trusts an entry only while the instance bus, fleethub's own,
 * has caught up, as in fleethub: the steady state is a cache hit); the per-token API limit counted by fleethub's
 * RateLimiter (`hitBuffered`, written once a second in one batched upsert), and failed authentications refused per
 * address by the same limiter; errors as the contract's bodies (errorBody). Nothing else: one controller, no guard,
 * interceptor, pipe or middleware, no logging (Nest's logger is off), metrics, request id or security headers
 * (checked when it starts: none of fleethub's modules for those is loaded).
 *
 * env: DATABASE_URL, PORT (default 0 = any), HOST (127.0.0.1), FLOOR_RATE_LIMIT_API_PER_MIN (0 = off),
 * FLOOR_RATE_LIMIT_AUTH_FAILURES_PER_MIN (default 10, fleethub's). Prints `framework floor listening on <url>`.
 */
import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import {
  type ArgumentsHost,
  Catch,
  Controller,
  type ExceptionFilter,
  Get,
  Module,
  Req,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Request, Response } from 'express';
import { TokenCache } from '../src/auth/token-cache';
import { TokensRepository } from '../src/auth/tokens.repository';
import { TokensService } from '../src/auth/tokens.service';
import type { Actor } from '../src/common/auth/actor';
import { DomainError } from '../src/common/errors/domain-error';
import { errorBody } from '../src/common/errors/error-body';
import { ErrorCode } from '../src/common/errors/error-codes';
import { ExpressHttpAdapter } from '../src/common/http/express-adapter';
import { replyJsonDirectly } from '../src/common/http/json-reply';
import { RateLimitBucketsRepository } from '../src/common/http/rate-limit-buckets.repository';
import { bucketKey, rateLimited, RateLimiter } from '../src/common/http/rate-limiter';
import { DatabaseModule } from '../src/database/database.module';
import { InstanceBusModule } from '../src/database/instance-bus/instance-bus.module';
import type { UserView } from '../src/users/dto/user.view';

const RATE_LIMIT_API_PER_MIN = Number(process.env.FLOOR_RATE_LIMIT_API_PER_MIN ?? 0);
const RATE_LIMIT_AUTH_FAILURES_PER_MIN = Number(process.env.FLOOR_RATE_LIMIT_AUTH_FAILURES_PER_MIN ?? 10);

@Controller('api/users')
class UsersMeController {
  constructor(
    private readonly tokens: TokensService,
    private readonly limiter: RateLimiter,
  ) {}

  /** fleethub's AuthGuard for a user route, then UsersService.me: the same rules, in the handler. */
  @Get('me')
  async me(@Req() request: Request): Promise<{ data: UserView }> {
    const actor = await this.authenticate(request);
    const limit = this.limiter.hitBuffered(bucketKey('api', actor.tokenId), RATE_LIMIT_API_PER_MIN);
    if (!limit.allowed) throw rateLimited(limit, 'too many requests for this token, try again later');
    return { data: { username: actor.username, email: actor.email, name: actor.name } };
  }

  /** A failed token counts against the source address; over the limit the address gets 429 first. */
  private async authenticate(request: Request): Promise<Actor> {
    const header = request.headers.authorization;
    const counted = RATE_LIMIT_AUTH_FAILURES_PER_MIN > 0 && header !== undefined;
    const address = request.socket.remoteAddress ?? 'unknown';
    const block = counted ? this.limiter.blocked('authfail', address) : undefined;
    if (block !== undefined) throw rateLimited(block, 'too many failed authentications');
    try {
      return await this.tokens.authenticate(header);
    } catch (err) {
      if (!counted || !(err instanceof DomainError) || err.code !== ErrorCode.UNAUTHENTICATED) throw err;
      const result = await this.limiter.hitOrBlock('authfail', address, RATE_LIMIT_AUTH_FAILURES_PER_MIN);
      throw result.allowed ? err : rateLimited(result, 'too many failed authentications');
    }
  }
}

/** The contract's body for a domain error; anything else is Nest's own answer (the floor has no other errors). */
@Catch(DomainError)
class DomainErrorFilter implements ExceptionFilter {
  catch(error: DomainError, host: ArgumentsHost): void {
    const { status, body } = errorBody(error);
    const response = host.switchToHttp().getResponse<Response>();
    response.status(status).set(error.headers).json(body);
  }
}

@Module({
  imports: [DatabaseModule.register(process.env.DATABASE_URL ?? ''), InstanceBusModule],
  controllers: [UsersMeController],
  providers: [TokenCache, TokensRepository, TokensService, RateLimitBucketsRepository, RateLimiter],
})
class FrameworkFloorModule {}

/** fleethub's per-request layers, which this floor must not load (src/common/http, src/metrics). */
const FLEETHUB_LAYERS = [
  '/common/http/logger.js',
  '/common/http/request-id.js',
  '/common/http/security.js',
  '/metrics/',
  '/auth/auth.guard.js',
  '/common/errors/all-exceptions.filter.js',
];

async function main(): Promise<void> {
  const app = await NestFactory.create<NestExpressApplication>(
    FrameworkFloorModule,
    new ExpressHttpAdapter(),
    {
      bodyParser: false,
      logger: false,
    },
  );
  app.disable('x-powered-by');
  app.set('etag', false);
  replyJsonDirectly(app);
  app.useGlobalFilters(new DomainErrorFilter());
  app.enableShutdownHooks();
  await app.init();
  const loaded = Object.keys(require.cache).filter((path) => FLEETHUB_LAYERS.some((l) => path.includes(l)));
  if (loaded.length > 0) {
    process.stderr.write(
      `framework floor: fleethub's per-request layers were loaded: ${loaded.join(', ')}\n`,
    );
    process.exit(1);
  }
  await app.listen(Number(process.env.PORT ?? 0), process.env.HOST ?? '127.0.0.1');
  const { address, port } = app.getHttpServer().address() as AddressInfo;
  process.stdout.write(`framework floor listening on http://${address}:${port}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(
    `framework floor: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  process.exit(1);
});
