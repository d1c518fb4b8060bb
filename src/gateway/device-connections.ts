import { Injectable } from '@nestjs/common';
import type { DeviceConnection } from './device-connection';

/** The device sockets this instance holds, and the newest one of each device. */
@Injectable()
export class DeviceConnections {
  private readonly all = new Set<DeviceConnection>();
  private readonly byDevice = new Map<string, DeviceConnection>();
  /** Set once the instance stops: no new socket, no new background work. */
  shuttingDown = false;

  get size(): number {
    return this.all.size;
  }

  /** Adds a new connection as its device's newest; returns the one it replaces, if any. */
  add(conn: DeviceConnection): DeviceConnection | undefined {
    this.all.add(conn);
    const previous = this.byDevice.get(conn.deviceId);
    this.byDevice.set(conn.deviceId, conn);
    return previous;
  }

  /** Forgets a closed connection; true when it was its device's newest (the device is now gone from here). */
  remove(conn: DeviceConnection): boolean {
    this.all.delete(conn);
    if (this.byDevice.get(conn.deviceId) !== conn) return false;
    this.byDevice.delete(conn.deviceId);
    return true;
  }

  /** The device's newest connection here. */
  of(deviceId: string): DeviceConnection | undefined {
    return this.byDevice.get(deviceId);
  }

  /** Devices whose `device` channel is joined here. */
  joinedDevices(): string[] {
    return [...this.byDevice.values()].filter((c) => c.topics.has('device')).map((c) => c.deviceId);
  }

  [Symbol.iterator](): IterableIterator<DeviceConnection> {
    return this.all.values();
  }
}
