import { Inject, Injectable, Logger } from '@nestjs/common';
import semver from 'semver';
import { allowedExtensions } from '../../common/extensions/extension-settings';
import { APP_CONFIG, type AppConfig } from '../../config/config';
import { DeviceRecordsService } from '../../devices/device-records.service';
import { DeviceReportsService } from '../../telemetry/device-reports.service';
import { Admission } from '../admission';
import { type DeviceConnection, GATEWAY_LOG_CONTEXT } from '../device-connection';
import { DeviceConnections } from '../device-connections';
import { DeviceLinkService } from '../device-link.service';
import { encodeReply, type PhoenixFrame } from '../phoenix-frames';
import { LiveEvents } from '../../live/live-events';

/** Extensions this server offers (device-protocol.md 5); `local_shell` is not served. */
export const SERVER_EXTENSIONS = new Set(['health', 'geo', 'logging', 'network_identity']);
/** NervesHub's `~> 0.0.1` for every extension. */
const SUPPORTED_VERSIONS = '>=0.0.1 <0.1.0';

const SETTLED = Promise.resolve();

/** An identity report not yet written (the newest of its connection) and the task writing them. */
interface PendingReports {
  payload: Record<string, unknown> | null;
  written: Promise<void>;
}

/**
 * The `extensions` channel (device-protocol.md 5): `network_identity` (iroh keys to IrohClaimsService, the other
 * services' to the telemetry), `health`, `geo` and `logging` (to DeviceReportsService).
 */
@Injectable()
export class ExtensionsChannel {
  private readonly logger = new Logger(GATEWAY_LOG_CONTEXT);
  /** Identity reports not yet written, for each connection's one background task. */
  private readonly identityReports = new Map<DeviceConnection, PendingReports>();
  /** The repeating requests (`health:check`, `geo:location:request`) of each connection, by extension. */
  private readonly timers = new WeakMap<DeviceConnection, Map<string, NodeJS.Timeout>>();
  private readonly healthIntervalMs: number;
  private readonly geoIntervalMs: number;

  constructor(
    private readonly connections: DeviceConnections,
    private readonly link: DeviceLinkService,
    private readonly admission: Admission,
    private readonly devices: DeviceRecordsService,
    private readonly reports: DeviceReportsService,
    private readonly live: LiveEvents,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.healthIntervalMs = config.telemetry.healthIntervalMinutes * 60_000;
    this.geoIntervalMs = config.telemetry.geoIntervalMinutes * 60_000;
  }

  /**
   * Offers what the device asks for with a version this server supports, that this server has and that the
   * device's settings allow (enabled on its product, not disabled on the device). Reply: a JSON array of keys.
   */
  async join(conn: DeviceConnection, frame: PhoenixFrame): Promise<void> {
    let allowed: Set<string>;
    try {
      const settings = await this.admission.run(() => this.devices.extensionSettings(conn.deviceId));
      allowed = settings ? allowedExtensions(settings.product, settings.device) : new Set();
    } catch (err) {
      this.logger.warn({ err, device: conn.device.identifier }, 'extension settings unavailable');
      allowed = new Set();
    }
    const offered = Object.entries(frame.payload)
      .filter(
        ([key, version]) => SERVER_EXTENSIONS.has(key) && allowed.has(key) && typeof version === 'string',
      )
      .filter(([, version]) => semver.valid(version as string) !== null)
      .filter(([, version]) => semver.satisfies(version as string, SUPPORTED_VERSIONS))
      .map(([key]) => key);
    conn.offered = new Set(offered);
    conn.attached = new Set();
    // A join again (the device rejoined the topic) starts from nothing attached.
    for (const key of this.timers.get(conn)?.keys() ?? []) this.stopTimer(conn, key);
    conn.topics.set('extensions', frame.joinRef);
    conn.send(encodeReply(frame, 'ok', offered));
  }

