import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { RateLimitBucketsRepository } from '../common/http/rate-limit-buckets.repository';
import { RateLimiter } from '../common/http/rate-limiter';
import { BrowserSessionAuthenticator } from '../browser-sessions/browser-session-authenticator';
import { BrowserSessionsRepository } from '../browser-sessions/browser-sessions.repository';
import { InstanceBusModule } from '../database/instance-bus/instance-bus.module';
import { UsersModule } from '../users/users.module';
import { AuthController } from './auth.controller';
import { AuthGuard } from './auth.guard';
import { AuthService } from './auth.service';
import { AccessRepository } from './access.repository';
import { TokenCache } from './token-cache';
import { TokensRepository } from './tokens.repository';
import { TokensController } from './tokens.controller';
import { TokensService } from './tokens.service';

@Module({
  imports: [InstanceBusModule, UsersModule],
  controllers: [AuthController, TokensController],
  providers: [
    TokenCache,
    TokensRepository,
    AccessRepository,
    TokensService,
    AuthService,
    RateLimitBucketsRepository,
    RateLimiter,
    // The guard authenticates browser session cookies too (src/browser-sessions), through the TokenCache.
    BrowserSessionsRepository,
    BrowserSessionAuthenticator,
    { provide: APP_GUARD, useClass: AuthGuard },
  ],
  exports: [
    TokensService,
    RateLimiter,
    AuthService,
    BrowserSessionsRepository,
    BrowserSessionAuthenticator,
    TokenCache,
  ],
})
export class AuthModule {}
