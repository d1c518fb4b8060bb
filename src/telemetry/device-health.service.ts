import { Injectable } from '@nestjs/common';
import type { OrgAccess } from '../common/auth/actor';
import { isoOrNull } from '../common/values';
import { DeviceHealthRepository } from './device-health.repository';
import type { HealthMetricsQuery } from './dto/telemetry-queries';
import type { DeviceHealthView, HealthMetricView } from './dto/telemetry.views';
import { type PathDevice, TelemetryDevices } from './telemetry-devices';

/** A device's latest health report and location, and its metric history, as the API reads them. */
@Injectable()
export class DeviceHealthService {
  constructor(
    private readonly health: DeviceHealthRepository,
    private readonly devices: TelemetryDevices,
  ) {}

  async show(access: OrgAccess, path: PathDevice): Promise<{ data: DeviceHealthView }> {
    const device = await this.devices.resolve(access, path);
    const row = await this.health.find(device.id);
    return {
      data: {
        status: row?.status ?? 'unknown',
        status_reasons: row?.status_reasons ?? null,
        reported_at: isoOrNull(row?.reported_at),
        report: row?.report ?? null,
        location: row?.location ?? null,
        location_updated_at: isoOrNull(row?.location_updated_at),
      },
    };
  }

  async metrics(
    access: OrgAccess,
    path: PathDevice,
    query: HealthMetricsQuery,
  ): Promise<{ data: HealthMetricView[] }> {
    const device = await this.devices.resolve(access, path);
    const rows = await this.health.metrics(device.id, query);
    return {
      data: rows.map((row) => ({
        reported_at: row.reported_at.toISOString(),
        key: row.key,
        value: row.value,
      })),
    };
  }
}
