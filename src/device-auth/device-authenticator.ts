import type { IncomingHttpHeaders } from 'node:http';

/** The device a websocket upgrade request authenticated as. */
export interface AuthenticatedDevice {
  deviceId: string;
  identifier: string;
  productId: string;
  orgId: string;
  /** True when a product key registered the device on this very connection. */
  registered: boolean;
}

/**
 * Authenticates a device's websocket upgrade request (NH1 shared-secret headers). Resolves to null for every
 * failure (the caller answers 401 with an empty body); never throws for bad input.
 */
export abstract class DeviceAuthenticator {
  abstract authenticate(
    headers: IncomingHttpHeaders,
    sourceAddress: string,
  ): Promise<AuthenticatedDevice | null>;
}
