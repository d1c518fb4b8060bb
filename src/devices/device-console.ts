/**
 * How the API reaches a device's console. The device gateway implements it (src/gateway): `send` is false only
 * when no instance holds a console connection of the device, so code is never lost silently.
 */
export abstract class DeviceConsole {
  /** Sends code to the device's console; false when the device has no live console connection. */
  abstract send(deviceId: string, code: string): Promise<boolean>;
}

/** What a person can ask of a connected device's socket (NervesHub's device actions). */
export type DeviceCommand = 'reboot' | 'reconnect';

/**
 * How the API acts on a device's socket. The device gateway implements it: `run` is false only when no instance
 * holds a socket of the device able to take the command, so a command is never lost silently.
 */
export abstract class DeviceCommands {
  /**
   * `reboot`: NervesHubLink's `reboot` message on the device channel. `reconnect`: the socket is closed, and the
   * device connects again (to whichever instance the load balancer picks).
   */
  abstract run(deviceId: string, command: DeviceCommand): Promise<boolean>;

  /**
   * Closes the sockets of these devices wherever they are held (a bulk move: they connect again under their new
   * product); a device without a socket is skipped. Resolves once the requests are sent, not answered.
   */
  abstract reconnectMany(deviceIds: readonly string[]): Promise<void>;
}

/**
 * How the API runs a support script on a device (the gateway implements it, on whichever instance holds the
 * socket): the device's output, or null when no socket could run it or it did not answer within `timeoutMs`.
 */
export abstract class DeviceScripts {
  abstract run(deviceId: string, text: string, timeoutMs: number): Promise<string | null>;
}

/** How the API tells the device side that a device has a new pending update (pushed at once if connected). */
export abstract class UpdateNotifier {
  abstract pendingUpdateChanged(deviceId: string): Promise<void>;

  /** The same for many devices at once (a bulk upgrade): a few bus messages, not one per device. */
  abstract pendingUpdatesChanged(deviceIds: readonly string[]): Promise<void>;
}
