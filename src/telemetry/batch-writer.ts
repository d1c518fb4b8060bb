import { Logger } from '@nestjs/common';

export interface BatchWriterOptions<T> {
  name: string;
  /** Writes one batch in one statement. */
  write: (items: T[]) => Promise<void>;
  /** A batch is written this long after its first item at the latest. */
  flushMs: number;
  /** A batch this large is written at once. */
  maxBatch: number;
  /** Items waiting beyond this are refused (the caller counts them dropped): memory stays bounded. */
  maxPending: number;
  /** Called with the size of a batch whose write failed (its items are lost). */
  onFailure?: (count: number) => void;
}

/**
 * Collects items from many devices and writes them in batches, one statement per batch and one batch at a time:
 * the database sees a few multi-row statements a second, however many devices report at once.
 */
export class BatchWriter<T> {
  private readonly logger = new Logger('DeviceTelemetry');
  private pending: T[] = [];
  private timer: NodeJS.Timeout | null = null;
  private writing: Promise<void> | null = null;

  constructor(private readonly options: BatchWriterOptions<T>) {}

  get waiting(): number {
    return this.pending.length;
  }

  /** Queues an item; false when too many wait already (the item is not written). */
  add(item: T): boolean {
    if (this.pending.length >= this.options.maxPending) return false;
    this.pending.push(item);
    if (this.pending.length >= this.options.maxBatch) this.kick();
    else this.timer ??= setTimeout(() => this.kick(), this.options.flushMs);
    return true;
  }

  /** Writes everything queued so far (and waits for it). */
  async flush(): Promise<void> {
    while (this.pending.length > 0 || this.writing) {
      if (this.writing) await this.writing;
      else this.kick();
    }
  }

  private kick(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.writing || this.pending.length === 0) return;
    const batch = this.pending.splice(0, this.options.maxBatch);
    this.writing = this.options
      .write(batch)
      .catch((err: unknown) => {
        this.logger.error({ err, count: batch.length }, `${this.options.name}: batch write failed`);
        this.options.onFailure?.(batch.length);
      })
      .finally(() => {
        this.writing = null;
        if (this.pending.length >= this.options.maxBatch) this.kick();
        else if (this.pending.length > 0) this.timer ??= setTimeout(() => this.kick(), this.options.flushMs);
      });
  }
}
