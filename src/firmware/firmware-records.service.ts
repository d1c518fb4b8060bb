import { Injectable } from '@nestjs/common';
import type { Queryable } from '../database/transactions';
import { FirmwareDeltasRepository } from './deltas/firmware-deltas.repository';
import { FirmwaresRepository } from './firmwares.repository';
import type { PendingUpdateRow } from './pending-update-view';

export type { PendingUpdateRow } from './pending-update-view';
import { type PendingUpdateTarget, PendingUpdatesRepository } from './pending-updates.repository';

/**
 * What other features ask of the firmware records: products delete their firmware with them, devices look a
 * firmware up and record an upgrade, the device gateway delivers updates and follows their progress, serves
 * firmware files and the metrics count pending updates. Apart from FirmwareService (which needs ProductsService), so that the
 * products feature can use it without a module cycle.
 */
@Injectable()
export class FirmwareRecordsService {
  constructor(
    private readonly firmwares: FirmwaresRepository,
    private readonly pendingUpdates: PendingUpdatesRepository,
    private readonly deltas: FirmwareDeltasRepository,
  ) {}

  /** Deletes the product's firmware rows and their deltas in `tx`; answers the storage keys of their files. */
  async deleteAllOfProduct(productId: string, tx: Queryable): Promise<string[]> {
    const deltaKeys = await this.deltas.deleteForProduct(productId, tx);
    return [...deltaKeys, ...(await this.firmwares.deleteAllOfProduct(productId, tx))];
  }

  /** The id of the product's firmware with this (lower-case) uuid. */
  findIdByUuid(productId: string, uuid: string): Promise<string | undefined> {
    return this.firmwares.findIdByUuid(productId, uuid);
  }

  /** Records the device's pending update to the firmware (a newer one replaces the previous). */
  requestUpdate(deviceId: string, firmwareId: string, requestedById: string | null, tx: Queryable) {
    return this.pendingUpdates.upsert(deviceId, firmwareId, requestedById, tx);
  }

  /** Records the same pending update for many devices (a bulk upgrade), in one statement. */
  requestUpdates(
    deviceIds: readonly string[],
    firmwareId: string,
    requestedById: string | null,
    tx: Queryable,
  ) {
    return this.pendingUpdates.upsertMany(deviceIds, firmwareId, requestedById, tx);
  }

  /** Which row `requestUpdate` failed on because a concurrent transaction deleted it, if that is what `err` says. */
  deletedUpdateTarget(err: unknown): PendingUpdateTarget | undefined {
    return this.pendingUpdates.deletedTarget(err);
  }

  /** Where the file of firmware `firmwareId` is stored, provided its uuid is `uuid`. */
  findStorageKey(firmwareId: string, uuid: string): Promise<string | undefined> {
    return this.firmwares.findStorageKey(firmwareId, uuid);
  }

  /**
   * Each device's pending update, with what the `update` message needs (null when there is none), in the order of
   * `deviceIds`.
   */
  findPendingUpdates(deviceIds: readonly string[]): Promise<(PendingUpdateRow | null)[]> {
    return this.pendingUpdates.findForDelivery(deviceIds);
  }

  /** Each update was sent to its device. */
  markUpdatesDelivered(sent: readonly { deviceId: string; firmwareId: string }[]): Promise<void> {
    return this.pendingUpdates.markDelivered(sent);
  }

  /** The device runs `firmwareId`: its update to it is complete (the row goes). */
  completeUpdate(deviceId: string, firmwareId: string): Promise<void> {
    return this.pendingUpdates.deleteForFirmware(deviceId, firmwareId);
  }

  /** The device's delivered update goes back in the queue, for its next connection. */
  rescheduleDeliveredUpdate(deviceId: string): Promise<void> {
    return this.pendingUpdates.rescheduleDelivered(deviceId);
  }

  /** Records the status and, when given, the progress percentage of each device's delivered update. */
  recordUpdateProgress(
    entries: readonly { deviceId: string; status: string; progress: number | null }[],
  ): Promise<void> {
    return this.pendingUpdates.recordProgress(entries);
  }

  /** How many manual upgrades are recorded and not yet completed. */
  countPendingUpdates(): Promise<number> {
    return this.pendingUpdates.count();
  }

  /** Deployment orchestrator: claims the group's next devices for `releaseId` under the group's lock (`tx`). */
  claimDeploymentUpdates(
    groupId: string,
    releaseId: string,
    newestFirst: boolean,
    tx: Queryable,
  ): Promise<string[]> {
    return this.pendingUpdates.claimForDeployment(groupId, releaseId, newestFirst, tx);
  }

  /** Deployment orchestrator: orchestrated updates past their expiry go; answers their devices and releases. */
  expireDeploymentUpdates(tx?: Queryable) {
    return this.pendingUpdates.deleteExpired(tx);
  }

  /** Deployment orchestrator: the group's claimed updates not yet sent to their connected device. */
  undeliveredDeploymentUpdates(groupId: string): Promise<string[]> {
    return this.pendingUpdates.undeliveredOfGroup(groupId);
  }

  /** Deployment orchestrator: a group that paused itself takes back the updates it claimed and never sent. */
  withdrawUndeliveredDeploymentUpdates(groupId: string, tx: Queryable): Promise<number> {
    return this.pendingUpdates.deleteUndeliveredOfGroup(groupId, tx);
  }

  /**
   * The device's delivered update failed or was ignored (the row goes); answers the deployment group and release
   * it belonged to (both null for a manual upgrade) and its firmware, or null when there was none.
   */
  async endDeliveredUpdateOf(
    deviceId: string,
    tx?: Queryable,
  ): Promise<{
    groupId: string | null;
    releaseId: string | null;
    firmware: { uuid: string; version: string };
  } | null> {
    const row = await this.pendingUpdates.deleteDeliveredReturning(deviceId, tx);
    return (
      row && {
        groupId: row.deployment_group_id,
        releaseId: row.deployment_release_id,
        firmware: { uuid: row.firmware_uuid, version: row.firmware_version },
      }
    );
  }

  /** The device runs `firmwareId`: the update is complete; answers its deployment group (null when manual). */
  completeUpdateOf(deviceId: string, firmwareId: string): Promise<string | null> {
    return this.pendingUpdates.deleteForFirmwareReturning(deviceId, firmwareId);
  }

  /** How many orchestrated updates are in flight. */
  countDeploymentUpdates(): Promise<number> {
    return this.pendingUpdates.countOrchestrated();
  }
}
