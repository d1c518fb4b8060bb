import { Module } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { DeploymentsModule } from '../deployments/deployments.module';
import { DeviceAuthModule } from '../device-auth/device-auth.module';
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
    TelemetryModule,
    DeploymentsModule,
  ],
  controllers: [DeviceConsoleController, FirmwareDownloadController],
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
    DeviceConnections,
    DeviceChannel,
    ConsoleChannel,
    ExtensionsChannel,
    ChannelRouter,
    DeviceRelay,
    ScriptRunner,
    DeviceGateway,
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
    DeviceBus,
    DeviceRelay,
    RolloutSignals,
  ],
})
export class GatewayModule {}
