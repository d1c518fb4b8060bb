import { close, fstat, open, read } from 'node:fs';
import type { Writable } from 'node:stream';

/**
 * Equal buffers shared by the downloads of the process, at most `capacity` of them lent at once. A download
 * borrows one for each chunk, while its file read and its socket write are in progress, and gives it back for
 * the next download: no garbage per chunk and no read-ahead (a stream per download reads ahead and allocates a
 * new buffer per read: about 180 KiB per download at 1,000 at once, docs/decisions.md). When all stay lent, a
 * download goes on with a smaller buffer of its own, `ownSize` bytes (`sendFileRange`): slow readers must never
 * make another download wait long, and thousands of them must not hold a large buffer each.
 */
export class BufferPool {
  private readonly free: Buffer[] = [];
  private lent = 0;

  constructor(
    readonly size: number,
    readonly capacity: number,
    readonly ownSize: number = size,
  ) {}

  /** Buffers lent now. */
  get inUse(): number {
    return this.lent;
  }

  /** A buffer of the pool, or null when all `capacity` are lent. */
  take(): Buffer | null {
    if (this.lent >= this.capacity) return null;
    this.lent += 1;
    return this.free.pop() ?? Buffer.allocUnsafeSlow(this.size);
  }

  /** Gives a buffer back; the caller must no longer use it (nor may anything it was handed to). */
  release(buffer: Buffer): void {
    this.lent -= 1;
    this.free.push(buffer);
  }
}

/**
 * Schedules the downloads' chunks. It starts at most `perTurn` in a turn of the event loop, the rest in the next
 * turns: without it a turn handles every download whose previous write completed meanwhile (hundreds, each a
 * file read and a 64 KiB socket write), and an API request waits for each such turn at each of its steps (parse,
 * query, reply); 1,000 downloads at once kept `GET /api/users/me` at a p99 of ~100 ms. And it paces downloads
 * whose socket is full (`pushLater`), so that their next chunk goes out when the kernel has room for it.
 */
export class ChunkPump {
  private queue: { next(): void }[] = [];
  private head = 0;
  private scheduled = false;

  constructor(readonly perTurn: number) {}

  /** Downloads waiting for their turn. */
  get waiting(): number {
    return this.queue.length - this.head;
  }

  private readonly later = new Map<number, { next(): void }[]>();

  /** Queues `download` for a turn after about `delayMs` (10 ms steps: one timer per step, not per download). */
  pushLater(download: { next(): void }, delayMs: number): void {
    const slot = Math.ceil((Date.now() + delayMs) / 10);
    let due = this.later.get(slot);
    if (!due) {
      const list: { next(): void }[] = (due = []);
      this.later.set(slot, list);
      setTimeout(
        () => {
          this.later.delete(slot);
          for (const item of list) this.push(item);
        },
        slot * 10 - Date.now(),
      );
    }
    due.push(download);
  }

  push(download: { next(): void }): void {
    this.queue.push(download);
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.turn);
    }
  }

  private readonly turn = (): void => {
    this.scheduled = false;
    const stop = Math.min(this.queue.length, this.head + this.perTurn);
    const batch = this.queue;
    let index = this.head;
    // Downloads pushed while this batch runs wait for the next turn.
    this.head = stop;
    while (index < stop) batch[index++].next();
    if (this.head * 2 >= this.queue.length) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    if (this.waiting > 0 && !this.scheduled) {
      this.scheduled = true;
      setImmediate(this.turn);
    }
  };
}

/**
 * One download in progress: reads a chunk into a buffer, writes it, and reads the next once the write completed.
 *
 * Pacing: a write the kernel could not take at once (the socket's buffer was full: the device reads slower than
 * we send) holds its buffer until the device has read enough, which at 1,000 such downloads was a 64 KiB buffer
 * each. So after such a write the next chunk waits for as long as that write took (at most 250 ms): by then the
 * kernel has room for it, the write completes at once and the buffer goes straight back to the pool. The
 * kernel's socket buffer still holds far more than a chunk, so the device never waits for us.
 *
 * Callbacks are bound once per download rather than a promise, a closure and a listener per chunk: what lives
 * as long as a chunk's write outlives young-generation collections and is promoted to the old generation.
 */
