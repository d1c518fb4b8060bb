import type { FirmwareTool } from './formats/detect-format';

/** The pending manual upgrade of a device, with what the `update` message needs. */
export interface PendingUpdateRow {
  firmware_id: string;
  delivered_at: Date | null;
  uuid: string;
  version: string;
  platform: string;
  architecture: string;
  author: string | null;
  description: string | null;
  misc: string | null;
  vcs_identifier: string | null;
  size: string;
  sha256: string;
  chunk_sha256: string[];
  tool: FirmwareTool;
  /** Where the firmware's file is stored (FirmwareStorage). */
  storage_key: string;
  product_name: string;
  /** The deployment group of an orchestrated update (its `update` frame's `deployment_id`); null when manual. */
  deployment_group_id: string | null;
  /** The update may be sent as an fwup delta (an orchestrated update of a group that allows deltas). */
  delta_allowed: boolean;
  /** The oldest fwup that applies a delta to the firmware; null when it cannot be a delta's target. */
  delta_fwup_version: string | null;
}

/**
 * The columns of a PendingUpdateRow (`pu` pending_updates, `f` firmwares, `p` products), shared by the device join
 * (DevicesRepository) and the pending update read (PendingUpdatesRepository).
 */
export const PENDING_UPDATE_COLUMNS = `pu.firmware_id, pu.delivered_at, f.uuid, f.version, f.platform, f.architecture, f.author,
              f.description, f.misc, f.vcs_identifier, f.size, f.sha256, f.chunk_sha256, f.tool, f.storage_key, p.name AS product_name,
              pu.deployment_group_id, pu.delta_allowed, f.delta_fwup_version`;
