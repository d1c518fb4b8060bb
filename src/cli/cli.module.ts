import { type DynamicModule, Module } from '@nestjs/common';
import { ConfigModule, DatabaseModule } from '../app.module';
import { AuthModule } from '../auth/auth.module';
import type { AppConfig } from '../config/config';
import { MembersModule } from '../members/members.module';
import { OrgsModule } from '../orgs/orgs.module';
import { SigningKeysModule } from '../signing-keys/signing-keys.module';
import { UsersModule } from '../users/users.module';
import { CLI_COMMANDS } from './commands';

@Module({})
export class CliModule {
  static register(config: AppConfig, databaseUrl: string): DynamicModule {
    return {
      module: CliModule,
      imports: [
        ConfigModule.register(config),
        DatabaseModule.register(databaseUrl, 2),
        AuthModule,
        UsersModule,
        OrgsModule,
        MembersModule,
        SigningKeysModule,
      ],
      providers: [...CLI_COMMANDS],
    };
  }
}
