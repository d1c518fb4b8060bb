import { collectYoungGarbage, youngGarbageCollector } from './young-garbage';

describe('young garbage collection', () => {
  it("reaches V8's collector without a command-line flag, once", () => {
    const gc = youngGarbageCollector();
    expect(typeof gc).toBe('function');
    expect(youngGarbageCollector()).toBe(gc);
  });

  it('frees unreachable buffers outside the heap', () => {
    collectYoungGarbage();
    const before = process.memoryUsage().arrayBuffers;
    for (let i = 0; i < 64; i++) Buffer.allocUnsafeSlow(64 * 1024).fill(i);
    const filled = process.memoryUsage().arrayBuffers;
    collectYoungGarbage();
    const after = process.memoryUsage().arrayBuffers;
    expect(filled - before).toBeGreaterThanOrEqual(4 * 1024 * 1024);
    expect(after - before).toBeLessThan(1024 * 1024);
  });
});