class RangeSend {
  private buffer: Buffer | null = null;
  /** The buffer in use is the pool's (else this download's own). */
  private pooled = false;
  private own: Buffer | null = null;
  private reading = false;
  private done = false;
  private writeStarted = 0;
  private wroteAtOnce = true;
  private poolWaits = 0;

  constructor(
    private readonly path: string,
    private readonly fd: number,
    private position: number,
    private readonly end: number,
    private readonly out: Writable,
    private readonly pool: BufferPool,
    private readonly pump: ChunkPump | undefined,
    private readonly settle: (err?: Error) => void,
  ) {
    out.once('close', this.onClose);
  }

  next(): void {
    if (this.done) return;
    if (this.out.destroyed) return this.finish();
    if (this.position > this.end) {
      this.out.end();
      return this.finish();
    }
    const pooled = this.pool.take();
    // The pool is empty for moments (1,000 downloads starting at once): wait for it up to 50 ms, in 10 ms steps.
    if (!pooled && !this.own && this.pump && this.poolWaits < 5) {
      this.poolWaits += 1;
      return this.pump.pushLater(this, 10);
    }
    this.poolWaits = 0;
    this.pooled = pooled !== null;
    // When the pool stays empty, the download uses a buffer of its own, kept for such chunks to its end.
    this.buffer = pooled ?? (this.own ??= Buffer.allocUnsafeSlow(this.pool.ownSize));
    this.reading = true;
    read(
      this.fd,
      this.buffer,
      0,
      Math.min(this.buffer.length, this.end - this.position + 1),
      this.position,
      this.afterRead,
    );
  }

  private readonly afterRead = (err: NodeJS.ErrnoException | null, bytesRead: number): void => {
    this.reading = false;
    const buffer = this.buffer as Buffer;
    if (this.done || this.out.destroyed) return this.finish();
    if (err || bytesRead === 0) {
      this.out.destroy();
      return this.finish(err ?? new Error(`${this.path} ended at ${this.position}, before ${this.end + 1}`));
    }
    this.position += bytesRead;
    this.writeStarted = Date.now();
    this.out.write(bytesRead === buffer.length ? buffer : buffer.subarray(0, bytesRead), this.afterWrite);
    this.wroteAtOnce = this.out.writableLength === 0;
  };

  /** The chunk is the kernel's now (or the write failed: `close` follows and ends the download). */
  private readonly afterWrite = (): void => {
    this.giveBack();
    if (!this.pump) return this.next();
    const waited = Date.now() - this.writeStarted;
    if (this.wroteAtOnce || waited < 2) this.pump.push(this);
    else this.pump.pushLater(this, Math.min(waited, 250));
  };

  /**
   * The response closed (the device went away, or it ended): its pending writes are cancelled and no longer
   * reference the buffer. A read in flight still writes into it, so that one gives it back when it returns.
   * An HTTP response whose socket is already destroyed never calls a write callback, hence this listener.
   */
  private readonly onClose = (): void => {
    if (!this.reading) this.finish();
  };

  private giveBack(): void {
    if (this.pooled && this.buffer) this.pool.release(this.buffer);
    this.pooled = false;
    this.buffer = null;
  }

  private finish(err?: Error): void {
    if (this.done) return;
    this.done = true;
    this.giveBack();
    this.out.off('close', this.onClose);
    close(this.fd, () => this.settle(err));
  }
}

/**
 * Writes bytes `start`…`end` (inclusive) of the file at `path` to `out` and ends it, one buffer of `pool` at a time:
 * the next read starts when the previous chunk has been written (the socket's backpressure is the kernel's).
 * Resolves when done or when `out` closed early (a device that goes away); on a read error `out` is destroyed
 * and the error thrown.
 */
export function sendFileRange(
  path: string,
  range: { start: number; end: number } | undefined,
  out: Writable,
  pool: BufferPool,
  pump?: ChunkPump,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const failed = (err: Error) => {
      out.destroy();
      reject(err);
    };
    // A descriptor rather than a FileHandle: the sender reads and closes it with the callback API.
    open(path, 'r', (openErr, fd) => {
      if (openErr) return failed(openErr);
      const start = (end: number) =>
        new RangeSend(path, fd, range?.start ?? 0, end, out, pool, pump, (err) =>
          err ? reject(err) : resolve(),
        ).next();
      if (range) return start(range.end);
      fstat(fd, (statErr, stats) => {
        if (statErr) return close(fd, () => failed(statErr));
        start(stats.size - 1);
      });
    });
  });
}
