import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { BufferPool, sendFileRange } from './file-sender';

/** A writable that keeps what it gets; its writes complete when `flush` is called (or at once when `auto`). */
class HeldWritable extends Writable {
  readonly chunks: Buffer[] = [];
  private readonly held: (() => void)[] = [];

  constructor(
    private readonly auto: boolean,
    private readonly onWrite: () => void = () => {},
  ) {
    super();
  }

  get pending(): number {
    return this.held.length;
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: () => void): void {
    // A copy: the sender reuses its buffers once the write completed.
    this.chunks.push(Buffer.from(chunk));
    this.onWrite();
    if (this.auto) setImmediate(callback);
    else this.held.push(callback);
  }

  flush(): void {
    this.held.splice(0).forEach((callback) => callback());
  }

  get bytes(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('sendFileRange', () => {
  let dir: string;
  let path: string;
  const content = randomBytes(10_000);

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'file-sender-'));
    path = join(dir, 'firmware.fw');
    await writeFile(path, content);
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('writes the whole file, or one inclusive range, in chunks of the pool size, and ends the writable', async () => {
    const pool = new BufferPool(1024, 4);
    const whole = new HeldWritable(true);
    await sendFileRange(path, undefined, whole, pool);
    expect(whole.bytes.equals(content)).toBe(true);
    expect(whole.chunks.length).toBe(10);
    expect(whole.writableEnded).toBe(true);

    const part = new HeldWritable(true);
    await sendFileRange(path, { start: 1000, end: 4999 }, part, pool);
    expect(part.bytes.equals(content.subarray(1000, 5000))).toBe(true);
    expect(pool.inUse).toBe(0);
  });

  it('never lends more than the capacity; downloads beyond it go on at once with a buffer of their own', async () => {
    const pool = new BufferPool(1024, 2);
    let inFlight = 0;
    let most = 0;
    const outs = Array.from(
      { length: 5 },
      () => new HeldWritable(false, () => (most = Math.max(most, ++inFlight))),
    );
    const sends = outs.map((out) => sendFileRange(path, undefined, out, pool));
    let done = false;
    const all = Promise.all(sends).then(() => (done = true));
    while (!done) {
      await tick();
      expect(pool.inUse).toBeLessThanOrEqual(2);
      for (const out of outs) {
        inFlight -= out.pending;
        out.flush();
      }
    }
    await all;
    // All five had a write in flight together: none waited for the pool.
    expect(most).toBe(5);
    for (const out of outs) expect(out.bytes.equals(content)).toBe(true);
    expect(pool.inUse).toBe(0);
  });

  it('stops when the writable closes early and gives its buffer back', async () => {
    const pool = new BufferPool(1024, 1);
    const out = new HeldWritable(false);
    const send = sendFileRange(path, undefined, out, pool);
    while (out.pending === 0) await tick();
    expect(pool.inUse).toBe(1);
    out.destroy();
    await send;
    expect(pool.inUse).toBe(0);
    expect(out.bytes.length).toBe(1024);
  });

  it('a stalled reader holding the only buffer never slows another download', async () => {
    const pool = new BufferPool(1024, 1);
    const stalled = new HeldWritable(false);
    const stalledSend = sendFileRange(path, undefined, stalled, pool);
    while (stalled.pending === 0) await tick();
    const other = new HeldWritable(true);
    await sendFileRange(path, undefined, other, pool);
    expect(other.bytes.equals(content)).toBe(true);
    expect(pool.inUse).toBe(1);
    stalled.destroy();
    await stalledSend;
    expect(pool.inUse).toBe(0);
  });

  it('destroys the writable and rejects when the file is shorter than the range', async () => {
    const pool = new BufferPool(1024, 1);
    const out = new HeldWritable(true);
    await expect(sendFileRange(path, { start: 9000, end: 10_999 }, out, pool)).rejects.toThrow(
      /ended at 10000/,
    );
    expect(out.destroyed).toBe(true);
    expect(pool.inUse).toBe(0);
  });
});
