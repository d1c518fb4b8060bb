/**
 * Gathers the calls made in one turn of the event loop into one call of `run` with all their keys, as DataLoader
 * does: when a claim of hundreds of updates is pushed, each device's read and write of its pending update is one
 * statement for all of them instead of one per device. Each call resolves with its own key's answer (`run`
 * answers in the order of the keys) or rejects with the batch's error. A batch never holds more than `maxKeys`.
 */
export class TurnBatch<K, V> {
  private keys: K[] = [];
  private waiters: { resolve: (value: V) => void; reject: (err: unknown) => void }[] = [];

  constructor(
    private readonly run: (keys: K[]) => Promise<V[]>,
    private readonly maxKeys = 1000,
  ) {}

  call(key: K): Promise<V> {
    return new Promise<V>((resolve, reject) => {
      if (this.keys.length === 0) setImmediate(() => this.flush());
      this.keys.push(key);
      this.waiters.push({ resolve, reject });
      if (this.keys.length >= this.maxKeys) this.flush();
    });
  }

  private flush(): void {
    if (this.keys.length === 0) return;
    const keys = this.keys;
    const waiters = this.waiters;
    this.keys = [];
    this.waiters = [];
    let answer: Promise<V[]>;
    try {
      answer = this.run(keys);
    } catch (err) {
      answer = Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
    answer.then(
      (values) => waiters.forEach((waiter, i) => waiter.resolve(values[i])),
      (err: unknown) => waiters.forEach((waiter) => waiter.reject(err)),
    );
  }
}
