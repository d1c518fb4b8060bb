import { type DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_PIPE } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditModule } from './audit/audit.module';
import { AuthModule } from './auth/auth.module';
import { AllExceptionsFilter } from './common/errors/all-exceptions.filter';
import { AppLogger, LoggingModule } from './common/http/logger';
import { ContractValidationPipe } from './common/validation/validation.pipe';
import { APP_CONFIG, type AppConfig } from './config/config';
import { dataSourceOptions } from './database/data-source-options';
import { DeviceAuthModule } from './device-auth/device-auth.module';
import { DevicesModule } from './devices/devices.module';
import { FirmwareModule } from './firmware/firmware.module';
import { GatewayModule } from './gateway/gateway.module';
import { HealthModule } from './health/health.module';
import { SigningKeysModule } from './signing-keys/signing-keys.module';
import { IrohModule } from './iroh/iroh.module';
import { MembersModule } from './members/members.module';
import { MetricsModule } from './metrics/metrics.module';
import { ProductsModule } from './products/products.module';
import { ScriptsModule } from './scripts/scripts.module';
import { OrgsModule } from './orgs/orgs.module';
import { UsersModule } from './users/users.module';

/** Feature modules served over HTTP; the CLI reuses the same ones without the HTTP layer. */
export const FEATURE_MODULES = [
  AuditModule,
  AuthModule,
  UsersModule,
  OrgsModule,
  MembersModule,
  ProductsModule,
  ScriptsModule,
  DevicesModule,
  SigningKeysModule,
  FirmwareModule,
  IrohModule,
  DeviceAuthModule,
  MetricsModule,
  GatewayModule,
];

@Module({})
export class ConfigModule {
  static register(config: AppConfig): DynamicModule {
    return {
      module: ConfigModule,
      global: true,
      providers: [{ provide: APP_CONFIG, useValue: config }],
      exports: [APP_CONFIG],
    };
  }
}

@Module({})
export class DatabaseModule {
  /** `databaseUrl` is resolved before the app starts (DATABASE_URL, or the embedded server). */
  static register(databaseUrl: string, poolSize?: number): DynamicModule {
    return {
      module: DatabaseModule,
      imports: [TypeOrmModule.forRoot({ ...dataSourceOptions(databaseUrl, { poolSize }), retryAttempts: 0 })],
    };
  }
}

@Module({})
export class AppModule {
  /** `logger`: the one the application is created with (`NestFactory.create(..., { logger })`). */
  static register(
    config: AppConfig,
    databaseUrl: string,
    logger = new AppLogger(config.logLevel),
  ): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.register(config),
        LoggingModule.register(logger),
        DatabaseModule.register(databaseUrl),
        HealthModule,
        ...FEATURE_MODULES,
      ],
      providers: [
        { provide: APP_FILTER, useClass: AllExceptionsFilter },
        { provide: APP_PIPE, useClass: ContractValidationPipe },
      ],
    };
  }
}
