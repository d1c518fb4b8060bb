import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { RateLimitBucketsRepository } from '../common/http/rate-limit-buckets.repository';
import { RateLimiter } from '../common/http/rate-limiter';
import { BrowserSessionAuthenticator } from '../browser-sessions/browser-session-authenticator';
import { BrowserSessionsRepository } from '../browser-sessions/browser-sessions.repository';
import { InstanceBusModule } from '../database/instance-bus/instance-bus.module';
import { OrgsModule } from '../orgs/orgs.module';
import { UsersModule } from '../users/users.module';
import { AuthController } from './auth.controller';
import { AuthGuard } from './auth.guard';
import { AuthService } from './auth.service';
import { AccessRepository } from './access.repository';
import { TokenCache } from './token-cache';
import { TokensRepository } from './tokens.repository';
import { TokensController } from './tokens.controller';
import { TokensService } from './tokens.service';
import { TwoFactorController } from './two-factor.controller';
import { TwoFactorRepository } from './two-factor.repository';
import { TwoFactorService } from './two-factor.service';

@Module({
  imports: [InstanceBusModule, UsersModule, OrgsModule],
  controllers: [AuthController, TokensController, TwoFactorController],
  providers: [
    TokenCache,
    TokensRepository,
    AccessRepository,
    TokensService,
    AuthService,
    TwoFactorRepository,
    TwoFactorService,
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
    TwoFactorService,
  ],
})
export class AuthModule {}
