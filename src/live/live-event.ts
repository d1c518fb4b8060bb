/**
 * The console's live events (`GET .../products/{product_name}/events`): their names and the JSON each carries in
 * its `data:` line. Other features produce them through LiveEvents; streams render them as Server-Sent Events.
 * The names and payloads are a promise to the console's pages: add to them, never change them.
 */

export type ConnectionChange = 'connected' | 'disconnected';
export type LiveUpdateStatus = 'pending' | 'updating' | 'updated' | 'failed';

export interface DeviceConnectionData {
  identifier: string;
  connection_status: ConnectionChange;
  /** When the change was recorded (ISO 8601, UTC). */
  at: string;
}

export interface DeviceUpdateData {
  identifier: string;
  status: LiveUpdateStatus;
  /** Percentage reported by the device, when the report had one. */
  progress: number | null;
  /** The firmware the update installs, when known. */
  firmware_uuid: string | null;
}

/** The same fields as the deployment group API's `counts` (DeploymentCountsView). */
export interface GroupCounts {
  devices: number;
  updating: number;
  updated: number;
  failed: number;
  blocked: number;
}

export interface GroupCountsData {
  name: string;
  counts: GroupCounts;
}

export interface DeviceConsoleData {
  identifier: string;
  data: string;
}

export interface DeviceLogData {
  identifier: string;
  level: string;
  message: string;
  timestamp: string;
}

/** The overview's counters (FleetCountersView, as `GET .../overview` shows them). */
export interface ProductOverviewData {
  devices: { total: number; connected: number; disconnected: number; not_seen: number };
  firmware: {
    versions: { version: string; devices: number }[];
    other_devices: number;
    other_versions: number;
    unknown: number;
  };
  rollouts: {
    deployment_group: string;
    firmware_version: string | null;
    release_number: number | null;
    is_active: boolean;
    updating: number;
    concurrent_updates: number;
    paused_reason: string | null;
    paused_at: string | null;
  }[];
  manual_updates: number;
  health_alarms: { devices: number };
}

export interface StreamSkippedData {
  lines: number;
}

/**
 * One event, with what routes it: `product` (internal id) for every event; `device` (internal id) for the lines
 * that only a stream opened with `device=` receives. Statuses (connection, update, counts) coalesce per `key`
 * when a stream or the bus falls behind; lines (console, log) are dropped oldest first instead.
 */
export type LiveEvent =
  | { name: 'device.connection'; product: string; data: DeviceConnectionData }
  | { name: 'device.update'; product: string; data: DeviceUpdateData }
  | { name: 'deployment_group.counts'; product: string; data: GroupCountsData }
  /** Computed by each instance for its own streams (OverviewWatcher), never sent on the bus. */
  | { name: 'product.overview'; product: string; data: ProductOverviewData }
  | { name: 'device.console'; product: string; device: string; data: DeviceConsoleData }
  | { name: 'device.log'; product: string; device: string; data: DeviceLogData };

export type LiveEventName = LiveEvent['name'] | 'stream.skipped';

/** Events that replace an earlier one of the same key (the latest wins). */
export type StatusEvent = Extract<
  LiveEvent,
  { name: 'device.connection' | 'device.update' | 'deployment_group.counts' | 'product.overview' }
>;
/** Events that are lines of a device's output, kept in order and dropped oldest first. */
export type LineEvent = Extract<LiveEvent, { name: 'device.console' | 'device.log' }>;

export function isLine(event: LiveEvent): event is LineEvent {
  return event.name === 'device.console' || event.name === 'device.log';
}

/** The coalescing key of a status event: one per device and event, per deployment group, or per product. */
export function statusKey(event: StatusEvent): string {
  switch (event.name) {
    case 'deployment_group.counts':
      return `${event.name}\0${event.data.name}`;
    case 'product.overview':
      return `${event.name}\0${event.product}`;
    case 'device.connection':
    case 'device.update':
      return `${event.name}\0${event.data.identifier}`;
  }
}

/** The Server-Sent Events frame of an event: its name, and its payload as one line of JSON. */
export function sseFrame(name: LiveEventName, data: object): string {
  return `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`;
}
