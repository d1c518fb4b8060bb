import { open } from 'node:fs/promises';
import type { Writable } from 'node:stream';

/**
 * Equal buffers shared by every download of the process, at most `capacity` of them lent at once. A download
 * holds one while its file read and its socket write are in progress, so memory stays `capacity × size` however
 * many devices download together (a stream per download reads ahead and allocates a new buffer per read: about
 * 180 KiB per download at 1,000 at once, docs/decisions.md). A download that waited `maxWaitMs` for a buffer gets a
 * buffer of its own instead (collected as garbage after use): devices that stop reading without closing hold
 * their buffer until their socket closes, and must not stop everyone else.
 */
export class BufferPool {
  private readonly free: Buffer[] = [];
  private lent = 0;
  private readonly waiting: { take: (buffer: Buffer) => void; timer: NodeJS.Timeout }[] = [];
  private readonly unpooled = new WeakSet<Buffer>();

  constructor(
    readonly size: number,
    readonly capacity: number,
    private readonly maxWaitMs: number,
  ) {}

  /** Buffers lent now (unpooled ones not counted). */
  get inUse(): number {
    return this.lent;
  }

  acquire(): Promise<Buffer> {
    if (this.lent < this.capacity) {
      this.lent += 1;
      return Promise.resolve(this.free.pop() ?? Buffer.allocUnsafeSlow(this.size));
    }
    return new Promise((resolve) => {
      const waiter = {
        take: resolve,
        timer: setTimeout(() => {
          this.waiting.splice(this.waiting.indexOf(waiter), 1);
          const own = Buffer.allocUnsafeSlow(this.size);
          this.unpooled.add(own);
          resolve(own);
        }, this.maxWaitMs),
      };
      this.waiting.push(waiter);
    });
  }

  /** Gives a buffer back; the caller must no longer use it (nor may anything it was handed to). */
  release(buffer: Buffer): void {
    if (this.unpooled.has(buffer)) return;
    const next = this.waiting.shift();
    if (next) {
      clearTimeout(next.timer);
      next.take(buffer);
      return;
    }
    this.lent -= 1;
    this.free.push(buffer);
  }
}

/**
 * Resolves once `out` has handed `chunk` to the operating system, or has closed (then the socket's pending writes
 * are cancelled and the chunk is no longer referenced). An HTTP response whose socket is already destroyed never
 * calls a write callback, hence the close.
 */
function written(out: Writable, chunk: Buffer): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      out.off('close', done);
      resolve();
    };
    out.once('close', done);
    out.write(chunk, done);
  });
}

/**
 * Writes bytes `start`…`end` (inclusive) of the file at `path` to `out` and ends it, one buffer of `pool` at a time:
 * the next read starts when the previous chunk has been written (the socket's backpressure is the kernel's).
 * Resolves when done or when `out` closed early (a device that goes away); on a read error `out` is destroyed
 * and the error thrown.
 */
export async function sendFileRange(
  path: string,
  range: { start: number; end: number } | undefined,
  out: Writable,
  pool: BufferPool,
): Promise<void> {
  const file = await open(path, 'r');
  try {
    let position = range?.start ?? 0;
    const end = range?.end ?? (await file.stat()).size - 1;
    while (position <= end) {
      if (out.destroyed) return;
      const buffer = await pool.acquire();
      try {
        const { bytesRead } = await file.read(
          buffer,
          0,
          Math.min(buffer.length, end - position + 1),
          position,
        );
        if (bytesRead === 0) throw new Error(`${path} ended at ${position}, before ${end + 1}`);
        position += bytesRead;
        await written(out, bytesRead === buffer.length ? buffer : buffer.subarray(0, bytesRead));
      } finally {
        pool.release(buffer);
      }
    }
    if (!out.destroyed) out.end();
  } catch (err) {
    out.destroy();
    throw err;
  } finally {
    await file.close();
  }
}
