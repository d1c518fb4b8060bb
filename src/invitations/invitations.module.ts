import { type MiddlewareConsumer, Module, type NestModule, RequestMethod } from '@nestjs/common';
import express from 'express';
import { AuthModule } from '../auth/auth.module';
import { DeviceAuthModule } from '../device-auth/device-auth.module';
import { MailModule } from '../mail/mail.module';
import { MembersModule } from '../members/members.module';
import { OrgsModule } from '../orgs/orgs.module';
import { UsersModule } from '../users/users.module';
import { InvitationPageController } from './invitation-page.controller';
import { InvitationsController } from './invitations.controller';
import { InvitationsRepository } from './invitations.repository';
import { InvitationsService } from './invitations.service';

const parseForm = express.urlencoded({ extended: false, limit: '8kb', parameterLimit: 10 });

@Module({
  // DeviceAuthModule: the server key, which the invitation links are derived with.
  imports: [AuthModule, DeviceAuthModule, MailModule, MembersModule, OrgsModule, UsersModule],
  controllers: [InvitationsController, InvitationPageController],
  providers: [InvitationsRepository, InvitationsService],
})
export class InvitationsModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(parseForm).forRoutes({ path: 'invitations/:token', method: RequestMethod.POST });
  }
}
