import { Injectable } from '@nestjs/common';
import { type AttachedArchiveRow, ArchivesRepository } from './archives.repository';

/**
 * The instance bus channel on which archive attachments change: `{"group": "<id>", "product": "<id>"}`, published
 * in the transaction of the change (delivered once it commits).
 */
export const ARCHIVES_CHANNEL = 'archives';

export interface ArchivesChange {
  group: string;
  product: string;
}

/** Parses a received change; null for anything else (never throws). */
export function parseArchivesChange(payload: string): ArchivesChange | null {
  try {
    const value = JSON.parse(payload) as Partial<ArchivesChange>;
    return typeof value.group === 'string' && typeof value.product === 'string'
      ? { group: value.group, product: value.product }
      : null;
  } catch {
    return null;
  }
}

export type { AttachedArchiveRow } from './archives.repository';

/** What the device gateway asks of the archives: every attachment (to send), and a file by a link's id. */
@Injectable()
export class ArchiveRecordsService {
  constructor(private readonly archives: ArchivesRepository) {}

  /** Every deployment group's archive (one row per group that has one). */
  allAttached(): Promise<AttachedArchiveRow[]> {
    return this.archives.allAttached();
  }

  /** Where archive `id` is stored, provided its uuid is `uuid`; undefined when there is no such archive. */
  findStorageKey(id: string, uuid: string): Promise<string | undefined> {
    return this.archives.findStorageKey(id, uuid);
  }
}
