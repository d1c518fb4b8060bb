import { TurnBatch } from './turn-batch';

describe('TurnBatch', () => {
  it('answers the calls of one turn with one run, each with its own key’s answer', async () => {
    const runs: number[][] = [];
    const batch = new TurnBatch<number, string>(async (keys) => {
      runs.push(keys);
      return keys.map((k) => `v${k}`);
    });
    const answers = await Promise.all([batch.call(1), batch.call(2), batch.call(3)]);
    expect(answers).toEqual(['v1', 'v2', 'v3']);
    expect(runs).toEqual([[1, 2, 3]]);
    expect(await batch.call(4)).toBe('v4');
    expect(runs).toEqual([[1, 2, 3], [4]]);
  });

  it('rejects every call of a batch whose run fails, and the next batch runs again', async () => {
    let fail = true;
    const batch = new TurnBatch<number, number>(async (keys) => {
      if (fail) throw new Error('database down');
      return keys;
    });
    const settled = await Promise.allSettled([batch.call(1), batch.call(2)]);
    expect(settled.map((s) => s.status)).toEqual(['rejected', 'rejected']);
    fail = false;
    await expect(batch.call(3)).resolves.toBe(3);
  });

  it('never runs more than maxKeys at once', async () => {
    const sizes: number[] = [];
    const batch = new TurnBatch<number, number>(async (keys) => {
      sizes.push(keys.length);
      return keys;
    }, 2);
    expect(await Promise.all([1, 2, 3, 4, 5].map((k) => batch.call(k)))).toEqual([1, 2, 3, 4, 5]);
    expect(sizes).toEqual([2, 2, 1]);
  });
});
