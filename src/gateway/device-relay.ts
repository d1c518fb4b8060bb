import { Injectable, Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { WebSocket } from 'ws';
import { ConsoleChannel } from './channels/console';
import { DeviceChannel } from './channels/device';
import { DeviceBus, type DeviceBusEnvelope } from './device-bus';
import { GATEWAY_LOG_CONTEXT } from './device-connection';
import { DeviceConnections } from './device-connections';
import { GatewayPeers } from './gateway-peers';
import { DeviceLinkService } from './device-link.service';
import { codePoints } from './phoenix-frames';
import { ScriptRunner } from './script-runner';
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
  /** Console code, scripts and script output arriving in parts from other instances. */
  private readonly incoming = new Reassembly();
  /** Requests sent to other instances (console code, commands, scripts), waiting for their answer. */
  private readonly waiters = new Map<string, (answer: unknown) => void>();
  /** Devices that connected here, for the next `closes` bus message. */
  private readonly closes = new Set<string>();
  private closesSending = false;

  constructor(
    private readonly bus: DeviceBus,
    private readonly connections: DeviceConnections,
    private readonly link: DeviceLinkService,
    private readonly device: DeviceChannel,
    private readonly console: ConsoleChannel,
    private readonly scripts: ScriptRunner,
    private readonly peers: GatewayPeers,
  ) {}

  get instanceId(): string {
    return this.bus.instanceId;
  }

  /** Starts receiving the other instances' messages, and tells them this instance is there (an empty `closes`). */
  start(): void {
    this.bus.onMessage((envelope) => this.onBus(envelope));
    this.bus
      .publish('', { kind: 'closes', devices: [] })
      .catch((err: unknown) => this.logger.warn({ err }, 'bus publish failed'));
  }

  /** Drops console code still being received. */
  stop(): void {
    this.incoming.clear();
  }

  /** Sends console code to the device's console on whichever instance holds it; false when nobody does. */
  async sendConsole(deviceId: string, code: string): Promise<boolean> {
    if (this.console.sendHere(deviceId, code)) return true;
    const holder = await this.link.holder(deviceId);
    if (holder === null || holder === this.instanceId) return false;
    const request = randomUUID();
    const chunks = chunksOf(code);
    const answer = this.answerTo(request, RELAY_ACK_TIMEOUT_MS, false);
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
    const answer = this.answerTo(request, RELAY_ACK_TIMEOUT_MS, false);
    try {
      await this.bus.publish(deviceId, { kind: 'command', to: holder, request, command });
    } catch (err) {
      this.waiters.get(request)?.(false);
      throw err;
    }
    return answer;
  }

  /**
   * Runs a support script on the device on whichever instance holds its socket: its output, or null when no
   * socket can run it or the device does not answer within `timeoutMs`.
   */
  async runScript(deviceId: string, text: string, timeoutMs: number): Promise<string | null> {
    if (this.scripts.holds(deviceId)) return this.scripts.run(deviceId, text, timeoutMs);
    const holder = await this.link.holder(deviceId);
    if (holder === null || holder === this.instanceId) return null;
    const request = randomUUID();
    const chunks = chunksOf(text);
    // The holder answers within timeoutMs (null when the device did not): the margin is for the bus.
    const answer = this.answerTo<string | null>(request, timeoutMs + RELAY_ACK_TIMEOUT_MS, null);
    try {
      for (const [part, data] of chunks.entries()) {
        await this.bus.publish(deviceId, {
          kind: 'script',
          to: holder,
          request,
          part,
          parts: chunks.length,
          data,
          timeoutMs,
        });
      }
    } catch (err) {
      this.waiters.get(request)?.(null);
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

  /** The answer of another instance to `request` (`fallback` when none comes within `timeoutMs`). */
  private answerTo<T>(request: string, timeoutMs: number, fallback: T): Promise<T> {
    return new Promise<T>((resolve) => {
      const timer = setTimeout(() => {
        this.waiters.delete(request);
        resolve(fallback);
      }, timeoutMs);
      this.waiters.set(request, (answer) => {
        clearTimeout(timer);
        this.waiters.delete(request);
        resolve(answer as T);
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
    // A socket here still joining (its join read the pending update before this change) gets the message too: it
    // comes back to this instance once the join is done. Alone and without a socket, nobody would read it.
    if (conn || !this.peers.alone) await this.bus.publish(deviceId, { kind: 'update' });
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
    if (this.peers.alone) return;
    for (let i = 0; i < elsewhere.length; i += CLOSES_PER_MESSAGE) {
      await this.bus.publish('', { kind: 'updates', devices: elsewhere.slice(i, i + CLOSES_PER_MESSAGE) });
    }
  }

  /**
   * Many devices' pending updates changed (a bulk upgrade): pushed at once to the sockets joined here, and in
   * batches of ids to the other instances, as `pendingUpdateChanged` does for one. A socket here still joining
   * gets its message back through the bus, once its join is done.
   */
  async pendingUpdatesChanged(deviceIds: readonly string[]): Promise<void> {
    const elsewhere: string[] = [];
    for (const id of deviceIds) {
      const conn = this.connections.of(id);
      if (conn?.topics.has('device')) void conn.enqueue(() => this.device.deliverUpdate(conn));
      else if (conn || !this.peers.alone) elsewhere.push(id);
    }
    for (let i = 0; i < elsewhere.length; i += CLOSES_PER_MESSAGE) {
      await this.bus.publish('', { kind: 'pending', devices: elsewhere.slice(i, i + CLOSES_PER_MESSAGE) });
    }
  }

  /**
   * Closes the sockets of these devices wherever they are (a bulk move): here at once, elsewhere through batches
   * of ids on the bus (nothing to send when this instance runs alone).
   */
  async reconnectMany(deviceIds: readonly string[]): Promise<void> {
    const elsewhere: string[] = [];
    for (const id of deviceIds) {
      if (!this.commandHere(id, 'reconnect')) elsewhere.push(id);
    }
    if (this.peers.alone) return;
    for (let i = 0; i < elsewhere.length; i += CLOSES_PER_MESSAGE) {
      await this.bus.publish('', { kind: 'reconnects', devices: elsewhere.slice(i, i + CLOSES_PER_MESSAGE) });
    }
  }

  /**
   * Other instances close their sockets of the device. Published at once when no `closes` message is on its
   * way; otherwise gathered until it is sent, then all in one message (a storm costs one NOTIFY per batch, not
   * one per connection, and a lone connection waits for nothing).
   */
  closeElsewhere(deviceId: string): void {
    if (this.peers.alone) return;
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
    if (from !== this.instanceId) this.peers.heard();
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
      case 'pending': {
        if (!Array.isArray(message.devices)) return;
        for (const id of message.devices) {
          const conn = this.connections.of(String(id));
          if (conn?.topics.has('device')) void conn.enqueue(() => this.device.deliverUpdate(conn));
        }
        return;
      }
      case 'reconnects': {
        if (from === this.instanceId || !Array.isArray(message.devices)) return;
        for (const id of message.devices) this.commandHere(String(id), 'reconnect');
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
      case 'script':
        if (message.to === this.instanceId) this.scriptPart(from, deviceId, message);
        return;
      case 'script-output': {
        if (message.to !== this.instanceId) return;
        const output = this.incoming.add(
          `output:${message.request}`,
          message.part,
          message.parts,
          message.data,
        );
        if (output !== null) this.waiters.get(message.request)?.(message.ok ? output : null);
        return;
      }
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
    const code = this.incoming.add(`console:${message.request}`, message.part, message.parts, message.data);
    if (code === null) return;
    const ok = this.console.sendHere(deviceId, code);
    this.bus
      .publish(deviceId, { kind: 'console-ack', to: from, request: message.request, ok })
      .catch((err: unknown) => this.logger.warn({ err }, 'bus publish failed'));
  }

  /** A part of a script for a device held here: once whole, run, and the output sent back in parts. */
  private scriptPart(
    from: string,
    deviceId: string,
    message: { request: string; part: number; parts: number; data: string; timeoutMs: number },
  ): void {
    const text = this.incoming.add(`script:${message.request}`, message.part, message.parts, message.data);
    if (text === null) return;
    const timeoutMs = Number.isInteger(message.timeoutMs)
      ? Math.min(Math.max(message.timeoutMs, 0), 600_000)
      : 0;
    void this.scripts
      .run(deviceId, text, timeoutMs)
      .then(async (output) => {
        const chunks = chunksOf(output ?? '');
        for (const [part, data] of chunks.entries()) {
          await this.bus.publish(deviceId, {
            kind: 'script-output',
            to: from,
            request: message.request,
            part,
            parts: chunks.length,
            data,
            ok: output !== null,
          });
        }
      })
      .catch((err: unknown) => this.logger.warn({ err }, 'script output not sent'));
  }
}

/** Text in parts of CONSOLE_CHUNK code points (at least one part): each fits one bus message. */
function chunksOf(text: string): string[] {
  const points = codePoints(text);
  const chunks: string[] = [];
  for (let i = 0; i < points.length || chunks.length === 0; i += CONSOLE_CHUNK) {
    chunks.push(points.slice(i, i + CONSOLE_CHUNK).join(''));
  }
  return chunks;
}

/** Texts arriving in numbered parts, each whole once every part came (forgotten after 30 s unfinished). */
class Reassembly {
  private readonly pending = new Map<string, { parts: string[]; received: number; timer: NodeJS.Timeout }>();

  /** Adds a part; the whole text once its last part came, else null (a malformed part is ignored). */
  add(key: string, part: number, parts: number, data: unknown): string | null {
    if (!Number.isInteger(parts) || parts < 1 || parts > 10_000 || !Number.isInteger(part)) return null;
    if (part < 0 || part >= parts || typeof data !== 'string') return null;
    let entry = this.pending.get(key);
    if (!entry) {
      const timer = setTimeout(() => this.pending.delete(key), 30_000);
      timer.unref();
      entry = { parts: new Array<string>(parts), received: 0, timer };
      this.pending.set(key, entry);
    }
    if (entry.parts.length !== parts) return null;
    if (entry.parts[part] === undefined) {
      entry.parts[part] = data;
      entry.received++;
    }
    if (entry.received < parts) return null;
    clearTimeout(entry.timer);
    this.pending.delete(key);
    return entry.parts.join('');
  }

  clear(): void {
    for (const { timer } of this.pending.values()) clearTimeout(timer);
    this.pending.clear();
  }
}
