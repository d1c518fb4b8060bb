/** One device's update progress, as `status_update` and `fwup_progress` report it. */
export interface ProgressEntry {
  deviceId: string;
  status: string;
  /** Null: the report had no percentage (the stored one stays). */
  progress: number | null;
}

/**
 * Coalesces the progress reports of one turn of the event loop into one write: during a rollout hundreds of
 * devices report at once (received, started, a percentage, 100, completed: about five reports per update), and one
 * statement per report was a fifth of the statements of an update. A device's later report in the same batch
 * replaces its earlier one (what the database would hold after both), keeping the last percentage given. Batches
 * are written one after the other, so a device's reports are stored in the order they came. Each call resolves
 * (or rejects) with the write of the batch it joined.
 */
export class CoalescedProgress {
  private batch = new Map<string, ProgressEntry>();
  private scheduled: Promise<void> | null = null;
  /** The last batch's write, settled or not: the next one starts after it. */
  private tail: Promise<void> = Promise.resolve();

  constructor(private readonly write: (entries: ProgressEntry[]) => Promise<void>) {}

  record(deviceId: string, status: string, progress: number | null): Promise<void> {
    const earlier = this.batch.get(deviceId);
    this.batch.set(deviceId, { deviceId, status, progress: progress ?? earlier?.progress ?? null });
    if (!this.scheduled) {
      const scheduled = this.tail
        .then(() => new Promise<void>((resolve) => setImmediate(resolve)))
        .then(() => this.flush());
      this.scheduled = scheduled;
      this.tail = scheduled.catch(() => undefined);
    }
    return this.scheduled;
  }

  private flush(): Promise<void> {
    const entries = [...this.batch.values()];
    this.batch = new Map();
    this.scheduled = null;
    return this.write(entries);
  }
}
