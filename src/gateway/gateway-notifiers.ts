import { Injectable } from '@nestjs/common';
import { DeviceConsole, UpdateNotifier } from '../devices/device-console';
import { DeviceGateway } from './device-gateway';

/** Console code goes to the device's console socket, on whichever instance holds it. */
@Injectable()
export class GatewayDeviceConsole extends DeviceConsole {
  constructor(private readonly gateway: DeviceGateway) {
    super();
  }

  send(deviceId: string, code: string): Promise<boolean> {
    return this.gateway.sendConsole(deviceId, code);
  }
}

/** A new pending update is pushed at once when the device is connected (any instance). */
@Injectable()
export class GatewayUpdateNotifier extends UpdateNotifier {
  constructor(private readonly gateway: DeviceGateway) {
    super();
  }

  pendingUpdateChanged(deviceId: string): Promise<void> {
    return this.gateway.pendingUpdateChanged(deviceId);
  }
}
