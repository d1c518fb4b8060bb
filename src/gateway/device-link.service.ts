import { Inject, Injectable, Logger } from '@nestjs/common';
import type { AuthenticatedDevice } from '../device-auth/device-authenticator';
import {
  type DeviceJoin,
  DeviceRecordsService,
  type FirmwareMetadata,
} from '../devices/device-records.service';
import { DeploymentMembershipService } from '../deployments/deployment-membership.service';
import { chipPlatform } from '../firmware/esp-idf/esp-app-image';
import { uuidFromDigest } from '../firmware/formats/firmware-uuid';
import { FILE_EXTENSIONS } from '../firmware/firmware-inspection';
import { FirmwareRecordsService, type PendingUpdateRow } from '../firmware/firmware-records.service';
import { normaliseFirmwareVersion } from '../firmware/formats/firmware-version';
import { FirmwareStorage } from '../firmware/storage/firmware-storage';
import { UUID_PATTERN } from '../common/values';
import {
  type DeliverableDelta,
  FirmwareDeltaRecords,
} from '../firmware/deltas/firmware-delta-records.service';
import { fwupCanApply } from '../firmware/fwup/delta-features';
import { IrohClaimsService } from '../iroh/iroh-claims.service';
import { deltaDownloadPath, DownloadLinkSigner } from './download-links';
import { LINK_SIGNER } from './firmware-downloads';
import { CoalescedProgress } from './coalesced-progress';
import { RolloutSignals } from './rollout-signals';
import { TurnBatch } from './turn-batch';

export type { PendingUpdateRow } from '../firmware/firmware-records.service';

/** Join key → stored `firmware_metadata` field (device-protocol.md 3.1). */
export const JOIN_METADATA_KEYS: Readonly<Record<string, string>> = {
  nerves_fw_uuid: 'uuid',
  nerves_fw_architecture: 'architecture',
  nerves_fw_platform: 'platform',
  nerves_fw_product: 'product',
  nerves_fw_version: 'version',
  nerves_fw_author: 'author',
  nerves_fw_description: 'description',
  fwup_version: 'fwup_version',
  nerves_fw_vcs_identifier: 'vcs_identifier',
  nerves_fw_misc: 'misc',
};

const MAX_METADATA_VALUE = 1024;

/**
 * A join string value as stored (in jsonb): NULs dropped, unpaired surrogates replaced by U+FFFD (jsonb refuses
 * both), bounded; anything else is null.
 */
function joinText(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  return value
    .replace(/\0/g, '')
    .replace(/\p{Cs}/gu, '\uFFFD')
    .slice(0, MAX_METADATA_VALUE)
    .replace(/\p{Cs}$/u, '');
}

/** The firmware update tools a device may name in `update_tool`, as the product setting names them. */
export type DeviceUpdateTool = 'fwup' | 'esp-idf' | 'atomvm';

/**
 * Which tool's keys a join carries: an explicit `update_tool`, else the keys present (`nerves_fw_uuid` → fwup,
 * `esp_idf_*` → ESP-IDF, `atomvm_*` → AtomVM), else fwup, as NervesHub chooses.
 */
export function joinUpdateTool(params: Record<string, unknown>): DeviceUpdateTool {
  const named = params.update_tool;
  if (named === 'fwup' || named === 'esp-idf' || named === 'atomvm') return named;
  if (params.nerves_fw_uuid !== undefined) return 'fwup';
  if (params.esp_idf_app_elf_sha256 !== undefined || params.esp_idf_project_name !== undefined)
    return 'esp-idf';
  if (params.atomvm_avm_sha256 !== undefined || params.atomvm_app_name !== undefined) return 'atomvm';
  return 'fwup';
}

/**
 * The uuid an ESP-IDF or AtomVM device's hash stands for: its first 16 bytes as 8-4-4-4-12 hex, the rule the
 * upload applied to the image (`app_elf_sha256`, or the packbeam's SHA-256). Null unless it is hex of 16+ bytes.
 */
function uuidFromHash(value: unknown): string | null {
  if (typeof value !== 'string' || !/^(?:[0-9a-fA-F]{2}){16,64}$/.test(value)) return null;
  return uuidFromDigest(Buffer.from(value, 'hex'));
}

function chipFromJoin(value: unknown): { platform: string; architecture: string } | null {
  const id =
    typeof value === 'number'
      ? value
      : typeof value === 'string' && /^\d{1,5}$/.test(value)
        ? Number(value)
        : NaN;
  return Number.isInteger(id) && id >= 0 && id <= 0xffff ? chipPlatform(id) : null;
}

