import { Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Client } from 'pg';
import { DataSource, type EntityManager } from 'typeorm';

/** The listener connection's `application_name`: a revocation finds every instance's listener by it. */
export const BUS_APPLICATION_NAME = 'fleethub-bus';
/** How often the listener proves it is alive and caught up (a round trip on its own connection). */
export const HEARTBEAT_INTERVAL_MS = 500;
const HEARTBEAT_TIMEOUT_MS = 5_000;
/** PostgreSQL limits NOTIFY payloads to 8000 bytes; stay clear of it. */
export const MAX_BUS_PAYLOAD_BYTES = 7900;

export type BusHandler = (payload: string) => void;

/**
 * What the instances of one deployment tell each other, through PostgreSQL LISTEN/NOTIFY: one listening
 * connection per process (reconnected with backoff when it drops), NOTIFY through the pool or inside the
 * caller's transaction (then delivered only if it commits). Notifications published one after another by one
 * process arrive in that order.
 *
 * `caughtUpAt` tells subscribers how far they can trust what they have heard: a heartbeat round trip on the
 * listening connection is answered only after PostgreSQL has delivered every notification committed before
 * it was sent, so when one is answered, nothing committed before it was sent can still be on its way.
 */
@Injectable()
export class InstanceBus implements OnModuleInit, OnApplicationShutdown {
  /** This process's instance id (a fresh uuid per process). */
  readonly instanceId = randomUUID();
  private readonly logger = new Logger(InstanceBus.name);
  private readonly handlers = new Map<string, BusHandler[]>();
  private readonly stateHandlers: ((listening: boolean) => void)[] = [];
  private client: Client | null = null;
  private pid = 0;
  private caughtUp = Number.NEGATIVE_INFINITY;
  private started = false;
  private stopped = false;
  private failures = 0;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private heartbeatTimer: NodeJS.Timeout | null = null;
  /** The connection whose heartbeat is unanswered (at most one in flight per connection). */
  private heartbeating: Client | null = null;

  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async onModuleInit(): Promise<void> {
    await this.connect();
    this.heartbeatTimer = setInterval(() => this.heartbeat(), HEARTBEAT_INTERVAL_MS);
    this.heartbeatTimer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    if (this.heartbeatTimer) clearInterval(this.heartbeatTimer);
    const client = this.client;
    if (!client) return;
    this.lost(client);
    await client.end().catch(() => undefined);
  }

  /** Calls `handler` with every payload published on `channel`. Subscribe before the application starts. */
  subscribe(channel: string, handler: BusHandler): void {
    if (this.started) throw new Error(`subscribe to ${channel} before the instance bus starts`);
    if (!/^[a-z_]+$/.test(channel)) throw new Error(`bad channel name ${channel}`);
    const handlers = this.handlers.get(channel);
    if (handlers) handlers.push(handler);
    else this.handlers.set(channel, [handler]);
  }

  /** Calls `handler` (synchronously) whenever the listener starts or stops listening. */
  onStateChange(handler: (listening: boolean) => void): void {
    this.stateHandlers.push(handler);
  }

  /** Whether the listening connection is up and listening on every subscribed channel. */
  get listening(): boolean {
    return this.client !== null;
  }

  /**
   * A `performance.now()` time before which every committed notification has been delivered to the
   * handlers: the sending time of the last answered heartbeat (or of LISTEN). -Infinity while not listening.
   */
  get caughtUpAt(): number {
    return this.client ? this.caughtUp : Number.NEGATIVE_INFINITY;
  }

  /** The PostgreSQL backend pid of the listening connection, null while not listening. */
  get listenerPid(): number | null {
    return this.client ? this.pid : null;
  }

  /** The backend pids of every instance's listening connection (this one's included), as `tx` sees them. */
  async listenerPids(tx?: EntityManager): Promise<number[]> {
    const rows: { pid: number }[] = await (tx ?? this.db).query(
      `SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1`,
      [BUS_APPLICATION_NAME],
    );
    return rows.map((row) => row.pid);
  }

