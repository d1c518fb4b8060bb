import { AppLogger } from './common/http/logger';
import type { RunningServer } from './server';
import { FORCED_EXIT_MS, GracefulShutdown } from './shutdown';

describe('GracefulShutdown', () => {
  const config = { shutdownDrainMs: 1000, shutdownTimeoutMs: 5000 };
  let exit: jest.Mock;

  function server(closed: Promise<number>) {
    return {
      app: {} as RunningServer['app'],
      url: 'http://127.0.0.1:4000',
      drain: jest.fn(),
      close: jest.fn((_limitMs?: number) => closed),
      cut: jest.fn(() => 2),
    };
  }

  beforeEach(() => {
    jest.useFakeTimers();
    exit = jest.fn();
  });

  afterEach(() => {
    jest.useRealTimers();
  });

  it('drains first, then closes with the limit for requests in flight, and exits 0', async () => {
    const running = server(Promise.resolve(0));
    new GracefulShutdown(running, config, new AppLogger('silent'), exit).handle('SIGTERM');
    expect(running.drain).toHaveBeenCalledWith(1000);
    await jest.advanceTimersByTimeAsync(999);
    expect(running.close).not.toHaveBeenCalled();
    await jest.advanceTimersByTimeAsync(1);
    expect(running.close).toHaveBeenCalledWith(5000);
    expect(exit).toHaveBeenCalledWith(0);
  });

  it('exits 1 when the limit had to cut requests', async () => {
    const running = server(Promise.resolve(3));
    new GracefulShutdown(running, config, new AppLogger('silent'), exit).handle('SIGTERM');
    await jest.advanceTimersByTimeAsync(1000);
    expect(exit).toHaveBeenCalledWith(1);
  });

  it('a second signal cuts what is in flight and exits 1 without waiting for the drain', async () => {
    const running = server(Promise.resolve(0));
    const shutdown = new GracefulShutdown(running, config, new AppLogger('silent'), exit);
    shutdown.handle('SIGTERM');
    shutdown.handle('SIGTERM');
    expect(running.cut).toHaveBeenCalledTimes(1);
    expect(running.close).toHaveBeenCalledWith(0);
    await jest.advanceTimersByTimeAsync(0);
    expect(exit.mock.calls).toEqual([[1]]);
  });

  it('after a second signal, exits within FORCED_EXIT_MS even when closing hangs', async () => {
    const running = server(new Promise<number>(() => undefined));
    const shutdown = new GracefulShutdown(running, config, new AppLogger('silent'), exit);
    shutdown.handle('SIGTERM');
    shutdown.handle('SIGINT');
    await jest.advanceTimersByTimeAsync(FORCED_EXIT_MS - 1);
    expect(exit).not.toHaveBeenCalled();
    await jest.advanceTimersByTimeAsync(1);
    expect(exit.mock.calls).toEqual([[1]]);
  });
});
