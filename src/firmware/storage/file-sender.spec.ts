import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { BufferPool, ChunkPump, sendFileRange } from './file-sender';

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

  it('never lends more than the capacity; downloads beyond it go on at once with a smaller buffer of their own', async () => {
    const pool = new BufferPool(1024, 2, 256);
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
    // Two (whichever opened the file first) borrowed the pool's buffers; three began with their own, smaller one.
    const firstChunks = outs.map((out) => out.chunks[0].length).sort((a, b) => a - b);
    expect(firstChunks).toEqual([256, 256, 256, 1024, 1024]);
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

  it('with a pump, a download waits briefly for a shared buffer instead of allocating its own', async () => {
    const pool = new BufferPool(1024, 1, 256);
    const pump = new ChunkPump(8);
    const outs = [new HeldWritable(true), new HeldWritable(true), new HeldWritable(true)];
    const range = { start: 0, end: 2047 };
    await Promise.all(outs.map((out) => sendFileRange(path, range, out, pool, pump)));
    for (const out of outs) {
      expect(out.bytes.equals(content.subarray(0, 2048))).toBe(true);
      // Both chunks in the pool's buffer size: the one buffer went round the three downloads.
      expect(out.chunks.map((chunk) => chunk.length)).toEqual([1024, 1024]);
    }
    expect(pool.inUse).toBe(0);
  });
});

describe('sendFileRange with a pump: pacing', () => {
  let dir: string;
  let path: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'file-sender-'));
    path = join(dir, 'firmware.fw');
    await writeFile(path, randomBytes(2048));
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('a chunk the writable took long to accept delays the next one by about as long, without a buffer lent', async () => {
    const pool = new BufferPool(1024, 1);
    const writes: number[] = [];
    const out = new HeldWritable(false, () => writes.push(Date.now()));
    let done = false;
    const send = sendFileRange(path, undefined, out, pool, new ChunkPump(4)).then(() => (done = true));
    while (writes.length === 0) await tick();
    await new Promise((resolve) => setTimeout(resolve, 60));
    out.flush();
    const accepted = Date.now();
    await tick();
    // The first write took ~60 ms: the buffer is back and the next read waits.
    expect(pool.inUse).toBe(0);
    while (!done) {
      await new Promise((resolve) => setTimeout(resolve, 2));
      out.flush();
    }
    await send;
    expect(writes).toHaveLength(2);
    expect(writes[1] - accepted).toBeGreaterThanOrEqual(45);
  });
});

describe('ChunkPump', () => {
  const download = (log: number[], id: number) => ({ next: () => log.push(id) });

  it('starts at most perTurn downloads in a turn of the event loop, in the order they came', async () => {
    const pump = new ChunkPump(2);
    const started: number[] = [];
    for (let id = 1; id <= 5; id += 1) pump.push(download(started, id));
    expect(started).toEqual([]);
    await tick();
    expect(started).toEqual([1, 2]);
    expect(pump.waiting).toBe(3);
    await tick();
    expect(started).toEqual([1, 2, 3, 4]);
    await tick();
    expect(started).toEqual([1, 2, 3, 4, 5]);
    expect(pump.waiting).toBe(0);
  });

  it('pushLater starts a download after its delay, not before', async () => {
    const pump = new ChunkPump(4);
    const started: number[] = [];
    const at = Date.now();
    pump.pushLater(download(started, 1), 40);
    pump.push(download(started, 2));
    await tick();
    expect(started).toEqual([2]);
    while (started.length < 2) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(started).toEqual([2, 1]);
    expect(Date.now() - at).toBeGreaterThanOrEqual(35);
  });
});
