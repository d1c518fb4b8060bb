/**
 * How the API reaches a device's console. The device gateway implements it; until a device is connected
 * through it, `send` reports "not connected" and nothing is lost silently.
 */
export abstract class DeviceConsole {
  /** Sends code to the device's console; false when the device has no live console connection. */
  abstract send(deviceId: string, code: string): Promise<boolean>;
}

/** No gateway in this process: no device is connected. */
export class DisconnectedDeviceConsole extends DeviceConsole {
  async send(): Promise<boolean> {
    return false;
  }
}

/** How the API tells the device side that a device has a new pending update. */
export abstract class UpdateNotifier {
  abstract pendingUpdateChanged(deviceId: string): Promise<void>;
}

/** Without a gateway, the pending update waits in the database for the device's next connection. */
export class DatabaseOnlyUpdateNotifier extends UpdateNotifier {
  async pendingUpdateChanged(): Promise<void> {}
}