/** A reported version as the upload would have recorded it (normalised), or as sent when it cannot be. */
function versionFromJoin(value: unknown, espIdf: boolean): string | null {
  const text = joinText(value);
  return text === null ? null : (normaliseFirmwareVersion(text.trim(), { espIdf }) ?? text);
}

/**
 * The firmware metadata a `device` join reports, in the fields of a firmware record, or null when it names no
 * firmware (no uuid: `nerves_fw_uuid` for fwup, a hash for ESP-IDF and AtomVM, from which the uuid is derived as
 * the upload derived it, so that a device running an uploaded image reports that image's uuid).
 */
export function metadataFromJoin(params: Record<string, unknown>): FirmwareMetadata | null {
  switch (joinUpdateTool(params)) {
    case 'fwup': {
      const uuid = params.nerves_fw_uuid;
      if (typeof uuid !== 'string' || uuid.trim() === '') return null;
      const metadata: FirmwareMetadata = {};
      for (const [joinKey, field] of Object.entries(JOIN_METADATA_KEYS))
        metadata[field] = joinText(params[joinKey]);
      metadata.uuid = (metadata.uuid ?? '').toLowerCase();
      return metadata;
    }
    case 'esp-idf': {
      const uuid = uuidFromHash(params.esp_idf_app_elf_sha256);
      if (uuid === null) return null;
      const chip = chipFromJoin(params.esp_idf_chip_id);
      const idf = joinText(params.esp_idf_ver);
      return {
        uuid,
        architecture: chip?.architecture ?? null,
        platform: chip?.platform ?? null,
        product: joinText(params.esp_idf_project_name),
        version: versionFromJoin(params.esp_idf_version, true),
        author: null,
        description: idf === null ? null : `ESP-IDF ${idf}`,
        fwup_version: null,
        vcs_identifier: null,
        misc: null,
      };
    }
    case 'atomvm': {
      const uuid = uuidFromHash(params.atomvm_avm_sha256);
      if (uuid === null) return null;
      const vm = joinText(params.atomvm_version);
      return {
        uuid,
        architecture: 'beam',
        platform: 'atomvm',
        product: joinText(params.atomvm_app_name),
        version: versionFromJoin(params.atomvm_app_version, false),
        author: null,
        description: vm === null ? null : `AtomVM ${vm}`,
        fwup_version: null,
        vcs_identifier: null,
        misc: null,
      };
    }
  }
}

/** The `update` payload with NervesHub's keys (device-protocol.md 3.2, 7.1); a manual push has no deployment. */
export function updatePayload(row: PendingUpdateRow, firmwareUrl: string): Record<string, unknown> {
  return {
    update_available: true,
    firmware_url: firmwareUrl,
    firmware_meta: {
      architecture: row.architecture,
      author: row.author,
      description: row.description,
      misc: row.misc,
      platform: row.platform,
      product: row.product_name,
      uuid: row.uuid,
      vcs_identifier: row.vcs_identifier,
      version: row.version,
    },
    size: Number(row.size),
    checksum: row.sha256.toUpperCase(),
    partials_checksums: row.chunk_sha256.map((sum) => sum.toUpperCase()),
    // The deployment group's id for an orchestrated update (NervesHub sends its deployment's integer id).
    deployment_id: row.deployment_group_id === null ? null : Number(row.deployment_group_id),
  };
}

/** A ready fwup delta, as the `update` message sends it. */
type ReadyDelta = DeliverableDelta & {
  id: string;
  storage_key: string;
  sha256: string;
  fwup_version: string;
};

/**
 * The `update` payload of an update sent as an fwup delta, as NervesHub sends it: the target's `firmware_meta`,
 * the delta's link, size and checksums (the bytes the device downloads).
 */
export function deltaUpdatePayload(
  row: PendingUpdateRow,
  delta: ReadyDelta,
  url: string,
): Record<string, unknown> {
  return {
    ...updatePayload(row, url),
    size: Number(delta.size),
    checksum: delta.sha256.toUpperCase(),
    partials_checksums: (delta.chunk_sha256 ?? []).map((sum) => sum.toUpperCase()),
  };
}

const UPDATE_STATUSES = new Set([
  'received',
  'started',
  'downloading',
  'updating',
  'completed',
  'failed',
  'ignored',
  'rescheduled',
]);

