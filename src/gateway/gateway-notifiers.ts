import { Injectable } from '@nestjs/common';
import {
  type DeviceCommand,
  DeviceCommands,
  DeviceConsole,
  DeviceScripts,
  UpdateNotifier,
} from '../devices/device-console';
import { DeviceRelay } from './device-relay';

/** Console code goes to the device's console socket, on whichever instance holds it. */
@Injectable()
export class GatewayDeviceConsole extends DeviceConsole {
  constructor(private readonly relay: DeviceRelay) {
    super();
  }

  send(deviceId: string, code: string): Promise<boolean> {
    return this.relay.sendConsole(deviceId, code);
  }
}

/** Reboot and reconnect reach the device's socket, on whichever instance holds it. */
@Injectable()
export class GatewayDeviceCommands extends DeviceCommands {
  constructor(private readonly relay: DeviceRelay) {
    super();
  }

  run(deviceId: string, command: DeviceCommand): Promise<boolean> {
    return this.relay.command(deviceId, command);
  }

  reconnectMany(deviceIds: readonly string[]): Promise<void> {
    return this.relay.reconnectMany(deviceIds);
  }
}

/** Support scripts run on the device's socket, on whichever instance holds it. */
@Injectable()
export class GatewayDeviceScripts extends DeviceScripts {
  constructor(private readonly relay: DeviceRelay) {
    super();
  }

  run(deviceId: string, text: string, timeoutMs: number): Promise<string | null> {
    return this.relay.runScript(deviceId, text, timeoutMs);
  }
}

/** A new pending update is pushed at once when the device is connected (any instance). */
@Injectable()
export class GatewayUpdateNotifier extends UpdateNotifier {
  constructor(private readonly relay: DeviceRelay) {
    super();
  }

  pendingUpdateChanged(deviceId: string): Promise<void> {
    return this.relay.pendingUpdateChanged(deviceId);
  }

  pendingUpdatesChanged(deviceIds: readonly string[]): Promise<void> {
    return this.relay.pendingUpdatesChanged(deviceIds);
  }
}
