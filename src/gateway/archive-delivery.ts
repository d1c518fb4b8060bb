import { Injectable, Logger } from '@nestjs/common';
import semver from 'semver';
import {
  ARCHIVES_CHANNEL,
  ArchiveRecordsService,
  type AttachedArchiveRow,
  parseArchivesChange,
  type ArchivesChange,
} from '../archives/archive-records.service';
import { InstanceBus } from '../database/instance-bus/instance-bus';
import { DeploymentMembershipService } from '../deployments/deployment-membership.service';
import { DeviceRecordsService } from '../devices/device-records.service';
import { ArchiveDownloads } from './archive-downloads';
import { type DeviceConnection, GATEWAY_LOG_CONTEXT } from './device-connection';
import { DeviceConnections } from './device-connections';

/** Devices asked about in one statement when an attachment changes. */
const DEVICES_PER_QUERY = 5000;

/** NervesHub sends archives to devices of API 2.0.0 and later. */
const MIN_DEVICE_API = '2.0.0';

/**
 * The `archive` message (device-protocol.md 3.2) with NervesHub's keys: `uploaded_at` as Ecto's naive datetime
 * (seconds, no zone), `url` a link the device downloads the file from.
 */
export function archivePayload(archive: AttachedArchiveRow, url: string): Record<string, unknown> {
  return {
    size: Number(archive.size),
    uuid: archive.uuid,
    version: archive.version,
    description: archive.description,
    platform: archive.platform,
    architecture: archive.architecture,
    uploaded_at: archive.inserted_at.toISOString().slice(0, 19),
    url,
  };
}

/**
 * Sends devices the archive of their deployment group, as NervesHub does: after the `device` join, and when the
 * group's archive changes (an attachment on any instance reaches every instance through the instance bus; each
 * sends it to the group's devices it holds). Only to devices of API 2.0.0 or later, with updates enabled and not
 * in the penalty box.
 *
 * Every instance keeps the attachments in memory (one row per group that has an archive), reloaded on each change
 * and whenever its bus listener (re)connects: a join of a device whose product has no attached archive costs no
 * query at all, one whose product has costs two (its group, whether it takes updates).
 */
@Injectable()
export class ArchiveDelivery {
  private readonly logger = new Logger(GATEWAY_LOG_CONTEXT);
  /** Group id → its archive; null until loaded (or after a failed load). */
  private byGroup: Map<string, AttachedArchiveRow> | null = null;
  private products = new Set<string>();
  /** The load waiting for the running one (several changes meanwhile share it). */
  private queued: Promise<void> | null = null;
  private running: Promise<void> = Promise.resolve();
  /** Connections whose device joined with an API that takes archives. */
  private readonly capable = new WeakSet<DeviceConnection>();

  constructor(
    bus: InstanceBus,
    private readonly records: ArchiveRecordsService,
    private readonly membership: DeploymentMembershipService,
    private readonly devices: DeviceRecordsService,
    private readonly downloads: ArchiveDownloads,
    private readonly connections: DeviceConnections,
  ) {
    bus.subscribe(ARCHIVES_CHANNEL, (payload) => {
      const change = parseArchivesChange(payload);
      if (change) {
        this.changed(change).catch((err: unknown) =>
          this.logger.warn({ err, group: change.group }, 'archive not sent to the group'),
        );
      }
    });
    // Changes published while the listener was away were not heard: read them all again.
    bus.onStateChange((listening) => {
      if (listening) this.reload().catch((err: unknown) => this.logger.warn({ err }, 'archives not loaded'));
    });
  }

  /** After a `device` join: the archive of the device's group, if it has one and the device takes it. */
  async joined(conn: DeviceConnection, deviceApiVersion: string): Promise<void> {
    if (!semver.valid(deviceApiVersion) || semver.lt(deviceApiVersion, MIN_DEVICE_API)) return;
    this.capable.add(conn);
    try {
      if (this.byGroup === null) await this.reload();
      if (!this.products.has(conn.device.productId)) return;
      // In the join's own turn: the archive comes before `extensions:get`, as NervesHub sends them.
      await this.send([conn], undefined, true);
    } catch (err) {
      // The join stands; the archive comes with the next connection or change.
      this.logger.warn({ err, device: conn.device.identifier }, 'archive not sent on join');
    }
  }

  /** An attachment changed somewhere: reload, then send the group's archive to its devices held here. */
  private async changed(change: ArchivesChange): Promise<void> {
    await this.reload();
    if (!this.byGroup?.has(change.group)) return;
    const held: DeviceConnection[] = [];
    for (const conn of this.connections) {
      if (
        conn.device.productId === change.product &&
        this.capable.has(conn) &&
        conn.topics.has('device') &&
        this.connections.of(conn.deviceId) === conn
      ) {
        held.push(conn);
      }
    }
    for (let i = 0; i < held.length; i += DEVICES_PER_QUERY) {
      await this.send(held.slice(i, i + DEVICES_PER_QUERY), change.group);
    }
  }

  /**
   * Pushes each connection its group's archive (only `group`'s, when given), if it takes updates: at once when
   * called in the connection's turn (`inTurn`), else queued behind the frames it is handling.
   */
  private async send(conns: readonly DeviceConnection[], group?: string, inTurn = false): Promise<void> {
    const groups = await this.membership.groupsOf(conns.map((conn) => conn.deviceId));
    const due = conns.filter((conn) => {
      const of = groups.get(conn.deviceId);
      return of !== undefined && (group === undefined || of === group) && this.byGroup?.has(of);
    });
    if (due.length === 0) return;
    const taking = await this.devices.takingUpdates(due.map((conn) => conn.deviceId));
    const payloads = new Map<string, Record<string, unknown>>();
    for (const conn of due) {
      const archive = this.byGroup?.get(groups.get(conn.deviceId)!);
      if (!archive || !taking.has(conn.deviceId)) continue;
      let payload = payloads.get(archive.id);
      if (!payload) {
        payload = archivePayload(archive, await this.downloads.url(archive));
        payloads.set(archive.id, payload);
      }
      const message = payload;
      if (inTurn) conn.push('device', 'archive', message);
      else {
        void conn.enqueue(async () => {
          if (conn.topics.has('device')) conn.push('device', 'archive', message);
        });
      }
    }
  }

  /** Reads every attachment again, after the load in progress (calls meanwhile share one load). */
  private reload(): Promise<void> {
    if (this.queued) return this.queued;
    const next = this.running
      .catch(() => undefined)
      .then(async () => {
        this.queued = null;
        await this.load();
      });
    this.queued = next;
    this.running = next;
    return next;
  }

  private async load(): Promise<void> {
    try {
      const rows = await this.records.allAttached();
      this.byGroup = new Map(rows.map((row) => [row.deployment_group_id, row]));
      this.products = new Set(rows.map((row) => row.product_id));
    } catch (err) {
      this.byGroup = null;
      throw err;
    }
  }
}
