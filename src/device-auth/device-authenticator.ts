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
 * failure (the caller answers 401 with an empty body); never throws for bad input. `receivedAt` (milliseconds
 * since the epoch, default now) is when the request arrived: a signature's age is judged at that time.
 */
export abstract class DeviceAuthenticator {
  abstract authenticate(
    headers: IncomingHttpHeaders,
    sourceAddress: string,
    receivedAt?: number,
  ): Promise<AuthenticatedDevice | null>;
}
