import { Admission, AdmissionRefused } from './admission';

/** Lets the promise callbacks of settled tasks run (no timers involved). */
const settle = async () => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

/** A task that runs until `finish(name)`; `started` lists the tasks in the order they began. */
function tasks() {
  const started: string[] = [];
  const finishers = new Map<string, () => void>();
  return {
    started,
    task:
      (name: string): (() => Promise<string>) =>
      async () => {
        started.push(name);
        await new Promise<void>((resolve) => finishers.set(name, resolve));
        return name;
      },
    finish: async (...names: string[]) => {
      for (const name of names) finishers.get(name)!();
      await settle();
    },
  };
}

describe('Admission', () => {
  let clock: number;
  const now = () => clock;
  const admission = (limit: number, maxHandshakeWaitMs = 60_000) =>
    new Admission(limit, { maxHandshakeWaitMs, now });

  beforeEach(() => {
    clock = 1_000_000;
  });

  afterEach(() => {
    jest.useRealTimers();
  });

  it('runs at most `limit` tasks at once, the others in arrival order', async () => {
    const a = admission(2);
    const { started, task, finish } = tasks();
    const results = ['0', '1', '2', '3', '4'].map((name) => a.run(task(name)));
    await settle();
    expect(started).toEqual(['0', '1']);
    expect(a.active).toBe(2);
    expect(a.queued()).toBe(3);
    await finish('1');
    expect(started).toEqual(['0', '1', '2']);
    await finish('0', '2');
    expect(started).toEqual(['0', '1', '2', '3', '4']);
    await finish('3', '4');
    expect(await Promise.all(results)).toEqual(['0', '1', '2', '3', '4']);
    expect(a.active).toBe(0);
    expect(a.queued()).toBe(0);
  });

  it('frees the slot of a task that fails', async () => {
    const a = admission(1);
    await expect(a.run(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    await expect(a.handshake(() => Promise.reject(new Error('bad')))).rejects.toThrow('bad');
    await expect(a.run(() => Promise.resolve('next'))).resolves.toBe('next');
    expect(a.active).toBe(0);
  });

  it('keeps order over many waiting tasks', async () => {
    const a = admission(3);
    const order: number[] = [];
    await Promise.all(
      Array.from({ length: 3000 }, (_, i) =>
        a.run(async () => {
          order.push(i);
          await settle();
        }),
      ),
    );
    expect(order).toEqual(Array.from({ length: 3000 }, (_, i) => i));
    expect(() => new Admission(0, { maxHandshakeWaitMs: 1 })).toThrow();
  });

  it('gives a freed slot to the work of an upgraded socket before any waiting handshake', async () => {
    const a = admission(1);
    const { started, task, finish } = tasks();
    void a.run(task('busy'));
    void a.handshake(task('handshake 1'));
    void a.handshake(task('handshake 2'));
    void a.run(task('join'));
    await settle();
    expect(a.queued('handshake')).toBe(2);
    expect(a.queued('connected')).toBe(1);
    await finish('busy');
    await finish('join');
    await finish('handshake 1');
    expect(started).toEqual(['busy', 'join', 'handshake 1', 'handshake 2']);
  });

  it('runs background work one at a time while other work waits, never starving it', async () => {
    const a = admission(2);
    const { started, task, finish } = tasks();
    void a.run(task('busy 1'));
    void a.run(task('busy 2'));
    void a.run(task('report 1'), 'background');
    void a.run(task('report 2'), 'background');
    void a.handshake(task('handshake 1'));
    void a.run(task('join'));
    await settle();
    await finish('busy 1');
    // The first freed slot goes to a report (none runs), the next to the join: not a second report.
    expect(started).toEqual(['busy 1', 'busy 2', 'report 1']);
    await finish('busy 2');
    expect(started.slice(3)).toEqual(['join']);
    await finish('join');
    expect(started.slice(4)).toEqual(['handshake 1']);
    await finish('report 1');
    expect(started.slice(5)).toEqual(['report 2']);
  });

  it('lets background work use every slot when nothing else waits', async () => {
    const a = admission(3);
    const { started, task } = tasks();
    for (const name of ['r1', 'r2', 'r3', 'r4']) void a.run(task(name), 'background');
    await settle();
    expect(started).toEqual(['r1', 'r2', 'r3']);
  });

  it('refuses a handshake whose deadline passed while it waited, without running it', async () => {
    const a = admission(1, 10_000);
    const { started, task, finish } = tasks();
    void a.run(task('busy'));
    const late = a.handshake(task('late'));
    await settle();
    clock += 5_000;
    const onTime = a.handshake(task('on time'));
    clock += 5_001;
    await finish('busy');
    await expect(late).rejects.toEqual(expect.objectContaining({ reason: 'late' }));
    await expect(late).rejects.toBeInstanceOf(AdmissionRefused);
    expect(started).toEqual(['busy', 'on time']);
    await finish('on time');
    await expect(onTime).resolves.toBe('on time');
    expect(a.active).toBe(0);
  });

  it('refuses queued handshakes when their deadline passes even if no slot frees', async () => {
    jest.useFakeTimers();
    const a = admission(1, 10_000);
    const { started, task } = tasks();
    void a.run(task('stuck'));
    const first = a.handshake(task('first'));
    clock += 1_000;
    const second = a.handshake(task('second'));
    const reason = (p: Promise<unknown>) =>
      p.then(
        () => 'served',
        (err: AdmissionRefused) => err.reason,
      );
    const outcomes = [reason(first), reason(second)];
    clock += 9_500;
    jest.advanceTimersByTime(10_001);
    await settle();
    expect(a.queued('handshake')).toBe(1);
    clock += 1_000;
    jest.advanceTimersByTime(10_001);
    await settle();
    expect(await Promise.all(outcomes)).toEqual(['late', 'late']);
    expect(a.queued()).toBe(0);
    expect(started).toEqual(['stuck']);
  });

  /**
   * Handshakes arriving one at a time on a one-slot admission, each started `intervalMs` after the previous one
   * (the rate the admission measures); the last one still runs: the returned function finishes it.
   */
  async function measureRate(a: Admission, n: number, intervalMs: number) {
    const { task, finish } = tasks();
    void a.run(task('busy'));
    let running = 'busy';
    for (let i = 0; i < n; i++) {
      void a.handshake(task(`h${i}`));
      clock += intervalMs;
      await finish(running);
      running = `h${i}`;
    }
    return () => finish(running);
  }

  const reasonOf = (p: Promise<unknown>) =>
    p.then(
      () => 'served',
      (err: AdmissionRefused) => err.reason,
    );

  it('does not refuse on arrival before the start rate is known', async () => {
    const a = admission(1, 1_000);
    const { task } = tasks();
    void a.run(task('busy'));
    for (let i = 0; i < 100; i++) void reasonOf(a.handshake(task(`h${i}`)));
    await settle();
    expect(a.expectedHandshakeWaitMs()).toBeNull();
    expect(a.queued('handshake')).toBe(100);
  });

  it('sheds a handshake on arrival when those ahead are predicted to start past its deadline', async () => {
    const a = admission(1, 1_000);
    const release = await measureRate(a, 20, 100);
    expect(a.expectedHandshakeWaitMs()).toBeCloseTo(100);
    const { started, task, finish } = tasks();
    // At one start per 100 ms, ten can start within the second each may wait.
    const queued = Array.from({ length: 10 }, (_, i) => reasonOf(a.handshake(task(`q${i}`))));
    expect(a.queued('handshake')).toBe(10);
    expect(a.expectedHandshakeWaitMs()).toBeCloseTo(1_100);
    const shed = a.handshake(task('shed'));
    await expect(shed).rejects.toEqual(expect.objectContaining({ reason: 'shed', retryAfterS: 1 }));
    expect(a.queued('handshake')).toBe(10);
    await release();
    for (let i = 0; i < 10; i++) {
      clock += 100;
      await finish(`q${i}`);
    }
    expect(started).toEqual(Array.from({ length: 10 }, (_, i) => `q${i}`));
    expect(await Promise.all(queued)).toEqual(Array(10).fill('served'));
  });

  it('measures the rate over seconds: one pause moves the estimate by its share of the time', async () => {
    const a = admission(1, 60_000);
    const release = await measureRate(a, 1_000, 10);
    expect(a.expectedHandshakeWaitMs()).toBeCloseTo(10);
    const { task, finish } = tasks();
    void a.handshake(task('after the pause'));
    clock += 1_000;
    await release();
    // A second without a start after ten seconds of one every 10 ms: about 12 ms now, not 70 or 1,000.
    expect(a.expectedHandshakeWaitMs()).toBeGreaterThan(10);
    expect(a.expectedHandshakeWaitMs()).toBeLessThan(15);
    await finish('after the pause');
  });

  it('suggests retrying after the time the queued handshakes need, from 1 to 60 s', async () => {
    const shedAfter = async (maxWaitMs: number, queued: number) => {
      const a = admission(1, maxWaitMs);
      await measureRate(a, 40, 1_000);
      const { task } = tasks();
      for (let i = 0; i < queued; i++) void reasonOf(a.handshake(task(`q${i}`)));
      expect(a.queued('handshake')).toBe(queued);
      return a.handshake(task('shed')).catch((err: AdmissionRefused) => err);
    };
    expect(await shedAfter(10_000, 10)).toEqual(expect.objectContaining({ reason: 'shed', retryAfterS: 10 }));
    expect(await shedAfter(120_000, 120)).toEqual(
      expect.objectContaining({ reason: 'shed', retryAfterS: 60 }),
    );
  });
});
