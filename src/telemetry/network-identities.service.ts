import { Injectable, Logger } from '@nestjs/common';
import type { OrgAccess } from '../common/auth/actor';
import { isUniqueViolation } from '../common/errors/postgres-errors';
import { isoOrNull } from '../common/values';
import { isPlainObject } from '../common/validation/validation.pipe';
import { checkDetails } from '../iroh/dto/iroh-fields';
import { IrohService } from '../iroh/iroh.service';
import type { NetworkIdentityView } from './dto/network-identity.view';
import type { NetworkIdentitiesQuery } from './dto/telemetry-queries';
import { NetworkIdentitiesRepository } from './network-identities.repository';
import { OTHER_IDENTITY_SERVICES, type OtherIdentityService } from './network-identity.entity';
import { type PathDevice, TelemetryDevices } from './telemetry-devices';
import { TelemetryMetrics } from './telemetry-metrics';

/** NervesHub processes at most this many entries of one report. */
export const MAX_REPORTED_IDENTITIES = 10;
const MAX_IDENTIFIER_LENGTH = 255;

export interface ReportingDevice {
  deviceId: string;
  identifier: string;
  orgId: string;
}

/**
 * Network identities: what devices report holding on netbird, tailscale and wireguard (iroh keys go through
 * IrohClaimsService, which also knows operator-registered keys), and the per-device list of all four.
 */
@Injectable()
export class NetworkIdentitiesService {
  private readonly logger = new Logger('DeviceTelemetry');

  constructor(
    private readonly identities: NetworkIdentitiesRepository,
    private readonly iroh: IrohService,
    private readonly devices: TelemetryDevices,
    private readonly metrics: TelemetryMetrics,
  ) {}

  /**
   * Applies the netbird, tailscale and wireguard entries of a `network_identity:report` (the first 10 entries of
   * the report count; iroh ones are handled elsewhere, unknown services are ignored). A key held by another
   * device, or by this device under another instance, is refused and logged; nothing else changes.
   */
  async reportDeviceIdentities(device: ReportingDevice, entries: readonly unknown[]): Promise<void> {
    for (const entry of entries.slice(0, MAX_REPORTED_IDENTITIES)) {
      if (!isPlainObject(entry)) continue;
      const service = entry.service;
      if (typeof service !== 'string' || !(OTHER_IDENTITY_SERVICES as readonly string[]).includes(service)) {
        continue;
      }
      const identifier = entry.identifier;
      const rawInstance = entry.instance;
      const instance =
        typeof rawInstance === 'string' && rawInstance.trim() !== '' ? rawInstance.trim() : 'default';
      if (
        typeof identifier !== 'string' ||
        identifier.length < 1 ||
        identifier.length > MAX_IDENTIFIER_LENGTH ||
        identifier.includes('\u0000') ||
        (rawInstance !== undefined && rawInstance !== null && typeof rawInstance !== 'string') ||
        instance.length > MAX_IDENTIFIER_LENGTH ||
        checkDetails(entry.details) !== null
      ) {
        this.logger.warn({ device: device.identifier, service }, 'malformed network identity skipped');
        this.metrics.droppedReport('network_identity', 'malformed');
        continue;
      }
      try {
        await this.identities.upsertReported({
          orgId: device.orgId,
          deviceId: device.deviceId,
          service: service as OtherIdentityService,
          instance,
          identifier,
          details: isPlainObject(entry.details) ? entry.details : {},
        });
      } catch (err) {
        if (!isUniqueViolation(err)) throw err;
        this.logger.warn(
          { device: device.identifier, service, instance, reason: 'claimed_elsewhere' },
          'network identity report refused',
        );
        this.metrics.droppedReport('network_identity', 'refused');
      }
    }
  }

  /**
   * `GET .../devices/{identifier}/network_identities`: the device's identities of every service, as NervesHub's
   * JSON, by service then instance. An unknown `service` is a 422 (NervesHub's choice: a typo must not read as
   * "every identity").
   */
  async list(
    access: OrgAccess,
    path: PathDevice,
    query: NetworkIdentitiesQuery,
  ): Promise<{ data: NetworkIdentityView[] }> {
    const device = await this.devices.resolve(access, path);
    const { service, instance } = query;
    const iroh =
      service === null || service === 'iroh' ? await this.iroh.listForDevice(device.id, instance) : [];
    const others =
      service === 'iroh'
        ? []
        : await this.identities.listForDevice(device.id, {
            service: service ?? undefined,
            instance: instance ?? undefined,
          });
    const data: NetworkIdentityView[] = [
      ...iroh.map((row) => ({
        identifier: row.identifier,
        service: row.service,
        instance: row.instance,
        source: row.source,
        details: row.details,
        last_reported_at: isoOrNull(row.last_reported_at),
        inserted_at: row.inserted_at.toISOString(),
        updated_at: row.updated_at.toISOString(),
      })),
      ...others.map((row) => ({
        identifier: row.identifier,
        service: row.service,
        instance: row.instance,
        source: 'device_reported',
        details: row.details,
        last_reported_at: isoOrNull(row.last_reported_at),
        inserted_at: row.inserted_at.toISOString(),
        updated_at: row.updated_at.toISOString(),
      })),
    ];
    return { data };
  }
}
