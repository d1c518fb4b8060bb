import { Injectable } from '@nestjs/common';
import type { Queryable } from '../../database/transactions';
import {
  type DeliverableDelta,
  FirmwareDeltasRepository,
  type FirmwareDeltaRow,
} from './firmware-deltas.repository';

export type { DeliverableDelta, FirmwareDeltaRow } from './firmware-deltas.repository';

/**
 * What other features ask of the firmware deltas: the device gateway the delta of an update (requesting it when
 * there is none), the deployment groups the deltas to their release, firmware deletion the deltas that go with it.
 * Builders on this instance hear of new requests at once (other instances find them at their next poll).
 */
@Injectable()
export class FirmwareDeltaRecords {
  private readonly listeners = new Set<() => void>();

  constructor(private readonly deltas: FirmwareDeltasRepository) {}

  /** Called whenever a request created a pending delta here. */
  onRequested(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * For each (target firmware id, source firmware uuid): its delta, requested when missing (see
   * FirmwareDeltasRepository.forDelivery).
   */
  async forDelivery(
    pairs: readonly { targetId: string; sourceUuid: string }[],
  ): Promise<(DeliverableDelta | null)[]> {
    const found = await this.deltas.forDelivery(pairs);
    if (found.some((delta) => delta !== null && delta.state === null)) {
      for (const listener of this.listeners) listener();
    }
    return found;
  }

  /** Where the ready delta `id` is stored, provided its target's uuid is `targetUuid` (device downloads). */
  findStorageKey(id: string, targetUuid: string): Promise<string | undefined> {
    return this.deltas.findStorageKey(id, targetUuid);
  }

  listForFirmware(firmwareId: string): Promise<FirmwareDeltaRow[]> {
    return this.deltas.listForFirmware(firmwareId);
  }

  listForTarget(targetId: string): Promise<FirmwareDeltaRow[]> {
    return this.deltas.listForTarget(targetId);
  }

  /** Deletes the deltas from or to the firmware in `tx`; answers the storage keys of their files. */
  deleteForFirmware(firmwareId: string, tx: Queryable): Promise<string[]> {
    return this.deltas.deleteForFirmware(firmwareId, tx);
  }
}
