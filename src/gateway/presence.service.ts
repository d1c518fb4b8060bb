import { Injectable, Logger } from '@nestjs/common';
import { hostname } from 'node:os';
import { isRetryableConflict } from '../common/errors/postgres-errors';
import { Transactions } from '../database/transactions';
import { DeviceRecordsService } from '../devices/device-records.service';
import type { DisconnectedDevice } from '../devices/devices.repository';
import { LiveEvents } from '../live/live-events';
import { GatewayInstancesRepository } from './gateway-instances.repository';
import { GatewayPeers } from './gateway-peers';

/** How long an instance's lease lasts; it is renewed every LEASE_RENEW_MS. */
export const LEASE_MS = 30_000;
export const LEASE_RENEW_MS = 10_000;
/** `last_communication` is written at most this often per device. */
export const LAST_COMMUNICATION_INTERVAL_MS = 60_000;
export const FLUSH_MS = 10_000;
/** Disconnections are written together, at most this long after the socket closed. */
export const DISCONNECT_FLUSH_MS = 50;
/** A batch of disconnections that could not be written is tried again this much later. */
const DISCONNECT_RETRY_MS = 1000;
/** Devices per disconnection statement. */
const DISCONNECT_BATCH = 2000;
/** A presence write PostgreSQL aborted as a deadlock victim is run again, this many times in all. */
const WRITE_ATTEMPTS = 5;

/**
 * Device presence in the database: `connection_status`, `connected_instance_id`, `last_communication`, and this
 * instance's row in `gateway_instances` with its lease. Any instance reaps devices held by instances whose lease
 * ran out (a process that died without cleaning up).
 */
@Injectable()
export class PresenceService {
  private readonly logger = new Logger(PresenceService.name);
  /** Devices with activity not yet written, and when it happened. */
  private readonly dirty = new Map<string, Date>();
  /** When `last_communication` was last written for each device held here. */
  private readonly written = new Map<string, number>();
  private timers: NodeJS.Timeout[] = [];
  /** Set by `stop`: no write is scheduled again after it (its own last writes are the final word). */
  private stopped = false;
  /** Devices whose socket here closed, not yet written, and the promise of the write that will take them. */
  private leaving = new Set<string>();
  private leavingWrite: Promise<void> | null = null;
  /** The disconnections being written now, and those of them whose device joined here again meanwhile. */
  private leavingInFlight = new Set<string>();
  private rejoinedInFlight = new Set<string>();
  private instanceId = '';
  private localDevices: () => string[] = () => [];

  constructor(
    private readonly devices: DeviceRecordsService,
    private readonly instances: GatewayInstancesRepository,
    private readonly transactions: Transactions,
    private readonly peers: GatewayPeers,
    private readonly live: LiveEvents,
  ) {}

  /** Registers the instance and starts the lease, reaper and flush timers. */
  async start(instanceId: string, localDevices: () => string[]): Promise<void> {
    this.instanceId = instanceId;
    this.localDevices = localDevices;
    await this.renewLease();
    await this.reap();
    const every = (ms: number, task: () => Promise<unknown>) => {
      const timer = setInterval(() => {
        task().catch((err: unknown) => this.logger.warn({ err }, 'presence task failed'));
      }, ms);
      timer.unref();
      this.timers.push(timer);
    };
    every(LEASE_RENEW_MS, async () => {
      await this.renewLease();
      await this.reap();
    });
    every(FLUSH_MS, () => this.flush());
  }

  /** Writes what is pending, marks every device held here disconnected and removes the instance row. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const timer of this.timers) clearInterval(timer);
    this.timers = [];
    if (!this.instanceId) return;
    await this.leavingWrite?.catch(() => undefined);
    // What these fail to write, the statement after them writes: every device held here becomes disconnected.
    await this.flushDisconnected().catch(() => undefined);
    await this.flush().catch(() => undefined);
    this.announce(await this.devices.disconnectAllHeldBy(this.instanceId, this.live.wantedProducts()));
    await this.instances.delete(this.instanceId);
  }

  /** The device joined its `device` channel on this instance. */
  async connected(deviceId: string): Promise<void> {
    this.dirty.delete(deviceId);
    this.written.set(deviceId, Date.now());
    await this.devices.markConnected(deviceId, this.instanceId);
  }

  /**
   * The device's socket on this instance closed. Nothing changes when another instance holds the device by
   * now (a newer connection took over), nor when the device joined here again before the write (`joined`).
   * Disconnections are written in batches (one statement per DISCONNECT_FLUSH_MS, not one per socket: a
   * reconnect storm closes thousands at once); the promise resolves once this one is written.
   */
  disconnected(deviceId: string): Promise<void> {
    this.dirty.delete(deviceId);
    this.written.delete(deviceId);
    this.leaving.add(deviceId);
    this.leavingWrite ??= new Promise<void>((resolve, reject) => {
      setTimeout(() => {
        this.flushDisconnected().then(resolve, reject);
      }, DISCONNECT_FLUSH_MS).unref();
    });
    return this.leavingWrite;
  }