  /** Delivers `payload` to every instance (this one included): at once, or when `tx` commits. */
  async publish(channel: string, payload: string, tx?: EntityManager): Promise<void> {
    checkPayload(payload);
    await (tx ?? this.db).query(`SELECT pg_notify($1, $2)`, [channel, payload]);
  }

  /**
   * Publishes on the listening connection itself (never waiting for the pool); dropped while not listening.
   * For answers that must not queue behind the pool's work.
   */
  publishFromListener(channel: string, payload: string): void {
    checkPayload(payload);
    const client = this.client;
    if (!client) return;
    client.query(`SELECT pg_notify($1, $2)`, [channel, payload]).catch((err: unknown) => {
      this.logger.warn({ err, channel }, 'instance bus publish failed');
    });
  }

  private connectionString(): string {
    const options = this.db.options as { url?: string };
    if (!options.url) throw new Error('the instance bus needs the DataSource to be configured by URL');
    return options.url;
  }

  private async connect(): Promise<void> {
    const client = new Client({
      connectionString: this.connectionString(),
      application_name: BUS_APPLICATION_NAME,
    });
    client.on('error', (err) => this.lost(client, err));
    client.on('end', () => this.lost(client));
    client.on('notification', (n) => {
      if (n.payload === undefined) return;
      for (const handler of this.handlers.get(n.channel) ?? []) {
        try {
          handler(n.payload);
        } catch (err) {
          this.logger.error({ err, channel: n.channel }, 'instance bus handler failed');
        }
      }
    });
    let listenSent = 0;
    let pid = 0;
    try {
      await client.connect();
      pid = ((await client.query('SELECT pg_backend_pid() AS pid')).rows[0] as { pid: number }).pid;
      listenSent = performance.now();
      for (const channel of this.handlers.keys()) await client.query(`LISTEN ${channel}`);
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
    this.pid = pid;
    this.caughtUp = listenSent;
    this.changed(true);
  }

  /** Forgets `client` if it is the listening one: state handlers hear it at once, a reconnect is scheduled. */
  private lost(client: Client, err?: Error): void {
    if (this.client !== client) return;
    this.client = null;
    client.removeAllListeners('notification');
    client.end().catch(() => undefined);
    this.changed(false);
    if (!this.stopped) {
      this.logger.warn({ err }, 'instance bus connection lost; reconnecting');
      this.scheduleReconnect();
    }
  }

  private changed(listening: boolean): void {
    for (const handler of this.stateHandlers) {
      try {
        handler(listening);
      } catch (err) {
        this.logger.error({ err }, 'instance bus state handler failed');
      }
    }
  }

  /** A round trip on the listener: answered, it moves `caughtUpAt`; unanswered in time, the connection is dropped. */
  private heartbeat(): void {
    const client = this.client;
    if (!client || this.heartbeating === client) return;
    this.heartbeating = client;
    const sent = performance.now();
    const timeout = setTimeout(
      () => this.lost(client, new Error(`no heartbeat answer within ${HEARTBEAT_TIMEOUT_MS} ms`)),
      HEARTBEAT_TIMEOUT_MS,
    );
    timeout.unref();
    void client
      .query('SELECT 1')
      .then(
        () => {
          if (this.client === client) this.caughtUp = sent;
        },
        (err: Error) => this.lost(client, err),
      )
      .finally(() => {
        clearTimeout(timeout);
        if (this.heartbeating === client) this.heartbeating = null;
      });
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.reconnectTimer) return;
    this.failures++;
    const delay = Math.min(10_000, 250 * 2 ** Math.min(this.failures, 6));
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      this.connect().catch((err: unknown) => {
        this.logger.warn({ err }, 'instance bus reconnect failed');
        this.scheduleReconnect();
      });
    }, delay);
    this.reconnectTimer.unref();
  }
}

function checkPayload(payload: string): void {
  const bytes = Buffer.byteLength(payload);
  if (bytes > MAX_BUS_PAYLOAD_BYTES) throw new Error(`instance bus message too large (${bytes} bytes)`);
}