/** The update status a device's `status_update` names ("fwup error ..." counts as failed). */
export function normaliseStatus(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  const status = value.trim().toLowerCase();
  if (status.includes('fwup error')) return 'failed';
  return UPDATE_STATUSES.has(status) ? status : status.slice(0, 64) || null;
}

/** What the device channel stores and reads: firmware metadata, pending updates, signing keys, identities. */
@Injectable()
export class DeviceLinkService {
  private readonly logger = new Logger(DeviceLinkService.name);

  constructor(
    private readonly devices: DeviceRecordsService,
    private readonly iroh: IrohClaimsService,
    @Inject(LINK_SIGNER) private readonly links: DownloadLinkSigner,
    private readonly firmwares: FirmwareRecordsService,
    private readonly signals: RolloutSignals,
    private readonly membership: DeploymentMembershipService,
    private readonly storage: FirmwareStorage,
    private readonly deltas: FirmwareDeltaRecords,
  ) {}

  private readonly progress = new CoalescedProgress((entries) =>
    this.firmwares.recordUpdateProgress(entries),
  );
  /** The reads and the delivery marks of the pending updates pushed in one turn (a claim's devices): one statement each. */
  private readonly pendingReads = new TurnBatch<string, PendingUpdateRow | null>((deviceIds) =>
    this.firmwares.findPendingUpdates(deviceIds),
  );
  /** The delta lookups (and requests) of the updates pushed in one turn: one statement. */
  private readonly deltaReads = new TurnBatch<
    { targetId: string; sourceUuid: string },
    DeliverableDelta | null
  >((pairs) => this.deltas.forDelivery(pairs));
  private readonly deliveries = new TurnBatch<{ deviceId: string; firmwareId: string }, void>(
    async (sent) => {
      await this.firmwares.markUpdatesDelivered(sent);
      return sent.map(() => undefined);
    },
  );

  /**
   * A device's `device` channel join in one statement: stores the metadata (unchanged when the join names no
   * firmware), marks the device connected on `instanceId`, and reads what the join answers with: the org's fwup
   * public keys (when `withKeys`) and the device's pending update. Null when the device no longer exists.
   */
  async joinDevice(
    device: { deviceId: string; orgId: string },
    metadata: FirmwareMetadata | null,
    instanceId: string,
    withKeys: boolean,
  ): Promise<DeviceJoin | null> {
    const joined = await this.devices.recordJoin(device, metadata, instanceId, withKeys);
    // Its firmware may have changed: its deployment group follows (one more statement, only when it has a group
    // or its product has an active group that takes devices). A failure here never fails the join.
    if (joined?.membershipCheck) {
      await this.membership.recomputeDevice(device.deviceId).catch((err: unknown) => {
        this.logger.warn(
          { err, deviceId: device.deviceId },
          'deployment group membership not updated on join',
        );
      });
    }
    return joined;
  }

  pendingUpdate(deviceId: string): Promise<PendingUpdateRow | null> {
    return this.pendingReads.call(deviceId);
  }

  /**
   * Where the device downloads the update: straight from the store when it gives links (an S3 presigned GET),
   * else fleethub's own signed link.
   */
  async firmwareUrl(row: PendingUpdateRow): Promise<string> {
    const direct = await this.storage.directDownloadUrl(row.storage_key);
    return direct ?? this.links.url(row.firmware_id, `${row.uuid}${FILE_EXTENSIONS[row.tool]}`);
  }

  /**
   * The `update` message for the pending update: the fwup delta from the firmware the device runs when the update
   * allows deltas (an orchestrated update of a group with `delta_updatable`), the delta is ready and the device's
   * fwup can apply it; else the full file. A device that could use a delta and has none yet requests it.
   */
  async updateMessage(
    row: PendingUpdateRow,
    device: { firmwareUuid: string | null; fwupVersion: string | null },
  ): Promise<Record<string, unknown>> {
    const delta = await this.readyDelta(row, device);
    if (delta === null) return updatePayload(row, await this.firmwareUrl(row));
    const direct = await this.storage.directDownloadUrl(delta.storage_key);
    const url = direct ?? this.links.signedUrl(deltaDownloadPath(delta.id, `${row.uuid}.fw`));
    return deltaUpdatePayload(row, delta, url);
  }

