import { ApiProperty, getSchemaPath } from '@nestjs/swagger';
import type { Type } from '@nestjs/common';
import { DeploymentCountsView } from '../../deployments/dto/deployment-group.dto';
import { FleetCountersView } from '../../overview/dto/fleet-overview.view';

/** `device.connection`: a device of the product connected or disconnected. */
export class DeviceConnectionEventData {
  @ApiProperty({ example: 'gw-0001' }) identifier: string;
  @ApiProperty({ enum: ['connected', 'disconnected'] }) connection_status: 'connected' | 'disconnected';
  @ApiProperty({ example: '2026-11-22T03:04:05.123Z', description: 'When the change was recorded' })
  at: string;
}

/** `device.update`: a device's firmware update moved on. */
export class DeviceUpdateEventData {
  @ApiProperty({ example: 'gw-0001' }) identifier: string;
  @ApiProperty({
    enum: ['pending', 'updating', 'updated', 'failed'],
    description:
      '`pending`: requested or sent to the device; `updating`: the device reports it downloading or applying; ' +
      '`updated`: the device came back running the new firmware; `failed`: the device reported a failure',
  })
  status: 'pending' | 'updating' | 'updated' | 'failed';
  @ApiProperty({
    type: Number,
    nullable: true,
    minimum: 0,
    maximum: 100,
    description: "The device's reported percentage; null when the report had none",
  })
  progress: number | null;
  @ApiProperty({ type: String, nullable: true, description: 'The firmware being installed, when known' })
  firmware_uuid: string | null;
}

/** `deployment_group.counts`: a deployment group's counts changed. */
export class DeploymentGroupCountsEventData {
  @ApiProperty({ example: 'production' }) name: string;
  @ApiProperty({ type: DeploymentCountsView, description: 'As the deployment group API shows them' })
  counts: DeploymentCountsView;
}

/** `device.console`: output the device printed on its console (with `device=`). */
export class DeviceConsoleEventData {
  @ApiProperty({ example: 'gw-0001' }) identifier: string;
  @ApiProperty({ example: 'iex(1)> ', description: 'Output as it came (a piece of a longer output, maybe)' })
  data: string;
}

/** `device.log`: a log line the device sent (with `device=`). */
export class DeviceLogEventData {
  @ApiProperty({ example: 'gw-0001' }) identifier: string;
  @ApiProperty({ example: 'info' }) level: string;
  @ApiProperty({
    example: 'vintage_net: wlan0 connected',
    description: 'The message as stored; one longer than a live event can carry (about 7 KB) ends with `…`',
  })
  message: string;
  @ApiProperty({ example: '2026-11-22T03:04:05.123Z' }) timestamp: string;
}

/** `stream.skipped`: lines dropped because the client (or the server) did not keep up. */
export class StreamSkippedEventData {
  @ApiProperty({ minimum: 1, description: 'How many console or log lines were dropped here' }) lines: number;
}

/** Each event name and its payload, in the order the OpenAPI document lists them. */
export const LIVE_EVENT_PAYLOADS: [name: string, type: Type<unknown>, description: string][] = [
  ['device.connection', DeviceConnectionEventData, 'every device of the product'],
  ['device.update', DeviceUpdateEventData, "update progress of the product's devices"],
  [
    'deployment_group.counts',
    DeploymentGroupCountsEventData,
    "a group's counts when they change (at most a few a second per group; the current ones right after opening)",
  ],
  [
    'product.overview',
    FleetCountersView,
    "with `overview=true`: the fleet overview's counters when they change (at most about once a second; the " +
      'current ones right after opening)',
  ],
  ['device.console', DeviceConsoleEventData, "with `device=`: that device's console output as it comes"],
  ['device.log', DeviceLogEventData, "with `device=`: that device's log lines as they come"],
  ['stream.skipped', StreamSkippedEventData, 'console or log lines dropped for a client that fell behind'],
];

/** The stream's schema: one message per event, `event:` its name and `data:` its payload (one line of JSON). */
export const LIVE_EVENT_STREAM_SCHEMA = {
  oneOf: LIVE_EVENT_PAYLOADS.map(([name, type, description]) => ({
    type: 'object',
    description: `\`${name}\`: ${description}`,
    required: ['event', 'data'],
    properties: {
      event: { type: 'string', enum: [name] },
      data: { $ref: getSchemaPath(type) },
    },
  })),
};
