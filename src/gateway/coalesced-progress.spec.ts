import { CoalescedProgress, type ProgressEntry } from './coalesced-progress';

/** A write that completes when `finish` is called, recording what it was given. */
function heldWrites() {
  const calls: { entries: ProgressEntry[]; finish: (err?: Error) => void }[] = [];
  const write = (entries: ProgressEntry[]) =>
    new Promise<void>((resolve, reject) => {
      calls.push({ entries, finish: (err) => (err ? reject(err) : resolve()) });
    });
  return { calls, write };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));
/** A few turns of the event loop: enough for a batch that can be written to be handed to the write. */
const turns = async () => {
  for (let i = 0; i < 5; i += 1) await turn();
};

describe('CoalescedProgress', () => {
  it('writes the reports of one turn together, a device once, with its last status and last percentage', async () => {
    const { calls, write } = heldWrites();
    const progress = new CoalescedProgress(write);
    const done = [
      progress.record('1', 'received', null),
      progress.record('2', 'updating', 40),
      progress.record('1', 'updating', 10),
      progress.record('1', 'completed', null),
    ];
    await turns();
    expect(calls).toHaveLength(1);
    expect(calls[0].entries).toEqual([
      { deviceId: '1', status: 'completed', progress: 10 },
      { deviceId: '2', status: 'updating', progress: 40 },
    ]);
    calls[0].finish();
    await expect(Promise.all(done)).resolves.toBeDefined();
  });

  it('writes a later batch only after the earlier one is stored, so that reports keep their order', async () => {
    const { calls, write } = heldWrites();
    const progress = new CoalescedProgress(write);
    const first = progress.record('1', 'updating', 50);
    await turns();
    const second = progress.record('1', 'completed', 100);
    await turns();
    expect(calls).toHaveLength(1);
    calls[0].finish();
    await first;
    await turns();
    expect(calls).toHaveLength(2);
    expect(calls[1].entries).toEqual([{ deviceId: '1', status: 'completed', progress: 100 }]);
    calls[1].finish();
    await second;
  });

  it("a failed write rejects its own batch's callers only", async () => {
    const { calls, write } = heldWrites();
    const progress = new CoalescedProgress(write);
    const failed = progress.record('1', 'updating', 5);
    await turns();
    const later = progress.record('2', 'updating', 6);
    calls[0].finish(new Error('connection lost'));
    await expect(failed).rejects.toThrow('connection lost');
    await turns();
    expect(calls).toHaveLength(2);
    calls[1].finish();
    await expect(later).resolves.toBeUndefined();
  });
});
