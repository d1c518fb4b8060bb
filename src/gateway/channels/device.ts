import { Injectable, Logger } from '@nestjs/common';
import semver from 'semver';
import { LiveEvents } from '../../live/live-events';
import { Admission } from '../admission';
import { ArchiveDelivery } from '../archive-delivery';
import { type DeviceConnection, GATEWAY_LOG_CONTEXT } from '../device-connection';
import { DeviceBus } from '../device-bus';
import {
  DeviceLinkService,
  metadataFromJoin,
  normaliseStatus,
  type PendingUpdateRow,
} from '../device-link.service';
import { encodeReply, type PhoenixFrame } from '../phoenix-frames';
import { PresenceService } from '../presence.service';
import { RolloutSignals } from '../rollout-signals';
import { ScriptRunner } from '../script-runner';

/**
 * The `device` channel (device-protocol.md 3): the join stores the firmware metadata and answers with the public
 * keys and the pending update; `status_update` and `fwup_progress` record the update's progress.
 */
@Injectable()
export class DeviceChannel {
  private readonly logger = new Logger(GATEWAY_LOG_CONTEXT);

  constructor(
    private readonly link: DeviceLinkService,
    private readonly presence: PresenceService,
    private readonly admission: Admission,
    private readonly bus: DeviceBus,
    private readonly signals: RolloutSignals,
    private readonly scripts: ScriptRunner,
    private readonly live: LiveEvents,
    private readonly archives: ArchiveDelivery,
  ) {}

  async join(conn: DeviceConnection, frame: PhoenixFrame): Promise<void> {
    const params = frame.payload;
    const metadata = metadataFromJoin(params);
    const wantsKeys = params.fwup_public_keys === 'on_connect' || params.archive_public_keys === 'on_connect';
    // One statement: the metadata and presence written, the public keys and the pending update read.
    let joined: Awaited<ReturnType<DeviceLinkService['joinDevice']>>;
    this.presence.joining(conn.deviceId);
    try {
      joined = await this.admission.run(() =>
        this.link.joinDevice(conn.device, metadata, this.bus.instanceId, wantsKeys),
      );
    } catch (err) {
      // Answered, so that NervesHubLink joins again (5 s later); unanswered, it would wait for ever.
      this.logger.warn({ err, device: conn.device.identifier }, 'device join failed');
      conn.send(encodeReply(frame, 'error', { error: 'could not connect' }));
      return;
    }
    if (!joined) {
      conn.send(encodeReply(frame, 'error', { error: 'could not connect' }));
      return;
    }
    this.presence.joined(conn.deviceId);
    conn.firmwareUuid = metadata?.uuid ?? null;
    conn.fwupVersion = metadata?.fwup_version ?? null;
    const downloading = params.currently_downloading_uuid;
    conn.downloadingUuid = typeof downloading === 'string' && downloading !== '' ? downloading : null;
    conn.topics.set('device', frame.joinRef);
    conn.send(encodeReply(frame, 'ok', {}));
    this.live.deviceConnection(conn.device, 'connected');
    await this.afterJoin(conn, params, joined.keys ?? [], joined.pending, joined.updateAttemptsCleared);
    this.signals.deviceOnline(conn.deviceId);
  }

  private async afterJoin(
    conn: DeviceConnection,
    params: Record<string, unknown>,
    keys: string[],
    pending: PendingUpdateRow | null,
    attemptsCleared: boolean,
  ): Promise<void> {
    if (keys.length > 0) {
      if (params.fwup_public_keys === 'on_connect') conn.push('device', 'fwup_public_keys', { keys });
      if (params.archive_public_keys === 'on_connect') conn.push('device', 'archive_public_keys', { keys });
    }
    const apiVersion = typeof params.device_api_version === 'string' ? params.device_api_version : '';
    await this.archives.joined(conn, apiVersion);
    conn.runsScripts = semver.valid(apiVersion) !== null && semver.gte(apiVersion, '2.1.0');
    if (semver.valid(apiVersion) && semver.gte(apiVersion, '2.2.0')) {
      conn.push('device', 'extensions:get', {});
    }
    await this.deliverUpdate(conn, pending, false, attemptsCleared);
  }

