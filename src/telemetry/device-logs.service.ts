import { Injectable } from '@nestjs/common';
import type { OrgAccess } from '../common/auth/actor';
import { DeviceLogsRepository } from './device-logs.repository';
import { type DeviceLogsQuery, encodeLogCursor } from './dto/telemetry-queries';
import type { DeviceLogLineView, LogCursorView } from './dto/telemetry.views';
import { type PathDevice, TelemetryDevices } from './telemetry-devices';

/** A device's log lines as the API reads them. */
@Injectable()
export class DeviceLogsService {
  constructor(
    private readonly logs: DeviceLogsRepository,
    private readonly devices: TelemetryDevices,
  ) {}

  /** Newest first, filtered, one page; `next_cursor` continues after the page's last line. */
  async list(
    access: OrgAccess,
    path: PathDevice,
    query: DeviceLogsQuery,
  ): Promise<{ data: DeviceLogLineView[]; pagination: LogCursorView }> {
    const device = await this.devices.resolve(access, path);
    const rows = await this.logs.list({
      deviceId: device.id,
      from: query.from,
      to: query.to,
      levels: query.levels,
      search: query.search,
      before: query.cursor,
      limit: query.limit + 1,
    });
    const page = rows.slice(0, query.limit);
    const last = page.at(-1);
    return {
      data: page.map((row) => ({
        timestamp: row.logged_iso,
        level: row.level,
        message: row.message,
        meta: row.meta,
      })),
      pagination: {
        next_cursor: rows.length > query.limit && last ? encodeLogCursor(last.at_us, last.id) : null,
      },
    };
  }
}
