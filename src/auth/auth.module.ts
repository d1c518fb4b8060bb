import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { RateLimiter } from '../common/http/rate-limiter';
import { UsersModule } from '../users/users.module';
import { AuthController } from './auth.controller';
import { AuthGuard } from './auth.guard';
import { AuthService } from './auth.service';
import { TokensService } from './tokens.service';

@Module({
  imports: [UsersModule],
  controllers: [AuthController],
  providers: [TokensService, AuthService, RateLimiter, { provide: APP_GUARD, useClass: AuthGuard }],
  exports: [TokensService, RateLimiter],
})
export class AuthModule {}