  /** The ready delta the device can apply for this update, or null (then the full file: never a broken one). */
  private async readyDelta(
    row: PendingUpdateRow,
    device: { firmwareUuid: string | null; fwupVersion: string | null },
  ): Promise<ReadyDelta | null> {
    const source = device.firmwareUuid;
    const required = row.delta_fwup_version;
    if (!row.delta_allowed || row.tool !== 'fwup' || required === null) return null;
    if (source === null || source === row.uuid || !UUID_PATTERN.test(source)) return null;
    // The device's fwup must apply deltas to this firmware (NervesHub takes an unknown version as the oldest).
    if (!fwupCanApply(device.fwupVersion, required)) return null;
    let delta: DeliverableDelta | null;
    try {
      delta = await this.deltaReads.call({ targetId: row.firmware_id, sourceUuid: source.toLowerCase() });
    } catch (err) {
      this.logger.warn({ err, firmwareId: row.firmware_id }, 'delta lookup failed: the full file is sent');
      return null;
    }
    if (
      delta?.state !== 'ready' ||
      delta.id === null ||
      delta.storage_key === null ||
      delta.sha256 === null ||
      delta.fwup_version === null ||
      !fwupCanApply(device.fwupVersion, delta.fwup_version)
    )
      return null;
    return delta as ReadyDelta;
  }

  markDelivered(deviceId: string, firmwareId: string): Promise<void> {
    return this.deliveries.call({ deviceId, firmwareId });
  }

  /**
   * The device runs the target firmware: the update is complete (the deployment orchestrator is told).
   * `attemptsCleared`: the device's join cleared its update attempts already.
   */
  async completeUpdate(deviceId: string, firmwareId: string, attemptsCleared = false): Promise<void> {
    const groupId = await this.firmwares.completeUpdateOf(deviceId, firmwareId);
    this.logger.log(`device ${deviceId} completed its update`);
    if (groupId !== null) this.signals.updateCompleted({ deviceId, groupId, attemptsCleared });
  }

  /**
   * A `status_update` for the delivered update. `failed` and `ignored` end it (the row is deleted, as NervesHub
   * does, by the deployment orchestrator when there is one, which records the failure with it); `rescheduled` puts it back in the queue for the next connection; the rest are recorded.
   */
  async statusUpdate(deviceId: string, payload: Record<string, unknown>): Promise<void> {
    const status = normaliseStatus(payload.status);
    if (status === null) return;
    if (status === 'failed' || status === 'ignored') {
      const reason = typeof payload.reason === 'string' ? payload.reason.slice(0, 500) : '';
      const handled = this.signals.updateFailed(deviceId, status);
      const ended = handled ? await handled : (await this.firmwares.endDeliveredUpdateOf(deviceId)) !== null;
      if (ended) this.logger.warn(`device ${deviceId} update ${status}: ${reason}`);
      return;
    }
    if (status === 'rescheduled') {
      await this.firmwares.rescheduleDeliveredUpdate(deviceId);
      return;
    }
    await this.recordProgress(deviceId, status, null);
  }

  /** Records the status and, when given, the progress percentage of the delivered update. */
  recordProgress(deviceId: string, status: string, progress: number | null): Promise<void> {
    return this.progress.record(deviceId, status, progress);
  }

  /** The instance holding the device's socket according to the database, or null when not connected. */
  holder(deviceId: string): Promise<string | null> {
    return this.devices.holder(deviceId);
  }

  /** `network_identity:report`: iroh entries go to the iroh claim rules; a malformed report is ignored. */
  async reportIdentities(device: AuthenticatedDevice, payload: Record<string, unknown>): Promise<void> {
    const identities = Array.isArray(payload.identities) ? (payload.identities as unknown[]) : [];
    const iroh = identities
      .slice(0, 10)
      .filter(
        (entry): entry is { identifier: string; instance?: string; details?: object } =>
          typeof entry === 'object' && entry !== null && (entry as { service?: unknown }).service === 'iroh',
      )
      .map((entry) => ({ identifier: entry.identifier, instance: entry.instance, details: entry.details }));
    if (iroh.length === 0) return;
    const results = await this.iroh.reportDeviceIdentities(
      { id: device.deviceId, orgId: device.orgId, identifier: device.identifier },
      iroh,
    );
    for (const result of results) {
      if (result.outcome === 'refused' || result.outcome === 'skipped') {
        this.logger.debug(`device ${device.identifier}: iroh ${result.outcome} (${result.reason ?? ''})`);
      }
    }
  }
}
