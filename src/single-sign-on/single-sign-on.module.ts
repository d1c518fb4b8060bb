import { Module } from '@nestjs/common';
import { BrowserSessionsModule } from '../browser-sessions/browser-sessions.module';
import { UsersModule } from '../users/users.module';
import { SingleSignOnController, SingleSignOnPageController } from './single-sign-on.controller';
import { SingleSignOnRepository } from './single-sign-on.repository';
import { SingleSignOnService } from './single-sign-on.service';

@Module({
  imports: [BrowserSessionsModule, UsersModule],
  controllers: [SingleSignOnController, SingleSignOnPageController],
  providers: [SingleSignOnRepository, SingleSignOnService],
})
export class SingleSignOnModule {}
