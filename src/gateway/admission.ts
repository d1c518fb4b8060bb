/**
 * At most `limit` tasks at a time, the others wait their turn in arrival order. The gateway admits device
 * connections through one of these, so that a reconnect storm queues here (in memory, without a deadline)
 * instead of in the database pool, whose wait for a free connection times out.
 */
export class Admission {
  private running = 0;
  private readonly waiting: (() => void)[] = [];
  private head = 0;

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new Error('admission limit must be a positive integer');
  }

  /** Tasks running now, and waiting for their turn. */
  get active(): number {
    return this.running;
  }

  get queued(): number {
    return this.waiting.length - this.head;
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.running >= this.limit) {
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else {
      this.running++;
    }
    try {
      return await task();
    } finally {
      this.release();
    }
  }

  /** Hands the slot to the next waiting task (the count stays), or frees it. */
  private release(): void {
    if (this.head < this.waiting.length) {
      const next = this.waiting[this.head];
      this.waiting[this.head++] = noop;
      if (this.head > 1024 && this.head * 2 > this.waiting.length) {
        this.waiting.splice(0, this.head);
        this.head = 0;
      }
      next();
      return;
    }
    this.running--;
  }
}

const noop = () => undefined;
