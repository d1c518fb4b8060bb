import { Module } from '@nestjs/common';
import { LiveEventsModule } from '../live/live-events.module';
import { ArchiveRecordsModule } from '../archives/archive-records.module';
import { ArchiveDelivery } from './archive-delivery';
import { ArchiveDownloadController, ArchiveDownloads } from './archive-downloads';
import { CertificateAuthModule } from '../certificates/certificate-auth.module';
import {
  CertificateDeviceAuthenticator,
  ProxiedCertificateOrSharedSecret,
} from '../certificates/certificate-authenticator';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { DeploymentsModule } from '../deployments/deployments.module';
import { DeviceAuthModule } from '../device-auth/device-auth.module';
import { DeviceAuthenticator } from '../device-auth/device-authenticator';
import { NH1DeviceAuthenticator } from '../device-auth/nh1-device-authenticator';
import { ServerKeyService } from '../device-auth/server-key.service';
import { DeviceCommands, DeviceConsole, DeviceScripts, UpdateNotifier } from '../devices/device-console';
import { DeviceRecordsModule } from '../devices/device-records.module';
import { FirmwareModule } from '../firmware/firmware.module';
import { HealthModule } from '../health/health.module';
import { InstanceBusModule } from '../database/instance-bus/instance-bus.module';
import { IrohModule } from '../iroh/iroh.module';
import { TelemetryModule } from '../telemetry/telemetry.module';
import { ConsoleOutputRepository } from './console-output.repository';
import { ConsoleOutputService } from './console-output.service';
import { DeviceBus, PgDeviceBus } from './device-bus';
import { DeviceConnections } from './device-connections';
import { Admission } from './admission';
import { ChannelRouter } from './channels/channel-router';
import { ConsoleChannel } from './channels/console';
import { DeviceChannel } from './channels/device';
import { ExtensionsChannel } from './channels/extensions';
import { CONNECT_CONCURRENCY, DeviceGateway, HANDSHAKE_MAX_WAIT_MS } from './device-gateway';
import { DeviceLinkService } from './device-link.service';
import { DeviceRelay } from './device-relay';
import { DeviceTlsListener } from './device-tls-listener';
import { DownloadLinkSigner } from './download-links';
import { FirmwareDownloads, LINK_SIGNER } from './firmware-downloads';
import { DeviceConsoleController, FirmwareDownloadController } from './gateway.controller';
import { GatewayInstancesRepository } from './gateway-instances.repository';
import { GatewayPeers } from './gateway-peers';
import { ScriptRunner } from './script-runner';
import {
  GatewayDeviceCommands,
  GatewayDeviceConsole,
  GatewayDeviceScripts,
  GatewayUpdateNotifier,
} from './gateway-notifiers';
import { PresenceService } from './presence.service';
import { RolloutSignals } from './rollout-signals';

/**
 * The device side: the device socket and its channels, presence, the bus between instances, firmware downloads,
 * console output. Provides DeviceConsole, DeviceCommands and UpdateNotifier to the devices API.
 */
@Module({
  imports: [
    DeviceAuthModule,
    DeviceRecordsModule,
    FirmwareModule,
    HealthModule,
    InstanceBusModule,
    IrohModule,
    LiveEventsModule,
    TelemetryModule,
    DeploymentsModule,
    CertificateAuthModule,
    ArchiveRecordsModule,
  ],
  controllers: [DeviceConsoleController, FirmwareDownloadController, ArchiveDownloadController],
  providers: [
    {
      provide: LINK_SIGNER,
      inject: [ServerKeyService, APP_CONFIG],
      useFactory: async (keys: ServerKeyService, config: AppConfig) => {
        await keys.load();
        return new DownloadLinkSigner(keys.subkey('sign-download-urls'), config.publicUrl);
      },
    },
    {
      provide: Admission,
      useFactory: () => new Admission(CONNECT_CONCURRENCY, { maxHandshakeWaitMs: HANDSHAKE_MAX_WAIT_MS }),
    },
    { provide: DeviceBus, useClass: PgDeviceBus },
    GatewayInstancesRepository,
    GatewayPeers,
    PresenceService,
    ConsoleOutputRepository,
    ConsoleOutputService,
    DeviceLinkService,
    FirmwareDownloads,
    ArchiveDownloads,
    ArchiveDelivery,
    DeviceConnections,
    DeviceChannel,
    ConsoleChannel,
    ExtensionsChannel,
    ChannelRouter,
    DeviceRelay,
    ScriptRunner,
    DeviceGateway,
    // After DeviceGateway: it serves its upgrades with the gateway started.
    DeviceTlsListener,
    {
      // The main listener's device authentication: NH1, and certificates from a TLS terminator's header when the
      // proxy mode is on.
      provide: DeviceAuthenticator,
      inject: [NH1DeviceAuthenticator, CertificateDeviceAuthenticator, APP_CONFIG],
      useFactory: (
        nh1: NH1DeviceAuthenticator,
        certificates: CertificateDeviceAuthenticator,
        config: AppConfig,
      ) => (config.deviceCertProxy ? new ProxiedCertificateOrSharedSecret(certificates, nh1) : nh1),
    },
    RolloutSignals,
    { provide: DeviceConsole, useClass: GatewayDeviceConsole },
    { provide: DeviceCommands, useClass: GatewayDeviceCommands },
    { provide: DeviceScripts, useClass: GatewayDeviceScripts },
    { provide: UpdateNotifier, useClass: GatewayUpdateNotifier },
  ],
  exports: [
    DeviceConsole,
    DeviceCommands,
    DeviceScripts,
    UpdateNotifier,
    DeviceGateway,
    DeviceTlsListener,
    DeviceBus,
    DeviceRelay,
    RolloutSignals,
  ],
})
export class GatewayModule {}