  /**
   * The device is joining its `device` channel here (its join's write is about to run): a pending disconnection of
   * it (an earlier socket) is not written, and one being written now is followed by a connection again. Called
   * before the write, not after it: the join does more after its write (the deployment group's check), and a
   * disconnection written meanwhile would otherwise leave a connected device marked disconnected.
   */
  joining(deviceId: string): void {
    this.leaving.delete(deviceId);
    if (this.leavingInFlight.has(deviceId)) this.rejoinedInFlight.add(deviceId);
  }

  /**
   * The device joined its `device` channel here, and the join wrote `last_communication`: activity is written
   * again a minute from now (`touch`), and a pending disconnection of it (an earlier socket) is not written.
   */
  joined(deviceId: string): void {
    this.joining(deviceId);
    this.written.set(deviceId, Date.now());
  }

  /**
   * Writes the pending disconnections now. A batch that still fails goes back to the queue (without the devices
   * that joined here again meanwhile) for the next write: a device must never stay marked connected.
   */
  async flushDisconnected(): Promise<void> {
    this.leavingWrite = null;
    const ids = [...this.leaving];
    this.leaving = new Set();
    for (let i = 0; i < ids.length; i += DISCONNECT_BATCH) {
      const batch = ids.slice(i, i + DISCONNECT_BATCH);
      try {
        // Rows are locked in id order, as the activity flush locks them, so that the two never deadlock.
        this.leavingInFlight = new Set(batch);
        await this.write(async () =>
          this.announce(await this.devices.markDisconnected(batch, this.instanceId)),
        );
        // A device that joined here again while this was written may have had its join written first: connected
        // again (its join's write and this one reached PostgreSQL in either order).
        const rejoined = [...this.rejoinedInFlight];
        this.leavingInFlight = new Set();
        this.rejoinedInFlight = new Set();
        if (rejoined.length > 0)
          await this.write(() => this.devices.markConnectedAgain(rejoined, this.instanceId));
      } catch (err) {
        this.leavingInFlight = new Set();
        this.rejoinedInFlight = new Set();
        for (const id of ids.slice(i)) if (!this.written.has(id)) this.leaving.add(id);
        if (this.leaving.size > 0) void this.disconnectedAgain();
        throw err;
      }
    }
  }

  /** Schedules the next write of the queued disconnections (after a failed one), logging its failure. */
  private disconnectedAgain(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.leavingWrite ??= new Promise<void>((resolve) => {
      setTimeout(() => {
        this.flushDisconnected().then(resolve, (err: unknown) => {
          this.logger.warn({ err }, 'writing device disconnections failed; will try again');
          resolve();
        });
      }, DISCONNECT_RETRY_MS).unref();
    });
    return this.leavingWrite;
  }

  /**
   * One statement, run again when PostgreSQL aborted it to break a deadlock or a serialization conflict (another
   * instance's reaper or flush over the same rows): the work is idempotent.
   */
  private async write(statement: () => Promise<void>): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      try {
        await statement();
        return;
      } catch (err) {
        if (!isRetryableConflict(err) || attempt >= WRITE_ATTEMPTS) throw err;
        await new Promise((resolve) => setTimeout(resolve, 10 * attempt + Math.random() * 40));
      }
    }
  }

  /** Any inbound frame: activity, written in the next flush if the last write is a minute old. */
  touch(deviceId: string): void {
    const now = Date.now();
    const last = this.written.get(deviceId);
    if (last === undefined || now - last < LAST_COMMUNICATION_INTERVAL_MS) return;
    this.dirty.set(deviceId, new Date(now));
  }

  /** One statement for every device with activity to record. */
  async flush(): Promise<void> {
    if (this.dirty.size === 0) return;
    const entries = [...this.dirty.entries()];
    this.dirty.clear();
    for (const [deviceId, at] of entries) this.written.set(deviceId, at.getTime());
    const ids = entries.map(([id]) => id);
    const ats = entries.map(([, at]) => at.toISOString());
    await this.write(() => this.devices.recordActivity(ids, ats, this.instanceId));
  }

  /**
   * Extends this instance's lease. When the row was gone (the process stalled long enough to be reaped), it is
   * created again and the devices still connected here are marked connected again.
   */
  async renewLease(): Promise<void> {
    const { inserted, others } = await this.instances.renewLease(
      this.instanceId,
      hostname().slice(0, 255),
      LEASE_MS / 1000,
    );
    this.peers.counted(others);
    if (inserted) {
      const devices = this.localDevices();
      if (devices.length > 0) await this.devices.markConnectedAgain(devices, this.instanceId);
    }
  }

  /** Devices held by instances whose lease ran out become disconnected; those instance rows go. */
  async reap(): Promise<number> {
    const { reaped, watched } = await this.transactions.run(async (tx) => {
      const disconnected = await this.devices.disconnectFromExpiredInstances(tx, this.live.wantedProducts());
      await this.instances.deleteExpired(tx);
      return disconnected;
    });
    this.announce(watched);
    return reaped;
  }

  /** The console's live events of disconnections just recorded (only those the database really changed). */
  private announce(disconnected: readonly DisconnectedDevice[] | undefined): void {
    const at = new Date();
    for (const row of disconnected ?? []) {
      this.live.deviceConnection(
        { productId: row.product_id, identifier: row.identifier },
        'disconnected',
        at,
      );
    }
  }
}
