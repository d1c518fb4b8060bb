import type { IncomingHttpHeaders } from 'node:http';
import type { DataSource } from 'typeorm';
import { type AuthenticatedDevice, DeviceAuthenticator } from '../../src/device-auth/device-authenticator';

/**
 * Device authentication for socket tests: `x-test-device: <identifier>` names an existing device (looked up in
 * `db`); anything else is refused.
 */
export class FakeAuthenticator extends DeviceAuthenticator {
  db: DataSource | null = null;

  async authenticate(headers: IncomingHttpHeaders): Promise<AuthenticatedDevice | null> {
    const identifier = headers['x-test-device'];
    if (typeof identifier !== 'string' || !this.db) return null;
    const [row] = await this.db.query<{ id: string; product_id: string; org_id: string }[]>(
      `SELECT id, product_id, org_id FROM devices WHERE identifier = $1`,
      [identifier],
    );
    if (!row) return null;
    return { deviceId: row.id, identifier, productId: row.product_id, orgId: row.org_id, registered: false };
  }
}
