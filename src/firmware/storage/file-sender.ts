import { open } from 'node:fs/promises';
import type { Writable } from 'node:stream';

/**
 * Equal buffers shared by the downloads of the process, at most `capacity` of them lent at once. A download
 * holds one while its file read and its socket write are in progress, and gives it back for the next download:
 * no garbage per chunk and no read-ahead (a stream per download reads ahead and allocates a new buffer per read:
 * about 180 KiB per download at 1,000 at once, docs/decisions.md). When all are lent, a download goes on at once
 * with a buffer of its own (`sendFileRange`): slow readers (devices on a cellular link hold their buffer while the
 * kernel drains their socket) must never make another download wait.
 */
export class BufferPool {
  private readonly free: Buffer[] = [];
  private lent = 0;

  constructor(
    readonly size: number,
    readonly capacity: number,
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
    // Once the pool was empty, the download keeps a buffer of its own to the end (64 KiB per such download,
    // never more, and no garbage per chunk).
    let own: Buffer | null = null;
    while (position <= end) {
      if (out.destroyed) return;
      const pooled = own ? null : pool.take();
      const buffer = pooled ?? (own ??= Buffer.allocUnsafeSlow(pool.size));
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
        if (pooled) pool.release(pooled);
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
