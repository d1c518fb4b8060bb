import { ApiProperty } from '@nestjs/swagger';

export class ConnectionTotalsView {
  @ApiProperty({ example: 1000000, description: 'Every device of the product' }) total: number;
  @ApiProperty({ example: 612345 }) connected: number;
  @ApiProperty({ example: 380000, description: 'Seen before, not connected now' }) disconnected: number;
  @ApiProperty({ example: 7655, description: 'Never connected' }) not_seen: number;
}

export class ConnectionSampleView {
  @ApiProperty({ example: '2026-11-22T03:04:00.000Z', description: 'Start of the interval' }) at: string;
  @ApiProperty({ example: 611980, description: 'Connected devices, averaged over the interval' })
  connected: number;
  @ApiProperty({ example: 1000000, description: 'Devices of the product (the most in the interval)' })
  total: number;
}

export class ConnectionHistoryView {
  @ApiProperty({
    example: '2026-11-21T03:05:00.000Z',
    description: 'The start of the range asked (`hours` ago)',
  })
  from: string;
  @ApiProperty({ example: 240, description: 'Seconds each point covers (samples are taken once a minute)' })
  interval_seconds: number;
  @ApiProperty({
    type: [ConnectionSampleView],
    description:
      'Oldest first; an interval without a sample (no instance was running, or the product had no device) has ' +
      'no point',
  })
  points: ConnectionSampleView[];
}

export class FirmwareVersionCountView {
  @ApiProperty({ example: '1.4.2' }) version: string;
  @ApiProperty({ example: 512000 }) devices: number;
}

export class FirmwareDistributionView {
  @ApiProperty({
    type: [FirmwareVersionCountView],
    description: 'The most common versions (at most 12), the most devices first, ties by version',
  })
  versions: FirmwareVersionCountView[];
  @ApiProperty({ example: 3, description: 'Devices on the versions not listed' }) other_devices: number;
  @ApiProperty({ example: 2, description: 'How many versions are not listed' }) other_versions: number;
  @ApiProperty({ example: 7655, description: 'Devices that have not reported a firmware version' })
  unknown: number;
}

export class RolloutView {
  @ApiProperty({ example: 'production' }) deployment_group: string;
  @ApiProperty({ type: String, nullable: true, example: '1.4.2' }) firmware_version: string | null;
  @ApiProperty({ type: Number, nullable: true, example: 3 }) release_number: number | null;
  @ApiProperty({ example: true }) is_active: boolean;
  @ApiProperty({ example: 10, description: 'Updates in flight (sent, not finished)' }) updating: number;
  @ApiProperty({ example: 10, description: 'The most updates the group has in flight at once' })
  concurrent_updates: number;
  @ApiProperty({
    type: String,
    nullable: true,
    example: null,
    description: 'Why the group paused itself (its failure threshold), or null',
  })
  paused_reason: string | null;
  @ApiProperty({ type: String, nullable: true, example: null }) paused_at: string | null;
}

export class AlarmedDeviceView {
  @ApiProperty({ example: 'nerves-1234' }) identifier: string;
  @ApiProperty({ example: 2, description: 'Alarms active in its latest health report' }) alarm_count: number;
  @ApiProperty({ enum: ['healthy', 'warning', 'unhealthy', 'unknown'], example: 'warning' }) status: string;
}

export class HealthAlarmsView {
  @ApiProperty({ example: 42, description: 'Devices whose latest health report has an active alarm' })
  devices: number;
  @ApiProperty({
    type: [AlarmedDeviceView],
    description: 'The first of them (at most 10), the most alarms first, ties by identifier',
  })
  first: AlarmedDeviceView[];
}

export class FleetOverviewView {
  @ApiProperty({ type: ConnectionTotalsView }) devices: ConnectionTotalsView;
  @ApiProperty({ type: ConnectionHistoryView }) connected_history: ConnectionHistoryView;
  @ApiProperty({ type: FirmwareDistributionView }) firmware: FirmwareDistributionView;
  @ApiProperty({
    type: [RolloutView],
    description: 'Deployment groups with updates in flight, or paused by their failure threshold; by name',
  })
  rollouts: RolloutView[];
  @ApiProperty({ example: 0, description: 'Manual upgrades in flight (not from a deployment group)' })
  manual_updates: number;
  @ApiProperty({ type: HealthAlarmsView }) health_alarms: HealthAlarmsView;
}

export class HealthAlarmCountView {
  @ApiProperty({ example: 42, description: 'Devices whose latest health report has an active alarm' })
  devices: number;
}

/**
 * The live `product.overview` event (`GET .../events?overview=true`): the overview's numbers that change as the
 * fleet does, without the history and without naming alarmed devices (the overview call has both).
 */
export class FleetCountersView {
  @ApiProperty({ type: ConnectionTotalsView }) devices: ConnectionTotalsView;
  @ApiProperty({ type: FirmwareDistributionView }) firmware: FirmwareDistributionView;
  @ApiProperty({
    type: [RolloutView],
    description: 'Deployment groups with updates in flight, or paused by their failure threshold; by name',
  })
  rollouts: RolloutView[];
  @ApiProperty({ example: 0, description: 'Manual upgrades in flight (not from a deployment group)' })
  manual_updates: number;
  @ApiProperty({ type: HealthAlarmCountView }) health_alarms: HealthAlarmCountView;
}
