import { Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { Queryable } from '../../database/transactions';
import { FirmwareStorage } from './firmware-storage';
import { StorageDeletionsRepository } from './storage-deletions.repository';

/** How long after its row's deletion the sweeper may take over a file's removal from the request. */
const GRACE_SEC = 60;
const SWEEP_INTERVAL_MS = 60_000;
const SWEEP_BATCH = 100;
const MAX_RETRY_DELAY_SEC = 3600;

/** 1, 2, 4, ... minutes between attempts, at most an hour. */
export function retryDelaySec(attempts: number): number {
  return Math.min(MAX_RETRY_DELAY_SEC, 60 * 2 ** Math.min(attempts, 16));
}

/**
 * Removes the files of deleted firmware so that a row never points at a missing file: `schedule` records the
 * files in the transaction that deletes their rows; after the commit `removeNow` removes them, and what it could
 * not remove (the store down, the process gone) is retried by a sweeper on every instance until it is.
 */
@Injectable()
export class FirmwareFileRemover implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(FirmwareFileRemover.name);
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;

  constructor(
    private readonly deletions: StorageDeletionsRepository,
    private readonly storage: FirmwareStorage,
  ) {}

  onModuleInit(): void {
    this.timer = setInterval(() => void this.sweep(), SWEEP_INTERVAL_MS);
    this.timer.unref();
  }

  async onModuleDestroy(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.sweeping;
  }

  /** In the transaction that deletes the rows: their files are to be removed. */
  schedule(keys: string[], tx: Queryable): Promise<void> {
    return this.deletions.record(keys, GRACE_SEC, tx);
  }

  /**
   * A stored file no row will point at (its upload was refused after the transfer): removed now, or by the sweeper
   * when the store cannot remove it now. Never throws: the caller is answering the refusal.
   */
  async discard(key: string): Promise<void> {
    try {
      await this.storage.remove(key);
    } catch (err) {
      this.logger.warn({ err, key }, 'refused upload not removed from the store; it will be retried');
      await this.deletions
        .record([key], 0)
        .catch((failure: unknown) =>
          this.logger.error({ err: failure, key }, 'refused upload left in the store'),
        );
    }
  }

  /**
   * After the commit: removes the files; one that cannot be removed now is logged and left to the sweeper (never
   * a failed request: the rows are gone already).
   */
  async removeNow(keys: string[]): Promise<void> {
    for (const key of keys) {
      try {
        await this.storage.remove(key);
        await this.deletions.forget(key);
      } catch (err) {
        this.logger.warn({ err, key }, 'firmware file not removed; it will be retried');
      }
    }
  }

  /** One pass over the removals that are due (the interval's work; tests call it directly). */
  sweep(): Promise<void> {
    this.sweeping ??= this.sweepOnce().finally(() => {
      this.sweeping = undefined;
    });
    return this.sweeping;
  }

  private async sweepOnce(): Promise<void> {
    let due: Awaited<ReturnType<StorageDeletionsRepository['due']>>;
    try {
      due = await this.deletions.due(SWEEP_BATCH);
    } catch (err) {
      this.logger.warn({ err }, 'firmware file removals not read');
      return;
    }
    for (const row of due) {
      try {
        await this.storage.remove(row.storage_key);
        await this.deletions.forget(row.storage_key);
      } catch (err) {
        this.logger.warn(
          { err, key: row.storage_key, attempts: row.attempts + 1 },
          'firmware file removal failed again',
        );
        await this.deletions.postpone(row.id, retryDelaySec(row.attempts)).catch(() => undefined);
      }
    }
  }
}
