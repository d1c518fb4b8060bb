import { ArchivesModule } from './archives/archives.module';
import { DeploymentsModule } from './deployments/deployments.module';
import { CliSessionsModule } from './cli-sessions/cli-sessions.module';
import { InvitationsModule } from './invitations/invitations.module';
import { type DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_PIPE } from '@nestjs/core';
import { AuditModule } from './audit/audit.module';
import { AuthModule } from './auth/auth.module';
import { BrowserSessionsModule } from './browser-sessions/browser-sessions.module';
import { CertificatesModule } from './certificates/certificates.module';
import { AllExceptionsFilter } from './common/errors/all-exceptions.filter';
import { AppLogger, LoggingModule } from './common/http/logger';
import { ContractValidationPipe } from './common/validation/validation.pipe';
import type { AppConfig } from './config/config';
import { ConfigModule } from './config/config.module';
import { DatabaseModule } from './database/database.module';
import { DeploymentOrchestratorModule } from './deployments/orchestrator/deployment-orchestrator.module';
import { DeviceAuthModule } from './device-auth/device-auth.module';
import { DevicesModule } from './devices/devices.module';
import { FirmwareModule } from './firmware/firmware.module';
import { FirmwareDeltasModule } from './firmware/deltas/firmware-deltas.module';
import { GatewayModule } from './gateway/gateway.module';
import { HealthModule } from './health/health.module';
import { SigningKeysModule } from './signing-keys/signing-keys.module';
import { IrohModule } from './iroh/iroh.module';
import { LiveModule } from './live/live.module';
import { MembersModule } from './members/members.module';
import { OrgPoliciesModule } from './org-policies/org-policies.module';
import { SingleSignOnModule } from './single-sign-on/single-sign-on.module';
import { MetricsModule } from './metrics/metrics.module';
import { ProductsModule } from './products/products.module';
import { ScriptsModule } from './scripts/scripts.module';
import { OrgsModule } from './orgs/orgs.module';
import { OverviewModule } from './overview/overview.module';
import { TelemetryModule } from './telemetry/telemetry.module';
import { UsersModule } from './users/users.module';
import { WebhooksModule } from './webhooks/webhooks.module';

/** Feature modules served over HTTP; the CLI reuses the same ones without the HTTP layer. */
export const FEATURE_MODULES = [
  AuditModule,
  AuthModule,
  UsersModule,
  OrgsModule,
  MembersModule,
  OrgPoliciesModule,
  ProductsModule,
  ScriptsModule,
  DevicesModule,
  SigningKeysModule,
  FirmwareModule,
  FirmwareDeltasModule,
  IrohModule,
  DeviceAuthModule,
  CertificatesModule,
  TelemetryModule,
  MetricsModule,
  GatewayModule,
  DeploymentsModule,
  DeploymentOrchestratorModule,
  CliSessionsModule,
  InvitationsModule,
  BrowserSessionsModule,
  SingleSignOnModule,
  LiveModule,
  OverviewModule,
  WebhooksModule,
  ArchivesModule,
];

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
