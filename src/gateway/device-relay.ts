import { Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { WebSocket } from 'ws';
import { ConsoleChannel } from './channels/console';
import { DeviceChannel } from './channels/device';
import { DeviceBus, type DeviceBusEnvelope } from './device-bus';
import { GATEWAY_LOG_CONTEXT } from './device-connection';
import { DeviceConnections } from './device-connections';
import { DeviceLinkService } from './device-link.service';
import { codePoints } from './phoenix-frames';
import type { DeviceCommand } from '../devices/device-console';

/** Devices per `closes` bus message (ids of at most 20 digits: well under the NOTIFY limit). */
export const CLOSES_PER_MESSAGE = 200;
/** Code points of console code per bus message (JSON escapes stay well below the NOTIFY limit). */
const CONSOLE_CHUNK = 1000;
/** How long a request to the instance holding a device's socket waits for its answer. */
const RELAY_ACK_TIMEOUT_MS = 5000;

/**
 * Reaches a device on whichever instance holds its socket, through the DeviceBus: pending updates and console
 * code are delivered here when the socket is here, else sent to the other instances; a new socket closes the
 * device's older sockets everywhere. Also the receiving side of those messages.
 */
@Injectable()
export class DeviceRelay {
  private readonly logger = new Logger(GATEWAY_LOG_CONTEXT);
  private readonly consoleParts = new Map<
    string,
    { parts: string[]; received: number; timer: NodeJS.Timeout }
  >();
  /** Requests sent to other instances (console code, commands), waiting for their answer. */
  private readonly waiters = new Map<string, (ok: boolean) => void>();
  /** Devices that connected here, for the next `closes` bus message. */
  private readonly closes = new Set<string>();
  private closesSending = false;

  constructor(
    private readonly bus: DeviceBus,
    private readonly connections: DeviceConnections,
    private readonly link: DeviceLinkService,
    private readonly device: DeviceChannel,
    private readonly console: ConsoleChannel,
  ) {}

  get instanceId(): string {
    return this.bus.instanceId;
  }

  /** Starts receiving the other instances' messages. */
  start(): void {
    this.bus.onMessage((envelope) => this.onBus(envelope));
  }

  /** Drops console code still being received. */
  stop(): void {
    for (const { timer } of this.consoleParts.values()) clearTimeout(timer);
    this.consoleParts.clear();
  }

  /** Sends console code to the device's console on whichever instance holds it; false when nobody does. */
  async sendConsole(deviceId: string, code: string): Promise<boolean> {
    if (this.console.sendHere(deviceId, code)) return true;
    const holder = await this.link.holder(deviceId);
    if (holder === null || holder === this.instanceId) return false;
    const request = randomUUID();
    const points = codePoints(code);
    const chunks: string[] = [];
    for (let i = 0; i < points.length || chunks.length === 0; i += CONSOLE_CHUNK) {
      chunks.push(points.slice(i, i + CONSOLE_CHUNK).join(''));
    }
    const answer = this.answerTo(request);
    try {
      for (const [part, data] of chunks.entries()) {
        await this.bus.publish(deviceId, {
          kind: 'console',
          to: holder,
          request,
          part,
          parts: chunks.length,
          data,
        });
      }
    } catch (err) {
      this.waiters.get(request)?.(false);
      throw err;
    }
    return answer;
  }

  /** Runs a command on the device's socket on whichever instance holds it; false when nobody holds one. */
  async command(deviceId: string, command: DeviceCommand): Promise<boolean> {
    if (this.commandHere(deviceId, command)) return true;
    const holder = await this.link.holder(deviceId);
    if (holder === null || holder === this.instanceId) return false;
    const request = randomUUID();
    const answer = this.answerTo(request);
    try {
      await this.bus.publish(deviceId, { kind: 'command', to: holder, request, command });
    } catch (err) {
      this.waiters.get(request)?.(false);
      throw err;
    }
    return answer;
  }

  /** `reboot` needs the device channel joined (NervesHubLink listens there); `reconnect` any open socket. */
  private commandHere(deviceId: string, command: DeviceCommand): boolean {
    const conn = this.connections.of(deviceId);
    if (!conn || conn.ws.readyState !== WebSocket.OPEN) return false;
    if (command === 'reboot') {
      if (!conn.topics.has('device')) return false;
      conn.push('device', 'reboot', {});
      return true;
    }
    void conn.close(1000, 'reconnect requested');
    return true;
  }

  /** The answer of another instance to `request` (false when none comes in time). */
  private answerTo(request: string): Promise<boolean> {
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        this.waiters.delete(request);
        resolve(false);
      }, RELAY_ACK_TIMEOUT_MS);
      this.waiters.set(request, (ok) => {
        clearTimeout(timer);
        this.waiters.delete(request);
        resolve(ok);
      });
    });
  }

  /** The device's pending update changed: push it where the device is connected. */
  async pendingUpdateChanged(deviceId: string): Promise<void> {
    const conn = this.connections.of(deviceId);
    if (conn?.topics.has('device')) {
      await conn.enqueue(() => this.device.deliverUpdate(conn));
      return;
    }
    await this.bus.publish(deviceId, { kind: 'update' });
  }

  /**
   * The deployment orchestrator claimed updates for `deviceIds`: pushed at once to the sockets here, and in
   * batches of ids to the other instances (hundreds of devices cost a few NOTIFYs). Each device gets its update
   * once: a push finds the update already sent when a previous push (or the join) sent it.
   */
  async deploymentUpdatesClaimed(deviceIds: readonly string[]): Promise<void> {
    const elsewhere: string[] = [];
    for (const id of deviceIds) {
      const conn = this.connections.of(id);
      if (conn?.topics.has('device'))
        void conn.enqueue(() => this.device.deliverUpdate(conn, undefined, true));
      else elsewhere.push(id);
    }
    for (let i = 0; i < elsewhere.length; i += CLOSES_PER_MESSAGE) {
      await this.bus.publish('', { kind: 'updates', devices: elsewhere.slice(i, i + CLOSES_PER_MESSAGE) });
    }
  }

  /**
   * Other instances close their sockets of the device. Published at once when no `closes` message is on its
   * way; otherwise gathered until it is sent, then all in one message (a storm costs one NOTIFY per batch, not
   * one per connection, and a lone connection waits for nothing).
   */
  closeElsewhere(deviceId: string): void {
    this.closes.add(deviceId);
    if (!this.closesSending) this.publishCloses();
  }

  private publishCloses(): void {
    const devices = [...this.closes].slice(0, CLOSES_PER_MESSAGE);
    if (devices.length === 0) return;
    for (const id of devices) this.closes.delete(id);
    this.closesSending = true;
    this.bus
      .publish('', { kind: 'closes', devices })
      .catch((err: unknown) => this.logger.warn({ err }, 'bus publish failed'))
      .finally(() => {
        this.closesSending = false;
        this.publishCloses();
      });
  }

  private onBus({ from, deviceId, message }: DeviceBusEnvelope): void {
    switch (message.kind) {
      case 'closes': {
        // The newer connections are on the publishing instance (this one replaced its own when they connected).
        if (from === this.instanceId || !Array.isArray(message.devices)) return;
        for (const id of message.devices) {
          const conn = this.connections.of(String(id));
          if (conn) void conn.close(1000, 'replaced by a newer connection');
        }
        return;
      }
      case 'updates': {
        if (from === this.instanceId || !Array.isArray(message.devices)) return;
        for (const id of message.devices) {
          const conn = this.connections.of(String(id));
          if (conn?.topics.has('device'))
            void conn.enqueue(() => this.device.deliverUpdate(conn, undefined, true));
        }
        return;
      }
      case 'update': {
        const conn = this.connections.of(deviceId);
        if (conn?.topics.has('device')) void conn.enqueue(() => this.device.deliverUpdate(conn));
        return;
      }
      case 'console':
        if (message.to === this.instanceId) this.consolePart(from, deviceId, message);
        return;
      case 'console-ack':
      case 'command-ack':
        if (message.to === this.instanceId) this.waiters.get(message.request)?.(message.ok);
        return;
      case 'command': {
        if (message.to !== this.instanceId) return;
        const ok = this.commandHere(deviceId, message.command);
        this.bus
          .publish(deviceId, { kind: 'command-ack', to: from, request: message.request, ok })
          .catch((err: unknown) => this.logger.warn({ err }, 'bus publish failed'));
        return;
      }
    }
  }

  private consolePart(
    from: string,
    deviceId: string,
    message: { request: string; part: number; parts: number; data: string },
  ): void {
    const { request, part, parts } = message;
    if (!Number.isInteger(parts) || parts < 1 || parts > 10_000 || !Number.isInteger(part)) return;
    if (part < 0 || part >= parts || typeof message.data !== 'string') return;
    let entry = this.consoleParts.get(request);
    if (!entry) {
      const timer = setTimeout(() => this.consoleParts.delete(request), 30_000);
      timer.unref();
      entry = { parts: new Array<string>(parts), received: 0, timer };
      this.consoleParts.set(request, entry);
    }
    if (entry.parts[part] === undefined) {
      entry.parts[part] = message.data;
      entry.received++;
    }
    if (entry.received < parts) return;
    clearTimeout(entry.timer);
    this.consoleParts.delete(request);
    const ok = this.console.sendHere(deviceId, entry.parts.join(''));
    this.bus
      .publish(deviceId, { kind: 'console-ack', to: from, request, ok })
      .catch((err: unknown) => this.logger.warn({ err }, 'bus publish failed'));
  }
}
