import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { OtherIdentityService } from './network-identity.entity';

/** A stored identity of the services other than iroh, as the API shows it. */
export interface NetworkIdentityRow {
  identifier: string;
  service: string;
  instance: string;
  details: Record<string, unknown>;
  last_reported_at: Date | null;
  inserted_at: Date;
  updated_at: Date;
}

/** The `network_identities` table (netbird, tailscale, wireguard). */
@Injectable()
export class NetworkIdentitiesRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * Records the device's key for a service and instance in one statement: a new row, or the device's row for that
   * instance refreshed (or moved to a rotated key). A key another row holds, anywhere, is the unique violation of
   * `network_identities_service_identifier_key`, left to the caller.
   */
  async upsertReported(identity: {
    orgId: string;
    deviceId: string;
    service: OtherIdentityService;
    instance: string;
    identifier: string;
    details: Record<string, unknown>;
  }): Promise<void> {
    await this.db.query(
      `INSERT INTO network_identities (org_id, device_id, service, instance, identifier, details, last_reported_at)
       VALUES ($1, $2, $3, $4, $5, $6, now())
       ON CONFLICT (device_id, service, instance) DO UPDATE
          SET identifier = EXCLUDED.identifier, details = EXCLUDED.details, org_id = EXCLUDED.org_id,
              last_reported_at = now(), updated_at = now()`,
      [
        identity.orgId,
        identity.deviceId,
        identity.service,
        identity.instance,
        identity.identifier,
        identity.details,
      ],
    );
  }

  /** The device's identities, optionally of one service and instance, by service then instance. */
  async listForDevice(
    deviceId: string,
    filter: { service?: string; instance?: string },
  ): Promise<NetworkIdentityRow[]> {
    return this.db.query<NetworkIdentityRow[]>(
      `SELECT identifier, service, instance, details, last_reported_at, inserted_at, updated_at
         FROM network_identities
        WHERE device_id = $1 AND ($2::text IS NULL OR service = $2) AND ($3::text IS NULL OR instance = $3)
        ORDER BY service, instance`,
      [deviceId, filter.service ?? null, filter.instance ?? null],
    );
  }
}
