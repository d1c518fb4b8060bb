import {
  type BeforeApplicationShutdown,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { randomUUID } from 'node:crypto';
import { type IncomingMessage, type Server, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import semver from 'semver';
import { type RawData, WebSocket, WebSocketServer } from 'ws';
import { type AuthenticatedDevice, DeviceAuthenticator } from '../device-auth/device-authenticator';
import { MetricsService } from '../metrics/metrics.service';
import { Admission, AdmissionRefused } from './admission';
import { ConsoleOutputService } from './console-output.service';
import { DeviceBus, type DeviceBusEnvelope } from './device-bus';
import {
  DeviceLinkService,
  metadataFromJoin,
  normaliseStatus,
  type PendingUpdateRow,
  updatePayload,
} from './device-link.service';
import {
  codePoints,
  decodeFrame,
  encodePush,
  encodeReply,
  OK_EMPTY,
  type PhoenixFrame,
} from './phoenix-frames';
import { PresenceService } from './presence.service';

/** Where devices connect: shared-secret devices use the first, mTLS devices the second (device-protocol.md 1.1). */
export const DEVICE_SOCKET_PATHS = new Set(['/device-socket/websocket', '/socket/websocket']);
/** Largest inbound frame; a device that sends more is disconnected (1009). */
export const MAX_FRAME_BYTES = 1024 * 1024;
/** Without any inbound frame for this long (six missed heartbeats), a socket is dropped. */
export const IDLE_TIMEOUT_MS = 180_000;
/** Frames waiting for their turn on one connection before it is considered abusive and closed. */
const MAX_QUEUED_FRAMES = 500;
/** Code points of console code per bus message (JSON escapes stay well below the NOTIFY limit). */
const CONSOLE_CHUNK = 1000;
const CONSOLE_ACK_TIMEOUT_MS = 5000;
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
/** Devices per `closes` bus message (ids of at most 20 digits: well under the NOTIFY limit). */
export const CLOSES_PER_MESSAGE = 200;
/** Extensions this server offers (device-protocol.md 5). */
export const SERVER_EXTENSIONS = new Set(['network_identity']);

interface Connection {
  readonly ws: WebSocket;
  readonly device: AuthenticatedDevice;
  /** Joined topics and their join refs. */
  readonly topics: Map<string, string | null>;
  firmwareUuid: string | null;
  downloadingUuid: string | null;
  /**
   * Extensions offered in the `extensions` join reply, and those the device reported attached (null until the
   * `extensions` join: a connection costs memory only for what it uses).
   */
  offered: Set<string> | null;
  attached: Set<string> | null;
  lastInbound: number;
  queue: Promise<void>;
  queued: number;
  /** Update progress (null until the first `fwup_progress`). */
  progress: {
    status: string | null;
    value: number | null;
    writtenAt: number;
    timer: NodeJS.Timeout | null;
  } | null;
}

/**
 * The device socket: a `ws` server on the HTTP server's `upgrade` event (authentication happens before the
 * upgrade completes), Phoenix V2 framing, and the `device`, `console` and `extensions` channels of
 * NervesHubLink. Devices on other instances are reached through the DeviceBus.
 */
@Injectable()
export class DeviceGateway implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(DeviceGateway.name);
  private wss: WebSocketServer | null = null;
  private server: Server | null = null;
  private readonly connections = new Set<Connection>();
  /** The newest connection of each device on this instance. */
  private readonly byDevice = new Map<string, Connection>();
  private readonly consoleParts = new Map<
    string,
    { parts: string[]; received: number; timer: NodeJS.Timeout }
  >();
  private readonly consoleWaiters = new Map<string, (ok: boolean) => void>();
  private idleTimer: NodeJS.Timeout | null = null;
  private stopping = false;
  /** Identity reports not yet written (the newest per connection), for the connection's one background task. */
  private readonly identityReports = new Map<
    Connection,
    { payload: Record<string, unknown> | null; written: Promise<void> }
  >();
  private readonly refusals = { shed: 0, late: 0, since: 0 };
  /** Devices that connected here, for the next `closes` bus message. */
  private readonly closes = new Set<string>();
  private closesSending = false;
  private readonly onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    this.upgrade(req, socket, head).catch((err: unknown) => {
      this.logger.error({ err }, 'device upgrade failed');
      reject(socket, 500);
    });
  };

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly auth: DeviceAuthenticator,
    private readonly bus: DeviceBus,
    private readonly presence: PresenceService,
    private readonly link: DeviceLinkService,
    private readonly consoleOutput: ConsoleOutputService,
    private readonly admission: Admission,
    private readonly metrics: MetricsService,
  ) {
    metrics.setDeviceConnectQueue(() => ({
      connected: admission.queued('connected'),
      handshake: admission.queued('handshake'),
      background: admission.queued('background'),
    }));
  }

  get instanceId(): string {
    return this.bus.instanceId;
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
    this.bus.onMessage((envelope) => this.onBus(envelope));
    await this.presence.start(this.instanceId, () => this.joinedDevices());
    await this.link.openConnections(CONNECT_CONCURRENCY);
    server.on('upgrade', this.onUpgrade);
    this.idleTimer = setInterval(() => this.dropIdle(), 30_000);
    this.idleTimer.unref();
  }

  /** Closes every device socket (they reconnect to another instance) and records them disconnected. */
  async beforeApplicationShutdown(): Promise<void> {
    if (!this.server) return;
    this.stopping = true;
    this.server.off('upgrade', this.onUpgrade);
    if (this.idleTimer) clearInterval(this.idleTimer);
    await Promise.all([...this.connections].map((conn) => this.close(conn, 1001, 'server shutting down')));
    for (const { timer } of this.consoleParts.values()) clearTimeout(timer);
    this.consoleParts.clear();
    await this.consoleOutput.flush().catch(() => undefined);
    await this.presence.stop().catch((err: unknown) => this.logger.warn({ err }, 'presence stop failed'));
    this.wss?.close();
  }

  /** Devices whose `device` channel is joined here. */
  joinedDevices(): string[] {
    return [...this.byDevice.values()].filter((c) => c.topics.has('device')).map((c) => c.device.deviceId);
  }

  /** How many sockets this instance holds (for tests and metrics). */
  get connectionCount(): number {
    return this.connections.size;
  }

  // ---- console and updates (DeviceConsole / UpdateNotifier) ----

  /** Sends console code to the device's console on whichever instance holds it; false when nobody does. */
  async sendConsole(deviceId: string, code: string): Promise<boolean> {
    if (this.sendConsoleHere(deviceId, code)) return true;
    const holder = await this.link.holder(deviceId);
    if (holder === null || holder === this.instanceId) return false;
    const request = randomUUID();
    const points = codePoints(code);
    const chunks: string[] = [];
    for (let i = 0; i < points.length || chunks.length === 0; i += CONSOLE_CHUNK) {
      chunks.push(points.slice(i, i + CONSOLE_CHUNK).join(''));
    }
    const answer = new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        this.consoleWaiters.delete(request);
        resolve(false);
      }, CONSOLE_ACK_TIMEOUT_MS);
      this.consoleWaiters.set(request, (ok) => {
        clearTimeout(timer);
        this.consoleWaiters.delete(request);
        resolve(ok);
      });
    });
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
      this.consoleWaiters.get(request)?.(false);
      throw err;
    }
    return answer;
  }

  /** The device's pending update changed: push it where the device is connected. */
  async pendingUpdateChanged(deviceId: string): Promise<void> {
    const conn = this.byDevice.get(deviceId);
    if (conn?.topics.has('device')) {
      await this.enqueue(conn, () => this.deliverUpdate(conn));
      return;
    }
    await this.bus.publish(deviceId, { kind: 'update' });
  }

  private sendConsoleHere(deviceId: string, code: string): boolean {
    const conn = this.byDevice.get(deviceId);
    if (!conn || !conn.topics.has('console') || conn.ws.readyState !== WebSocket.OPEN) return false;
    for (const character of codePoints(code)) this.push(conn, 'console', 'dn', { data: character });
    this.push(conn, 'console', 'dn', { data: '\r' });
    return true;
  }

  // ---- upgrade and connection lifecycle ----

  private async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    // A shared listener, not a closure: a closure here would keep this request (headers and all) alive for as
    // long as the socket lives.
    socket.on('error', destroyOnError);
    const url = new URL(req.url ?? '/', 'http://device.invalid');
    if (!DEVICE_SOCKET_PATHS.has(url.pathname)) return reject(socket, 404);
    if (this.stopping || !this.wss) return reject(socket, 503);
    // Only the JSON V2 serializer is offered; msgpack devices (vsn 3.0.0) are refused as Phoenix does.
    if (url.searchParams.get('vsn') !== '2.0.0') return reject(socket, 403);
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
      return reject(socket, 503, reason, { 'nh-connection-error-reason': reason });
    }
    if (!device) return reject(socket, 401);
    if (socket.destroyed || this.stopping) return reject(socket, 503);
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
    reject(socket, 503, reason, {
      'Retry-After': String(refused.retryAfterS),
      'nh-connection-error-reason': reason,
    });
  }

  private accept(ws: WebSocket, device: AuthenticatedDevice): void {
    const conn: Connection = {
      ws,
      device,
      topics: new Map(),
      firmwareUuid: null,
      downloadingUuid: null,
      offered: null,
      attached: null,
      lastInbound: Date.now(),
      queue: SETTLED,
      queued: 0,
      progress: null,
    };
    this.connections.add(conn);
    const previous = this.byDevice.get(device.deviceId);
    this.byDevice.set(device.deviceId, conn);
    if (previous) void this.close(previous, 1000, 'replaced by a newer connection');
    this.closeElsewhere(device.deviceId);
    ws.on('message', (data, isBinary) => this.onMessage(conn, data, isBinary));
    ws.on('error', () => ws.terminate());
    ws.on('close', () => {
      this.onClosed(conn).catch((err: unknown) =>
        this.logger.warn({ err, device: conn.device.identifier }, 'device disconnect failed'),
      );
    });
  }

  private async onClosed(conn: Connection): Promise<void> {
    this.connections.delete(conn);
    if (conn.progress?.timer) clearTimeout(conn.progress.timer);
    if (this.byDevice.get(conn.device.deviceId) !== conn) return;
    this.byDevice.delete(conn.device.deviceId);
    await this.presence.disconnected(conn.device.deviceId);
  }

  /** Closes cleanly, and for good after a short grace period. */
  private close(conn: Connection, code: number, reason: string): Promise<void> {
    const { ws } = conn;
    if (ws.readyState === WebSocket.CLOSED) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        ws.terminate();
        resolve();
      }, 2000);
      timer.unref();
      ws.once('close', () => {
        clearTimeout(timer);
        resolve();
      });
      ws.close(code, reason);
    });
  }

  private dropIdle(): void {
    const limit = Date.now() - IDLE_TIMEOUT_MS;
    for (const conn of this.connections) if (conn.lastInbound < limit) conn.ws.terminate();
  }

  // ---- frames ----

  private onMessage(conn: Connection, data: RawData, isBinary: boolean): void {
    conn.lastInbound = Date.now();
    this.presence.touch(conn.device.deviceId);
    if (isBinary) return;
    const text = Array.isArray(data)
      ? Buffer.concat(data).toString('utf8')
      : Buffer.from(data as Uint8Array).toString('utf8');
    const frame = decodeFrame(text);
    if (!frame) return;
    if (conn.queued >= MAX_QUEUED_FRAMES) {
      this.logger.warn(`device ${conn.device.identifier} floods the socket; closing`);
      conn.ws.terminate();
      return;
    }
    void this.enqueue(conn, () => this.dispatch(conn, frame));
  }

  /** Frames of one connection are handled one after another, as Phoenix channels do. */
  private enqueue(conn: Connection, task: () => Promise<void>): Promise<void> {
    conn.queued++;
    const run = conn.queue.then(async () => {
      try {
        if (conn.ws.readyState === WebSocket.OPEN) await task();
      } catch (err) {
        this.logger.error({ err, device: conn.device.identifier }, 'device message handling failed');
      } finally {
        // An idle connection keeps no promise of its own.
        if (--conn.queued === 0 && conn.queue === run) conn.queue = SETTLED;
      }
    });
    conn.queue = run;
    return run;
  }

  private async dispatch(conn: Connection, frame: PhoenixFrame): Promise<void> {
    // Heartbeats take their turn too: when one is answered, every frame before it has been handled.
    if (frame.topic === 'phoenix') {
      if (frame.event === 'heartbeat') this.send(conn, encodeReply(frame, 'ok', OK_EMPTY.response));
      return;
    }
    if (frame.event === 'phx_join') return this.join(conn, frame);
    if (!conn.topics.has(frame.topic)) return; // never answer a push on a topic that is not joined
    if (frame.event === 'phx_leave') {
      conn.topics.delete(frame.topic);
      this.send(conn, encodeReply(frame, 'ok', {}));
      return;
    }
    switch (frame.topic) {
      case 'device':
        return this.deviceEvent(conn, frame);
      case 'console':
        if (frame.event === 'up' && typeof frame.payload.data === 'string') {
          this.consoleOutput.append(conn.device.deviceId, frame.payload.data.replace(/\0/g, ''));
        }
        return;
      case 'extensions':
        return this.extensionsEvent(conn, frame);
    }
  }

  private async join(conn: Connection, frame: PhoenixFrame): Promise<void> {
    const params = frame.payload;
    switch (frame.topic) {
      case 'device': {
        const metadata = metadataFromJoin(params);
        const wantsKeys =
          params.fwup_public_keys === 'on_connect' || params.archive_public_keys === 'on_connect';
        // One statement: the metadata and presence written, the public keys and the pending update read.
        let joined: Awaited<ReturnType<DeviceLinkService['joinDevice']>>;
        try {
          joined = await this.admission.run(() =>
            this.link.joinDevice(conn.device, metadata, this.instanceId, wantsKeys),
          );
        } catch (err) {
          // Answered, so that NervesHubLink joins again (5 s later); unanswered, it would wait for ever.
          this.logger.warn({ err, device: conn.device.identifier }, 'device join failed');
          this.send(conn, encodeReply(frame, 'error', { error: 'could not connect' }));
          return;
        }
        if (!joined) {
          this.send(conn, encodeReply(frame, 'error', { error: 'could not connect' }));
          return;
        }
        this.presence.joined(conn.device.deviceId);
        conn.firmwareUuid = metadata?.uuid ?? null;
        const downloading = params.currently_downloading_uuid;
        conn.downloadingUuid = typeof downloading === 'string' && downloading !== '' ? downloading : null;
        conn.topics.set('device', frame.joinRef);
        this.send(conn, encodeReply(frame, 'ok', {}));
        await this.afterDeviceJoin(conn, params, joined.keys ?? [], joined.pending);
        return;
      }
      case 'console':
        conn.topics.set('console', frame.joinRef);
        this.send(conn, encodeReply(frame, 'ok', {}));
        return;
      case 'extensions': {
        const offered = Object.entries(params)
          .filter(([key, version]) => SERVER_EXTENSIONS.has(key) && typeof version === 'string')
          .filter(([, version]) => semver.valid(version as string) !== null)
          .map(([key]) => key);
        conn.offered = new Set(offered);
        conn.attached = new Set();
        conn.topics.set('extensions', frame.joinRef);
        this.send(conn, encodeReply(frame, 'ok', offered));
        return;
      }
      default:
        this.send(conn, encodeReply(frame, 'error', { reason: 'unmatched topic' }));
    }
  }

  private async afterDeviceJoin(
    conn: Connection,
    params: Record<string, unknown>,
    keys: string[],
    pending: PendingUpdateRow | null,
  ): Promise<void> {
    if (keys.length > 0) {
      if (params.fwup_public_keys === 'on_connect') this.push(conn, 'device', 'fwup_public_keys', { keys });
      if (params.archive_public_keys === 'on_connect')
        this.push(conn, 'device', 'archive_public_keys', { keys });
    }
    const apiVersion = typeof params.device_api_version === 'string' ? params.device_api_version : '';
    if (semver.valid(apiVersion) && semver.gte(apiVersion, '2.2.0')) {
      this.push(conn, 'device', 'extensions:get', {});
    }
    await this.deliverUpdate(conn, pending);
  }

  /**
   * Pushes the device's pending update, unless it already runs that firmware (then the update is complete) or
   * is downloading it right now after a reconnect.
   */
  private async deliverUpdate(conn: Connection, known?: PendingUpdateRow | null): Promise<void> {
    const pending = known === undefined ? await this.link.pendingUpdate(conn.device.deviceId) : known;
    if (!pending) return;
    if (conn.firmwareUuid === pending.uuid) {
      await this.link.completeUpdate(conn.device.deviceId, pending.firmware_id);
      return;
    }
    if (pending.delivered_at !== null && conn.downloadingUuid === pending.uuid) return;
    this.push(conn, 'device', 'update', updatePayload(pending, this.link.firmwareUrl(pending)));
    await this.link.markDelivered(conn.device.deviceId, pending.firmware_id);
  }

  private async deviceEvent(conn: Connection, frame: PhoenixFrame): Promise<void> {
    const deviceId = conn.device.deviceId;
    switch (frame.event) {
      case 'status_update':
        return this.link.statusUpdate(deviceId, frame.payload);
      case 'fwup_progress':
      case 'update_progress':
        return this.progress(conn, frame.payload);
      default:
        // rebooting, firmware_validated, report_network_interface, scripts/run...: accepted, never answered.
        return;
    }
  }

  /** `fwup_progress`: written when the stage changes or at 100, else at most every 2 s (the last value wins). */
  private async progress(conn: Connection, payload: Record<string, unknown>): Promise<void> {
    const raw = payload.value;
    if (typeof raw !== 'number' || !Number.isFinite(raw)) return;
    const value = Math.max(0, Math.min(100, Math.round(raw)));
    const stage = normaliseStatus(payload.stage);
    const status = stage ?? (value === 100 ? 'completed' : 'updating');
    const state = (conn.progress ??= { status: null, value: null, writtenAt: 0, timer: null });
    const changed = status !== state.status;
    state.status = status;
    state.value = value;
    const deviceId = conn.device.deviceId;
    if (changed || value === 100 || Date.now() - state.writtenAt >= 2000) {
      if (state.timer) clearTimeout(state.timer);
      state.timer = null;
      state.writtenAt = Date.now();
      await this.link.recordProgress(deviceId, status, value);
      return;
    }
    state.timer ??= setTimeout(() => {
      state.timer = null;
      state.writtenAt = Date.now();
      if (state.status !== null) {
        this.link
          .recordProgress(deviceId, state.status, state.value)
          .catch((err: unknown) => this.logger.warn({ err, deviceId }, 'progress write failed'));
      }
    }, 2000);
  }

  private async extensionsEvent(conn: Connection, frame: PhoenixFrame): Promise<void> {
    const split = frame.event.indexOf(':');
    const key = split < 0 ? frame.event : frame.event.slice(0, split);
    const event = split < 0 ? '' : frame.event.slice(split + 1);
    if (!conn.offered?.has(key)) {
      // The one reply a device expects: it detaches the extension (device-protocol.md 5.1).
      if (frame.ref !== null) this.send(conn, encodeReply(frame, 'error', 'detach'));
      return;
    }
    if (event === 'attached') {
      (conn.attached ??= new Set()).add(key);
      if (key === 'network_identity') this.push(conn, 'extensions', 'network_identity:request', {});
      return;
    }
    if (event === 'detached') {
      conn.attached?.delete(key);
      return;
    }
    if (!conn.attached?.has(key)) return;
    if (key === 'network_identity' && event === 'report') {
      // With a slot free the report is written in turn, as any frame; otherwise it must not hold up the frames
      // behind it (heartbeats: NervesHubLink drops a socket whose heartbeat goes unanswered for 30 s).
      const inTurn = this.admission.active < this.admission.limit;
      const written = this.queueIdentityReport(conn, frame.payload);
      if (inTurn) await written;
    }
  }

  /**
   * Identity reports are written in the admission's background lane: during a storm they wait (one at a time)
   * until the handshakes and joins have passed. Reports of one connection are written in order; a newer one
   * waiting replaces an older one. Resolves once the connection's reports are written.
   */
  private queueIdentityReport(conn: Connection, payload: Record<string, unknown>): Promise<void> {
    const waiting = this.identityReports.get(conn);
    if (waiting) {
      waiting.payload = payload;
      return waiting.written;
    }
    const entry: { payload: Record<string, unknown> | null; written: Promise<void> } = {
      payload,
      written: SETTLED,
    };
    this.identityReports.set(conn, entry);
    entry.written = this.admission.run(async () => {
      try {
        for (let next = entry.payload; next !== null && !this.stopping; next = entry.payload) {
          entry.payload = null;
          await this.link
            .reportIdentities(conn.device, next)
            .catch((err: unknown) =>
              this.logger.warn({ err, device: conn.device.identifier }, 'network identity report failed'),
            );
        }
      } finally {
        this.identityReports.delete(conn);
      }
    }, 'background');
    return entry.written;
  }

  private push(conn: Connection, topic: string, event: string, payload: unknown): void {
    this.send(conn, encodePush(conn.topics.get(topic) ?? null, topic, event, payload));
  }

  private send(conn: Connection, text: string): void {
    if (conn.ws.readyState === WebSocket.OPEN) conn.ws.send(text);
  }

  // ---- bus ----

  /**
   * Other instances close their sockets of the device. Published at once when no `closes` message is on its
   * way; otherwise gathered until it is sent, then all in one message (a storm costs one NOTIFY per batch, not
   * one per connection, and a lone connection waits for nothing).
   */
  private closeElsewhere(deviceId: string): void {
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
        // The newer connections are on the publishing instance (this one replaced its own in `accept`).
        if (from === this.instanceId || !Array.isArray(message.devices)) return;
        for (const id of message.devices) {
          const conn = this.byDevice.get(String(id));
          if (conn) void this.close(conn, 1000, 'replaced by a newer connection');
        }
        return;
      }
      case 'update': {
        const conn = this.byDevice.get(deviceId);
        if (conn?.topics.has('device')) void this.enqueue(conn, () => this.deliverUpdate(conn));
        return;
      }
      case 'console':
        if (message.to === this.instanceId) this.consolePart(from, deviceId, message);
        return;
      case 'console-ack':
        if (message.to === this.instanceId) this.consoleWaiters.get(message.request)?.(message.ok);
        return;
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
    const ok = this.sendConsoleHere(deviceId, entry.parts.join(''));
    this.bus
      .publish(deviceId, { kind: 'console-ack', to: from, request, ok })
      .catch((err: unknown) => this.logger.warn({ err }, 'bus publish failed'));
  }
}

const SETTLED = Promise.resolve();

function destroyOnError(this: Duplex): void {
  this.destroy();
}

/** Refuses an upgrade with a plain HTTP response (with `Date`, so devices can correct their clock). */
function reject(socket: Duplex, status: number, body = '', headers: Record<string, string> = {}): void {
  if (socket.destroyed) return;
  const lines = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}`,
    `Date: ${new Date().toUTCString()}`,
    'Connection: close',
    `Content-Length: ${Buffer.byteLength(body)}`,
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
  ];
  if (body !== '') lines.push('Content-Type: text/plain; charset=utf-8');
  socket.once('finish', () => socket.destroy());
  socket.end(`${lines.join('\r\n')}\r\n\r\n${body}`);
}
