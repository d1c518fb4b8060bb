import {
  type BeforeApplicationShutdown,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { type RawData, WebSocket, WebSocketServer } from 'ws';
import { DatabasePool } from '../database/database-pool';
import { type AuthenticatedDevice, DeviceAuthenticator } from '../device-auth/device-authenticator';
import { ShutdownState } from '../health/shutdown-state';
import { MetricsService } from '../metrics/metrics.service';
import { Admission, AdmissionRefused } from './admission';
import { ChannelRouter } from './channels/channel-router';
import { DeviceChannel } from './channels/device';
import { ConsoleOutputService } from './console-output.service';
import { DeviceConnection, GATEWAY_LOG_CONTEXT } from './device-connection';
import { DeviceConnections } from './device-connections';
import { DeviceRelay } from './device-relay';
import { decodeFrame } from './phoenix-frames';
import { PresenceService } from './presence.service';
import { destroyOnError, refuseUpgrade } from './upgrade-refusal';

/** Where devices connect: shared-secret devices use the first, mTLS devices the second (device-protocol.md 1.1). */
export const DEVICE_SOCKET_PATHS = new Set(['/device-socket/websocket', '/socket/websocket']);
/** Largest inbound frame; a device that sends more is disconnected (1009). */
export const MAX_FRAME_BYTES = 1024 * 1024;
/** Without any inbound frame for this long (six missed heartbeats), a socket is dropped. */
export const IDLE_TIMEOUT_MS = 180_000;
/**
 * Connection work that needs the database (authentication, the `device` join, identity reports) running at
 * once; more waits in memory (see Admission). Below the pool size, so that the API and the presence writes keep
 * a connection, and so that a reconnect storm never waits in the pool (whose wait times out).
 */
export const CONNECT_CONCURRENCY = 8;
/**
 * How long a handshake may wait for its turn before it is answered 503 (busy, retry later). NervesHubLink waits
 * for the upgrade's answer without a limit; the NH1 signature is judged at the request's arrival, so a wait does
 * not expire it. A minute keeps a storm's handshakes queued rather than bounced through the devices' backoff,
 * while a queue the server cannot serve in time is answered instead of holding its sockets.
 */
export const HANDSHAKE_MAX_WAIT_MS = 60_000;
/** Refused handshakes are logged together, at most this often. */
const REFUSALS_LOG_MS = 10_000;
/**
 * How device sockets are closed when the instance stops. NervesHubLink reconnects after any close (its
 * `handle_disconnect` reconnects on its backoff, 1 s doubling to 60 s), through the balancer to another instance.
 */
export const SHUTDOWN_CLOSE_CODE = 1001;
export const SHUTDOWN_CLOSE_REASON = 'server shutting down';
/** During a drain, device sockets due to close are closed at this pace (each tick closes those due by then). */
const DRAIN_TICK_MS = 50;
/**
 * How long a device closed by the drain has to answer the close frame before its socket is cut (it has the 1001
 * already, and reconnects either way): the last ones close at the drain's end, and the listener waits for them.
 */
const DRAIN_CLOSE_GRACE_MS = 1000;

/**
 * The device socket server: a `ws` server on the HTTP server's `upgrade` event (authentication happens before
 * the upgrade completes, in turn through the Admission), the sockets' lifecycle, and their frames handed to the
 * ChannelRouter (Phoenix V2 framing; the `device`, `console` and `extensions` channels of NervesHubLink).
 * Devices on other instances are reached through the DeviceRelay.
 */
@Injectable()
export class DeviceGateway implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(GATEWAY_LOG_CONTEXT);
  private wss: WebSocketServer | null = null;
  private server: Server | null = null;
  private idleTimer: NodeJS.Timeout | null = null;
  private drainTimer: NodeJS.Timeout | null = null;
  private readonly refusals = { shed: 0, late: 0, since: 0 };
  /** Other listeners' HTTP servers this gateway serves upgrades on (the mTLS device socket), with their handlers. */
  private readonly served: {
    server: Server;
    onUpgrade: (req: IncomingMessage, socket: Duplex, head: Buffer) => void;
  }[] = [];
  private readonly onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    this.upgrade(req, socket, head).catch((err: unknown) => {
      this.logger.error({ err }, 'device upgrade failed');
      refuseUpgrade(socket, 500);
    });
  };

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly auth: DeviceAuthenticator,
    private readonly connections: DeviceConnections,
    private readonly router: ChannelRouter,
    private readonly deviceChannel: DeviceChannel,
    private readonly relay: DeviceRelay,
    private readonly presence: PresenceService,
    private readonly pool: DatabasePool,
    private readonly consoleOutput: ConsoleOutputService,
    private readonly admission: Admission,
    private readonly metrics: MetricsService,
    private readonly shutdown: ShutdownState,
  ) {
    metrics.setDeviceConnectQueue(() => ({
      connected: admission.queued('connected'),
      handshake: admission.queued('handshake'),
      background: admission.queued('background'),
    }));
  }

  get instanceId(): string {
    return this.relay.instanceId;
  }

  async onApplicationBootstrap(): Promise<void> {
    const server = this.adapterHost.httpAdapter?.getHttpServer() as Server | undefined;
    if (!server) return;
    this.server = server;
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: MAX_FRAME_BYTES,
      perMessageDeflate: false,
      clientTracking: false,
    });
    this.relay.start();
    await this.presence.start(this.instanceId, () => this.joinedDevices());
    await this.pool.openConnections(CONNECT_CONCURRENCY);
    server.on('upgrade', this.onUpgrade);
    this.idleTimer = setInterval(() => this.dropIdle(), 30_000);
    this.idleTimer.unref();
    this.shutdown.onDrain((periodMs) => this.drain(periodMs));
  }

  /**
   * Serves the device socket on another HTTP server too (the mTLS listener, issue #17): the same paths, channels,
   * drain and shutdown as the main listener. Its connections were authenticated before they carried any HTTP:
   * `identify` gives the device a connection is (null: refused, 401), without the Admission (that listener ran its
   * authentication through it already).
   */
  serve(server: Server, identify: (socket: Duplex) => AuthenticatedDevice | null): void {
    const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      this.upgrade(req, socket, head, identify).catch((err: unknown) => {
        this.logger.error({ err }, 'device upgrade failed');
        refuseUpgrade(socket, 500);
      });
    };
    server.on('upgrade', onUpgrade);
    this.served.push({ server, onUpgrade });
  }

  /**
   * The shutdown's drain: no new device socket is accepted, and those held here close one after another, evenly
   * over `periodMs` (all at once when it is 0), so that their reconnects do not land on the other instances in
   * the same instant.
   */
  drain(periodMs: number): void {
    if (this.drainTimer || !this.server) return;
    const closing = [...this.connections];
    const startedAt = Date.now();
    let closed = 0;
    const closeDue = () => {
      const elapsed = Date.now() - startedAt;
      const due =
        elapsed >= periodMs ? closing.length : Math.floor((closing.length * elapsed) / periodMs) + 1;
      for (; closed < Math.min(due, closing.length); closed++) {
        void closing[closed].close(SHUTDOWN_CLOSE_CODE, SHUTDOWN_CLOSE_REASON, DRAIN_CLOSE_GRACE_MS);
      }
      if (closed === closing.length && this.drainTimer) clearInterval(this.drainTimer);
    };
    this.drainTimer = setInterval(closeDue, DRAIN_TICK_MS);
    this.drainTimer.unref();
    closeDue();
  }

  /** Closes every device socket (they reconnect to another instance) and records them disconnected. */
  async beforeApplicationShutdown(): Promise<void> {
    if (!this.server) return;
    this.connections.shuttingDown = true;
    this.server.off('upgrade', this.onUpgrade);
    for (const { server, onUpgrade } of this.served) server.off('upgrade', onUpgrade);
    if (this.idleTimer) clearInterval(this.idleTimer);
    if (this.drainTimer) clearInterval(this.drainTimer);
    await Promise.all(
      [...this.connections].map((conn) => conn.close(SHUTDOWN_CLOSE_CODE, SHUTDOWN_CLOSE_REASON)),
    );
    this.relay.stop();
    await this.consoleOutput.flush().catch(() => undefined);
    await this.presence.stop().catch((err: unknown) => this.logger.warn({ err }, 'presence stop failed'));
    this.wss?.close();
  }

  /** Devices whose `device` channel is joined here. */
  joinedDevices(): string[] {
    return this.connections.joinedDevices();
  }

  /** How many sockets this instance holds (for tests and metrics). */
  get connectionCount(): number {
    return this.connections.size;
  }

  private async upgrade(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    identify?: (socket: Duplex) => AuthenticatedDevice | null,
  ): Promise<void> {
    // A shared listener, not a closure: a closure here would keep this request (headers and all) alive for as
    // long as the socket lives.
    socket.on('error', destroyOnError);
    const url = new URL(req.url ?? '/', 'http://device.invalid');
    if (!DEVICE_SOCKET_PATHS.has(url.pathname)) return refuseUpgrade(socket, 404);
    if (this.connections.shuttingDown || this.shutdown.draining || !this.wss)
      return refuseUpgrade(socket, 503);
    // Only the JSON V2 serializer is offered; msgpack devices (vsn 3.0.0) are refused as Phoenix does.
    if (url.searchParams.get('vsn') !== '2.0.0') return refuseUpgrade(socket, 403);
    if (identify) {
      // Authenticated before HTTP (the mTLS listener): nothing to wait for.
      const identified = identify(req.socket);
      if (!identified) return refuseUpgrade(socket, 401);
      this.wss.handleUpgrade(req, socket, head, (ws) => this.accept(ws, identified));
      return;
    }
    const receivedAt = Date.now();
    let device: AuthenticatedDevice | null;
    try {
      // In turn with the other connections: a storm of thousands waits here, not in the database pool.
      device = await this.admission.handshake(async () =>
        socket.destroyed
          ? null
          : this.auth.authenticate(req.headers, req.socket.remoteAddress ?? '', receivedAt),
      );
    } catch (err) {
      if (err instanceof AdmissionRefused) return this.refuseBusy(socket, err);
      this.logger.error({ err }, 'device authentication failed');
      const reason = 'the platform could not be reached to authenticate this device';
      return refuseUpgrade(socket, 503, reason, { 'nh-connection-error-reason': reason });
    }
    if (!device) return refuseUpgrade(socket, 401);
    if (socket.destroyed || this.connections.shuttingDown || this.shutdown.draining) {
      return refuseUpgrade(socket, 503);
    }
    const authenticated = device;
    this.wss.handleUpgrade(req, socket, head, (ws) => this.accept(ws, authenticated));
  }

  /**
   * A handshake the admission could not serve in time: 503 with `Retry-After` (NervesHubLink ignores it and
   * backs off by its own schedule, 1 s doubling to 60 s with jitter; other clients may use it).
   */
  private refuseBusy(socket: Duplex, refused: AdmissionRefused): void {
    this.metrics.deviceHandshakesRefused.inc({ reason: refused.reason });
    this.refusals[refused.reason]++;
    const now = Date.now();
    if (now - this.refusals.since >= REFUSALS_LOG_MS) {
      this.logger.warn(
        {
          shed: this.refusals.shed,
          late: this.refusals.late,
          queued: this.admission.queued('handshake'),
          expectedWaitMs: this.admission.expectedHandshakeWaitMs(),
        },
        'device handshakes refused: server busy',
      );
      this.refusals.shed = 0;
      this.refusals.late = 0;
      this.refusals.since = now;
    }
    const reason = 'the server is busy; retry later';
    refuseUpgrade(socket, 503, reason, {
      'Retry-After': String(refused.retryAfterS),
      'nh-connection-error-reason': reason,
    });
  }

  private accept(ws: WebSocket, device: AuthenticatedDevice): void {
    const conn = new DeviceConnection(ws, device);
    const previous = this.connections.add(conn);
    if (previous) void previous.close(1000, 'replaced by a newer connection');
    this.relay.closeElsewhere(device.deviceId);
    ws.on('message', (data, isBinary) => this.onMessage(conn, data, isBinary));
    ws.on('error', () => ws.terminate());
    ws.on('close', () => {
      this.onClosed(conn).catch((err: unknown) =>
        this.logger.warn({ err, device: conn.device.identifier }, 'device disconnect failed'),
      );
    });
  }

  private async onClosed(conn: DeviceConnection): Promise<void> {
    this.deviceChannel.closed(conn);
    if (!this.connections.remove(conn)) return;
    await this.presence.disconnected(conn.deviceId);
  }

  private dropIdle(): void {
    const limit = Date.now() - IDLE_TIMEOUT_MS;
    for (const conn of this.connections) if (conn.lastInbound < limit) conn.ws.terminate();
  }

  private onMessage(conn: DeviceConnection, data: RawData, isBinary: boolean): void {
    conn.lastInbound = Date.now();
    this.presence.touch(conn.deviceId);
    if (isBinary) return;
    const text = Array.isArray(data)
      ? Buffer.concat(data).toString('utf8')
      : Buffer.from(data as Uint8Array).toString('utf8');
    const frame = decodeFrame(text);
    if (!frame) return;
    if (conn.floods) {
      this.logger.warn(`device ${conn.device.identifier} floods the socket; closing`);
      conn.ws.terminate();
      return;
    }
    void conn.enqueue(() => this.router.dispatch(conn, frame));
  }
}
