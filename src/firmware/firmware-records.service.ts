import { Injectable } from '@nestjs/common';
import type { Queryable } from '../database/transactions';
import { FirmwaresRepository } from './firmwares.repository';
import { type PendingUpdateTarget, PendingUpdatesRepository } from './pending-updates.repository';

/**
 * What other features ask of the firmware records: products delete their firmware with them, devices look a
 * firmware up and record an upgrade. Apart from FirmwareService (which needs ProductsService), so that the
 * products feature can use it without a module cycle.
 */
@Injectable()
export class FirmwareRecordsService {
  constructor(
    private readonly firmwares: FirmwaresRepository,
    private readonly pendingUpdates: PendingUpdatesRepository,
  ) {}

  /** Deletes the product's firmware rows in `tx`; answers the storage keys of their files. */
  deleteAllOfProduct(productId: string, tx: Queryable): Promise<string[]> {
    return this.firmwares.deleteAllOfProduct(productId, tx);
  }

  /** The id of the product's firmware with this (lower-case) uuid. */
  findIdByUuid(productId: string, uuid: string): Promise<string | undefined> {
    return this.firmwares.findIdByUuid(productId, uuid);
  }

  /** Records the device's pending update to the firmware (a newer one replaces the previous). */
  requestUpdate(deviceId: string, firmwareId: string, requestedById: string | null, tx: Queryable) {
    return this.pendingUpdates.upsert(deviceId, firmwareId, requestedById, tx);
  }

  /** Which row `requestUpdate` failed on because a concurrent transaction deleted it, if that is what `err` says. */
  deletedUpdateTarget(err: unknown): PendingUpdateTarget | undefined {
    return this.pendingUpdates.deletedTarget(err);
  }
}
