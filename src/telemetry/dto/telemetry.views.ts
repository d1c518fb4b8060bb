import { ApiProperty } from '@nestjs/swagger';
import { HEALTH_STATUSES } from '../device-health.entity';
import { LOG_LEVELS } from '../report-payloads';

export class DeviceLogLineView {
  @ApiProperty({
    example: '2026-11-27T08:15:02.123456Z',
    description:
      "The device's time for the line (the time it arrived when the device gave none, or an implausible one)",
  })
  timestamp: string;

  @ApiProperty({ enum: LOG_LEVELS, example: 'error' }) level: string;
  @ApiProperty({ example: 'wifi: association failed' }) message: string;

  @ApiProperty({ type: 'object', additionalProperties: true, example: { application: 'vintage_net' } })
  meta: Record<string, unknown>;
}

export class LogCursorView {
  @ApiProperty({
    type: String,
    nullable: true,
    example: 'MTc5NTc2NTU2OTE5NTAwMC40Mg',
    description: 'Give as `cursor` for the next (older) page; null on the last page',
  })
  next_cursor: string | null;
}

export class DeviceHealthView {
  @ApiProperty({
    enum: HEALTH_STATUSES,
    example: 'healthy',
    description: "From the latest report, with NervesHub's thresholds; `unknown` before any report",
  })
  status: string;

  @ApiProperty({
    type: 'object',
    nullable: true,
    additionalProperties: true,
    example: { warning: { mem_used_percent: { value: 74, threshold: 70 } }, unhealthy: {} },
    description: 'Metrics past a threshold, when the status is `warning` or `unhealthy`',
  })
  status_reasons: Record<string, unknown> | null;

  @ApiProperty({ type: String, format: 'date-time', nullable: true }) reported_at: string | null;

  @ApiProperty({
    type: 'object',
    nullable: true,
    additionalProperties: true,
    description:
      'The latest `health:report` value as sent: timestamp, metadata, alarms, metrics, checks, connectivity',
    example: {
      timestamp: '2026-11-27T08:00:00Z',
      metadata: {},
      alarms: {},
      metrics: { cpu_temp: 48.2, mem_used_percent: 41 },
      checks: {},
      connectivity: {},
    },
  })
  report: Record<string, unknown> | null;

  @ApiProperty({
    type: 'object',
    nullable: true,
    additionalProperties: true,
    description:
      'The latest `geo:location:update` as sent: a location, or `error_code` and `error_description`',
    example: { source: 'geoip', latitude: 48.85, longitude: 2.35 },
  })
  location: Record<string, unknown> | null;

  @ApiProperty({ type: String, format: 'date-time', nullable: true }) location_updated_at: string | null;
}

export class HealthMetricView {
  @ApiProperty({ format: 'date-time' }) reported_at: string;
  @ApiProperty({ example: 'cpu_temp' }) key: string;
  @ApiProperty({ example: 48.2 }) value: number;
}
