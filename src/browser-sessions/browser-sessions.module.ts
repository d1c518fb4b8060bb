import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { BrowserSessionsController, UserSessionsController } from './browser-sessions.controller';
import { BrowserSessionsService } from './browser-sessions.service';
import { SessionCookieInterceptor } from './session-cookie';

/**
 * Browser sign-in sessions. Their repository and authenticator are provided by the AuthModule, whose guard
 * authenticates the cookie (and whose TokenCache they share).
 */
@Module({
  imports: [AuthModule],
  controllers: [BrowserSessionsController, UserSessionsController],
  providers: [BrowserSessionsService, SessionCookieInterceptor],
  exports: [BrowserSessionsService],
})
export class BrowserSessionsModule {}