  /** An event on the joined channel: `<extension>:<event>`. */
  async handle(conn: DeviceConnection, frame: PhoenixFrame): Promise<void> {
    const split = frame.event.indexOf(':');
    const key = split < 0 ? frame.event : frame.event.slice(0, split);
    const event = split < 0 ? '' : frame.event.slice(split + 1);
    if (!conn.offered?.has(key)) {
      // The one reply a device expects: it detaches the extension (device-protocol.md 5.1).
      if (frame.ref !== null) conn.send(encodeReply(frame, 'error', 'detach'));
      return;
    }
    if (event === 'attached') {
      (conn.attached ??= new Set()).add(key);
      this.attached(conn, key);
      return;
    }
    if (event === 'detached' || event === 'error') {
      conn.attached?.delete(key);
      this.stopTimer(conn, key);
      return;
    }
    if (!conn.attached?.has(key)) return;
    const device = conn.device;
    if (key === 'health' && event === 'report') return this.reports.healthReport(device, frame.payload);
    if (key === 'geo' && event === 'location:update') return this.reports.location(device, frame.payload);
    if (key === 'logging' && event === 'send') {
      const line = this.reports.logLine(device, frame.payload);
      if (line) this.live.deviceLog(device, line);
      return;
    }
    if (key === 'network_identity' && event === 'report') {
      // With a slot free the report is written in turn, as any frame; otherwise it must not hold up the frames
      // behind it (heartbeats: NervesHubLink drops a socket whose heartbeat goes unanswered for 30 s).
      const inTurn = this.admission.active < this.admission.limit;
      const written = this.queueIdentityReport(conn, frame.payload);
      if (inTurn) await written;
    }
  }

  /** The attach hook: the first request, then the repeating ones (NervesHub's `attach` of each extension). */
  private attached(conn: DeviceConnection, key: string): void {
    switch (key) {
      case 'network_identity':
        conn.push('extensions', 'network_identity:request', {});
        return;
      case 'health':
        conn.push('extensions', 'health:check', {});
        this.startTimer(conn, key, 'health:check', this.healthIntervalMs);
        return;
      case 'geo':
        conn.push('extensions', 'geo:location:request', {});
        if (this.geoIntervalMs > 0) this.startTimer(conn, key, 'geo:location:request', this.geoIntervalMs);
        return;
    }
  }

  private startTimer(conn: DeviceConnection, key: string, event: string, intervalMs: number): void {
    let timers = this.timers.get(conn);
    if (!timers) {
      const created = new Map<string, NodeJS.Timeout>();
      timers = created;
      this.timers.set(conn, created);
      conn.ws.once('close', () => {
        for (const timer of created.values()) clearInterval(timer);
        created.clear();
      });
    }
    if (timers.has(key)) clearInterval(timers.get(key));
    const timer = setInterval(() => conn.push('extensions', event, {}), intervalMs);
    timer.unref();
    timers.set(key, timer);
  }

  private stopTimer(conn: DeviceConnection, key: string): void {
    const timers = this.timers.get(conn);
    clearInterval(timers?.get(key));
    timers?.delete(key);
  }

  /**
   * Identity reports are written in the admission's background lane: during a storm they wait (one at a time)
   * until the handshakes and joins have passed. Reports of one connection are written in order; a newer one
   * waiting replaces an older one. Resolves once the connection's reports are written.
   */
  private queueIdentityReport(conn: DeviceConnection, payload: Record<string, unknown>): Promise<void> {
    const waiting = this.identityReports.get(conn);
    if (waiting) {
      waiting.payload = payload;
      return waiting.written;
    }
    const entry: PendingReports = { payload, written: SETTLED };
    this.identityReports.set(conn, entry);
    entry.written = this.admission.run(async () => {
      try {
        for (
          let next = entry.payload;
          next !== null && !this.connections.shuttingDown;
          next = entry.payload
        ) {
          entry.payload = null;
          await this.link
            .reportIdentities(conn.device, next)
            .catch((err: unknown) =>
              this.logger.warn({ err, device: conn.device.identifier }, 'network identity report failed'),
            );
          await this.reports
            .identities(conn.device, next)
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
}
