import { collectYoungGarbage, youngGarbageCollector } from './young-garbage';

describe('young garbage collection', () => {
  it("reaches V8's collector without a command-line flag, once", () => {
    const gc = youngGarbageCollector();
    expect(typeof gc).toBe('function');
    expect(youngGarbageCollector()).toBe(gc);
  });

  it('releases the memory of buffers nothing refers to any more', async () => {
    const MiB = 1024 * 1024;
    for (let i = 0; i < 64; i++) Buffer.allocUnsafeSlow(64 * 1024).fill(i);
    const filled = process.memoryUsage().arrayBuffers;
    // V8 releases the memory of collected buffers on a background thread, shortly after the collection.
    let after = filled;
    for (let attempt = 0; attempt < 50 && after > filled - 3 * MiB; attempt++) {
      collectYoungGarbage();
      await new Promise((resolve) => setTimeout(resolve, 10));
      after = process.memoryUsage().arrayBuffers;
    }
    expect(filled - after).toBeGreaterThanOrEqual(3 * MiB);
  });
});
