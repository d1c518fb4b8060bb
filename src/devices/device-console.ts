/**
 * How the API reaches a device's console. The device gateway implements it (src/gateway): `send` is false only
 * when no instance holds a console connection of the device, so code is never lost silently.
 */
export abstract class DeviceConsole {
  /** Sends code to the device's console; false when the device has no live console connection. */
  abstract send(deviceId: string, code: string): Promise<boolean>;
}

/** How the API tells the device side that a device has a new pending update (pushed at once if connected). */
export abstract class UpdateNotifier {
  abstract pendingUpdateChanged(deviceId: string): Promise<void>;
}
