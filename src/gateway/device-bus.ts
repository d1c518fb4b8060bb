import { Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { randomUUID } from 'node:crypto';
import { Client } from 'pg';
import { DataSource } from 'typeorm';

/**
 * What instances tell each other about devices. Only ids and short commands travel (PostgreSQL caps a NOTIFY
 * payload at 8000 bytes); the receiver loads the rest from the database.
 */
export type DeviceBusMessage =
  /** A newer socket of the device (connection `keep`) authenticated: every other socket of it closes. */
  | { kind: 'close'; keep: string }
  /**
   * `close` for many devices at once (the envelope's `deviceId` is empty): each of these devices has a newer
   * socket on the publishing instance, so that every other instance closes its sockets of them.
   */
  | { kind: 'closes'; devices: string[] }
  /** The device's pending update changed: the instance holding its socket pushes it. */
  | { kind: 'update' }
  /** One chunk of console code for the instance `to`; `part` counts from 0 to `parts - 1`. */
  | { kind: 'console'; to: string; request: string; part: number; parts: number; data: string }
  /** The answer to a console request: whether the code reached a console-joined socket. */
  | { kind: 'console-ack'; to: string; request: string; ok: boolean };

export interface DeviceBusEnvelope {
  /** The instance that published the message. */
  from: string;
  deviceId: string;
  message: DeviceBusMessage;
}

export type DeviceBusHandler = (envelope: DeviceBusEnvelope) => void;

/**
 * Fan-out between server instances, addressed by device id: senders never need to know which instance holds a
 * socket. PostgreSQL LISTEN/NOTIFY implements it here; a broker (Redis, NATS) can implement it for very large
 * fleets.
 */
export abstract class DeviceBus {
  /** This process's gateway instance id (a fresh uuid per process). */
  abstract readonly instanceId: string;
  /** Delivers the message to every instance (this one included). */
  abstract publish(deviceId: string, message: DeviceBusMessage): Promise<void>;
  abstract onMessage(handler: DeviceBusHandler): void;
}

/** PostgreSQL limits NOTIFY payloads to 8000 bytes; stay clear of it. */
export const MAX_BUS_PAYLOAD_BYTES = 7900;
export const BUS_CHANNEL = 'fleethub_device_bus';

export function encodeEnvelope(envelope: DeviceBusEnvelope): string {
  const text = JSON.stringify(envelope);
  if (Buffer.byteLength(text) > MAX_BUS_PAYLOAD_BYTES) {
    throw new Error(`device bus message too large (${Buffer.byteLength(text)} bytes)`);
  }
  return text;
}

/** Parses a received payload; null for anything that is not an envelope (never throws). */
export function decodeEnvelope(text: string): DeviceBusEnvelope | null {
  try {
    const value = JSON.parse(text) as Partial<DeviceBusEnvelope>;
    if (
      typeof value !== 'object' ||
      value === null ||
      typeof value.from !== 'string' ||
      typeof value.deviceId !== 'string' ||
      typeof value.message !== 'object' ||
      value.message === null ||
      typeof (value.message as { kind?: unknown }).kind !== 'string'
    ) {
      return null;
    }
    return value as DeviceBusEnvelope;
  } catch {
    return null;
  }
}

/**
 * LISTEN on one dedicated connection (reconnected with backoff when it drops); NOTIFY through the pool.
 * Notifications published one after another by one process arrive in that order.
 */
@Injectable()
export class PgDeviceBus extends DeviceBus implements OnModuleInit, OnApplicationShutdown {
  readonly instanceId = randomUUID();
  private readonly logger = new Logger(PgDeviceBus.name);
  private readonly handlers: DeviceBusHandler[] = [];
  private client: Client | null = null;
  private stopped = false;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private failures = 0;
  private started = false;

  constructor(@InjectDataSource() private readonly db: DataSource) {
    super();
  }

  async onModuleInit(): Promise<void> {
    await this.connect();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    const client = this.client;
    this.client = null;
    if (client) await client.end().catch(() => undefined);
  }

  onMessage(handler: DeviceBusHandler): void {
    this.handlers.push(handler);
  }

  async publish(deviceId: string, message: DeviceBusMessage): Promise<void> {
    const payload = encodeEnvelope({ from: this.instanceId, deviceId, message });
    await this.db.query(`SELECT pg_notify($1, $2)`, [BUS_CHANNEL, payload]);
  }

  /** Whether the listening connection is up (for tests and health). */
  get listening(): boolean {
    return this.client !== null;
  }

  private connectionString(): string {
    const options = this.db.options as { url?: string };
    if (!options.url) throw new Error('the device bus needs the DataSource to be configured by URL');
    return options.url;
  }

  private async connect(): Promise<void> {
    const client = new Client({
      connectionString: this.connectionString(),
      application_name: 'fleethub-bus',
    });
    const lost = (err?: Error) => {
      if (this.client !== client) return;
      this.client = null;
      client.removeAllListeners('notification');
      client.end().catch(() => undefined);
      if (!this.stopped) {
        this.logger.warn(`device bus connection lost${err ? `: ${err.message}` : ''}; reconnecting`);
        this.scheduleReconnect();
      }
    };
    client.on('error', lost);
    client.on('end', () => lost());
    client.on('notification', (n) => {
      if (n.channel !== BUS_CHANNEL || n.payload === undefined) return;
      const envelope = decodeEnvelope(n.payload);
      if (!envelope) return;
      for (const handler of this.handlers) {
        try {
          handler(envelope);
        } catch (err) {
          this.logger.error(`device bus handler failed: ${String(err)}`);
        }
      }
    });
    try {
      await client.connect();
      await client.query(`LISTEN ${BUS_CHANNEL}`);
    } catch (err) {
      client.removeAllListeners();
      client.on('error', () => undefined);
      await client.end().catch(() => undefined);
      // The first connect happens at start: fail the start rather than run deaf.
      if (!this.started) throw err;
      this.scheduleReconnect();
      return;
    }
    if (this.stopped) {
      await client.end().catch(() => undefined);
      return;
    }
    this.started = true;
    this.failures = 0;
    this.client = client;
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.reconnectTimer) return;
    this.failures++;
    const delay = Math.min(10_000, 250 * 2 ** Math.min(this.failures, 6));
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      this.connect().catch((err: unknown) => {
        this.logger.warn(`device bus reconnect failed: ${String(err)}`);
        this.scheduleReconnect();
      });
    }, delay);
    this.reconnectTimer.unref();
  }
}