  /**
   * Pushes the device's pending update, unless it already runs that firmware (then the update is complete) or
   * is downloading it right now after a reconnect. `undeliveredOnly` (the deployment orchestrator's pushes): not
   * when it was already sent, so that a push repeated for safety never becomes a second `update` frame (pushes
   * to one connection run one after another, so the second one reads the first one's `delivered_at`).
   * `attemptsCleared`: the join that read `known` cleared the device's update attempts (it runs the update).
   */
  async deliverUpdate(
    conn: DeviceConnection,
    known?: PendingUpdateRow | null,
    undeliveredOnly = false,
    attemptsCleared = false,
  ): Promise<void> {
    const pending = known === undefined ? await this.link.pendingUpdate(conn.deviceId) : known;
    if (!pending) return;
    if (undeliveredOnly && pending.delivered_at !== null) return;
    if (conn.firmwareUuid === pending.uuid) {
      await this.link.completeUpdate(conn.deviceId, pending.firmware_id, attemptsCleared);
      this.live.deviceUpdate(conn.device, 'updated', 100, pending.uuid);
      return;
    }
    conn.updatingUuid = pending.uuid;
    if (pending.delivered_at !== null && conn.downloadingUuid === pending.uuid) return;
    conn.push('device', 'update', await this.link.updateMessage(pending, conn));
    this.live.deviceUpdate(conn.device, 'pending', null, pending.uuid);
    await this.link.markDelivered(conn.deviceId, pending.firmware_id);
  }

  /** An event on the joined channel. */
  async handle(conn: DeviceConnection, frame: PhoenixFrame): Promise<void> {
    switch (frame.event) {
      case 'status_update':
        await this.link.statusUpdate(conn.deviceId, frame.payload);
        this.statusChanged(conn, normaliseStatus(frame.payload.status));
        return;
      case 'fwup_progress':
      case 'update_progress':
        return this.progress(conn, frame.payload);
      case 'scripts/run':
        this.scripts.answered(conn, frame.payload);
        return;
      default:
        // rebooting, firmware_validated, report_network_interface, scripts/run...: accepted, never answered.
        return;
    }
  }

  /** What a `status_update` means for the console's live view of the update. */
  private statusChanged(conn: DeviceConnection, status: string | null): void {
    const uuid = conn.updatingUuid ?? conn.downloadingUuid;
    switch (status) {
      case 'failed':
      case 'ignored':
        this.live.deviceUpdate(conn.device, 'failed', null, uuid);
        return;
      case 'rescheduled':
        this.live.deviceUpdate(conn.device, 'pending', null, uuid);
        return;
      case 'completed':
        // Applied; `updated` once the device is back running it.
        this.live.deviceUpdate(conn.device, 'updating', 100, uuid);
        return;
      case null:
        return;
      default:
        // received, started, downloading...: the percentage comes with `fwup_progress`.
        this.live.deviceUpdate(conn.device, 'updating', null, uuid);
    }
  }

  /** The connection closed: a progress write still waiting is dropped, a script run ends unanswered. */
  closed(conn: DeviceConnection): void {
    if (conn.progress?.timer) clearTimeout(conn.progress.timer);
    this.scripts.closed(conn);
  }

  /** `fwup_progress`: written when the stage changes or at 100, else at most every 2 s (the last value wins). */
  private async progress(conn: DeviceConnection, payload: Record<string, unknown>): Promise<void> {
    const raw = payload.value;
    if (typeof raw !== 'number' || !Number.isFinite(raw)) return;
    const value = Math.max(0, Math.min(100, Math.round(raw)));
    const stage = normaliseStatus(payload.stage);
    const status = stage ?? (value === 100 ? 'completed' : 'updating');
    const state = (conn.progress ??= { status: null, value: null, writtenAt: 0, timer: null });
    const changed = status !== state.status;
    state.status = status;
    state.value = value;
    const deviceId = conn.deviceId;
    // Every report goes live (a device reports each percentage at most once); the database gets fewer.
    this.live.deviceUpdate(conn.device, 'updating', value, conn.updatingUuid ?? conn.downloadingUuid);
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
}
