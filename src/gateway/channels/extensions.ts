import { Injectable, Logger } from '@nestjs/common';
import semver from 'semver';
import { Admission } from '../admission';
import { type DeviceConnection, GATEWAY_LOG_CONTEXT } from '../device-connection';
import { DeviceConnections } from '../device-connections';
import { DeviceLinkService } from '../device-link.service';
import { encodeReply, type PhoenixFrame } from '../phoenix-frames';

/** Extensions this server offers (device-protocol.md 5). */
export const SERVER_EXTENSIONS = new Set(['network_identity']);

const SETTLED = Promise.resolve();

/** An identity report not yet written (the newest of its connection) and the task writing them. */
interface PendingReports {
  payload: Record<string, unknown> | null;
  written: Promise<void>;
}

/** The `extensions` channel (device-protocol.md 5): only `network_identity`, whose reports go to iroh. */
@Injectable()
export class ExtensionsChannel {
  private readonly logger = new Logger(GATEWAY_LOG_CONTEXT);
  /** Identity reports not yet written, for each connection's one background task. */
  private readonly identityReports = new Map<DeviceConnection, PendingReports>();

  constructor(
    private readonly connections: DeviceConnections,
    private readonly link: DeviceLinkService,
    private readonly admission: Admission,
  ) {}

  /** Offers the extensions the device asks for with a valid version and this server has. */
  join(conn: DeviceConnection, frame: PhoenixFrame): void {
    const offered = Object.entries(frame.payload)
      .filter(([key, version]) => SERVER_EXTENSIONS.has(key) && typeof version === 'string')
      .filter(([, version]) => semver.valid(version as string) !== null)
      .map(([key]) => key);
    conn.offered = new Set(offered);
    conn.attached = new Set();
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
      if (key === 'network_identity') conn.push('extensions', 'network_identity:request', {});
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
        }
      } finally {
        this.identityReports.delete(conn);
      }
    }, 'background');
    return entry.written;
  }
}
