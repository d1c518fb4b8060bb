import { type DynamicModule, Module, type Type } from '@nestjs/common';
import type { CommandRunner } from 'nest-commander';
import { AuditModule } from '../audit/audit.module';
import { AuthModule } from '../auth/auth.module';
import { FirmwareModule } from '../firmware/firmware.module';
import type { AppConfig } from '../config/config';
import { ConfigModule } from '../config/config.module';
import { DatabaseModule } from '../database/database.module';
import { DeploymentsModule } from '../deployments/deployments.module';
import { DeviceRecordsModule } from '../devices/device-records.module';
import { IrohModule } from '../iroh/iroh.module';
import { MembersModule } from '../members/members.module';
import { OrgsModule } from '../orgs/orgs.module';
import { ProductsModule } from '../products/products.module';
import { SigningKeysModule } from '../signing-keys/signing-keys.module';
import { UsersModule } from '../users/users.module';
import { WebhookOutboxModule } from '../webhooks/webhook-outbox.module';
import { ARCHIVES_COMMANDS, ArchivesCommand } from './archives.command';
import { CERTS_COMMANDS, CertsCommand } from './certs.command';
import { CLI_COMMANDS, GROUP_COMMANDS } from './commands';
import { DemoCommand } from './demo.command';
import { DemoService } from './demo.service';
import { SimulateCommand } from './simulate.command';

/** Every command and subcommand of `fleethub`. */
const ALL_COMMANDS: Type<CommandRunner>[] = [
  ...CLI_COMMANDS,
  DemoCommand,
  SimulateCommand,
  ...CERTS_COMMANDS,
  ...ARCHIVES_COMMANDS,
];

/** Commands that need no database: network clients of a server (and local files). */
export const DATABASE_FREE_COMMANDS: Type<CommandRunner>[] = [
  SimulateCommand,
  ...CERTS_COMMANDS,
  ...ARCHIVES_COMMANDS,
];

@Module({})
export class CliModule {
  /**
   * The commands alone, without their services (nor a database), to parse a command line: commander answers help,
   * version and usage errors itself, a group without its subcommand prints its usage, and any other command's
   * `run` only reports that it was chosen.
   */
  static forParsing(config: AppConfig, chosen: (command: Type<CommandRunner>) => void): DynamicModule {
    const groups: Type<CommandRunner>[] = [...GROUP_COMMANDS, CertsCommand, ArchivesCommand];
    return {
      module: CliModule,
      imports: [ConfigModule.register(config)],
      providers: ALL_COMMANDS.map((command) => ({
        provide: command,
        useFactory: () => {
          const withoutServices = Object.create(command.prototype as object) as CommandRunner;
          if (groups.includes(command)) return withoutServices;
          return Object.assign(withoutServices, { run: () => Promise.resolve(chosen(command)) });
        },
      })),
    };
  }

  /** `databaseUrl` null: only the DATABASE_FREE_COMMANDS (`simulate`, `certs`). */
  static register(config: AppConfig, databaseUrl: string | null): DynamicModule {
    if (databaseUrl === null) {
      return {
        module: CliModule,
        imports: [ConfigModule.register(config)],
        providers: DATABASE_FREE_COMMANDS,
      };
    }
    return {
      module: CliModule,
      imports: [
        ConfigModule.register(config),
        DatabaseModule.register(databaseUrl, 2),
        AuditModule,
        AuthModule,
        UsersModule,
        OrgsModule,
        MembersModule,
        SigningKeysModule,
        ProductsModule,
        FirmwareModule,
        // `fleethub demo`'s deployment group (never the orchestrator: the CLI sends no update).
        DeploymentsModule,
        // `fleethub demo` makes up the fleet (devices, pending updates, iroh endpoints) through their repositories.
        DeviceRecordsModule,
        IrohModule,
        // Changes made here write their webhook events too (the server's instances deliver them).
        WebhookOutboxModule,
      ],
      providers: [...CLI_COMMANDS, DemoCommand, DemoService, ...DATABASE_FREE_COMMANDS],
    };
  }
}
