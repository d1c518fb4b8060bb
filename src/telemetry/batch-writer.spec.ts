import { Logger } from '@nestjs/common';
import { BatchWriter } from './batch-writer';

describe('BatchWriter', () => {
  it('writes one batch at a time: by size at once, the rest after flushMs; refuses beyond maxPending', async () => {
    const batches: number[][] = [];
    let release: () => void = () => undefined;
    const writer = new BatchWriter<number>({
      name: 'test',
      write: async (items) => {
        batches.push(items);
        await new Promise<void>((resolve) => (release = resolve));
      },
      flushMs: 10,
      maxBatch: 3,
      maxPending: 5,
    });
    for (const i of [1, 2, 3]) expect(writer.add(i)).toBe(true);
    expect(batches).toEqual([[1, 2, 3]]);
    for (const i of [4, 5, 6, 7, 8]) expect(writer.add(i)).toBe(true);
    expect(writer.add(9)).toBe(false);
    expect(batches).toHaveLength(1);
    release();
    const flushed = writer.flush();
    for (let i = 0; i < 5; i++) {
      await new Promise((resolve) => setTimeout(resolve, 15));
      release();
    }
    await flushed;
    expect(batches).toEqual([
      [1, 2, 3],
      [4, 5, 6],
      [7, 8],
    ]);
    expect(writer.waiting).toBe(0);
  });

  it('counts a failed batch and goes on', async () => {
    const logged = jest.spyOn(Logger.prototype, 'error').mockImplementation(() => undefined);
    const failures: number[] = [];
    let calls = 0;
    const writer = new BatchWriter<number>({
      name: 'test',
      write: async () => {
        if (++calls === 1) throw new Error('down');
      },
      flushMs: 1,
      maxBatch: 2,
      maxPending: 10,
      onFailure: (count) => failures.push(count),
    });
    writer.add(1);
    writer.add(2);
    writer.add(3);
    await writer.flush();
    expect(failures).toEqual([2]);
    expect(calls).toBe(2);
    expect(logged).toHaveBeenCalledTimes(1);
    logged.mockRestore();
  });
});
