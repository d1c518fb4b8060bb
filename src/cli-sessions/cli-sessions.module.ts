import { type MiddlewareConsumer, Module, type NestModule, RequestMethod } from '@nestjs/common';
import express from 'express';
import { AuthModule } from '../auth/auth.module';
import { CliSessionPageController } from './cli-session-page.controller';
import { CliSessionsController } from './cli-sessions.controller';
import { CliSessionsRepository } from './cli-sessions.repository';
import { CliSessionsService } from './cli-sessions.service';

/** A small form: 4 fields of a few hundred bytes at most. */
const parseForm = express.urlencoded({ extended: false, limit: '8kb', parameterLimit: 10 });

@Module({
  imports: [AuthModule],
  controllers: [CliSessionsController, CliSessionPageController],
  providers: [CliSessionsRepository, CliSessionsService],
})
export class CliSessionsModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(parseForm).forRoutes({ path: 'auth/cli/:token', method: RequestMethod.POST });
  }
}
