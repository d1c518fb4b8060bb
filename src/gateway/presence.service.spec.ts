import { Logger } from '@nestjs/common';
import type { DeviceRecordsService } from '../devices/device-records.service';
import type { LiveEvents } from '../live/live-events';
import { fake, fakeTransactions } from '../../test/support/unit-fakes';
import type { GatewayInstancesRepository } from './gateway-instances.repository';
import { GatewayPeers } from './gateway-peers';
import { PresenceService } from './presence.service';

const INSTANCE = '00000000-0000-4000-8000-00000000000a';

function pgFailure(code: string): Error {
  return Object.assign(new Error(`SQLSTATE ${code}`), { code });
}

async function startedPresence(
  markDisconnected: jest.Mock,
  markConnectedAgain = jest.fn(async () => undefined),
) {
  const devices = fake<DeviceRecordsService>({
    markDisconnected,
    markConnectedAgain,
    disconnectFromExpiredInstances: jest.fn(async () => ({ reaped: 0, watched: [] })),
    disconnectAllHeldBy: jest.fn(async () => []),
  });
  const instances = fake<GatewayInstancesRepository>({
    renewLease: jest.fn(async () => ({ inserted: false, others: 0 })),
    deleteExpired: jest.fn(async () => undefined),
    delete: jest.fn(async () => undefined),
  });
  const live = fake<LiveEvents>({ deviceConnection: jest.fn(), wantedProducts: jest.fn(() => []) });
  const presence = new PresenceService(devices, instances, fakeTransactions(), new GatewayPeers(), live);
  await presence.start(INSTANCE, () => []);
  return presence;
}

describe('PresenceService disconnections', () => {
  // The failures these tests cause are logged as warnings: expected here, kept out of the test output.
  beforeEach(() => jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined));
  afterEach(() => {
    jest.useRealTimers();
    jest.restoreAllMocks();
  });

  it('connects again a device that joined here while its disconnection was being written', async () => {
    let release: () => void = () => undefined;
    const markDisconnected = jest.fn(() => new Promise<void>((resolve) => (release = resolve)));
    const markConnectedAgain = jest.fn(async () => undefined);
    const presence = await startedPresence(markDisconnected, markConnectedAgain);
    void presence.disconnected('1');
    void presence.disconnected('2');
    const flushed = presence.flushDisconnected();
    presence.joined('2');
    release();
    await flushed;
    expect(markDisconnected).toHaveBeenCalledWith(['1', '2'], INSTANCE);
    expect(markConnectedAgain.mock.calls).toEqual([[['2'], INSTANCE]]);
    await presence.stop();
  });

  it('connects again a device whose join began while its disconnection was being written', async () => {
    let release: () => void = () => undefined;
    const markDisconnected = jest.fn(() => new Promise<void>((resolve) => (release = resolve)));
    const markConnectedAgain = jest.fn(async () => undefined);
    const presence = await startedPresence(markDisconnected, markConnectedAgain);
    void presence.disconnected('1');
    const flushed = presence.flushDisconnected();
    // The join's write runs now; the join ends (joined) only after the disconnection was written.
    presence.joining('1');
    release();
    await flushed;
    presence.joined('1');
    expect(markConnectedAgain.mock.calls).toEqual([[['1'], INSTANCE]]);
    await presence.stop();
  });

  it('writes a batch again when PostgreSQL aborted it as a deadlock victim', async () => {
    const markDisconnected = jest
      .fn()
      .mockRejectedValueOnce(pgFailure('40P01'))
      .mockResolvedValueOnce(undefined);
    const presence = await startedPresence(markDisconnected);
    void presence.disconnected('1');
    void presence.disconnected('2');
    await presence.flushDisconnected();
    expect(markDisconnected.mock.calls).toEqual([
      [['1', '2'], INSTANCE],
      [['1', '2'], INSTANCE],
    ]);
    await presence.stop();
  });

  it('queues a batch that still fails again, without the devices that joined here meanwhile', async () => {
    jest.useFakeTimers();
    const markDisconnected = jest.fn().mockRejectedValueOnce(pgFailure('57014')).mockResolvedValue(undefined);
    const presence = await startedPresence(markDisconnected);
    void presence.disconnected('1').catch(() => undefined);
    void presence.disconnected('2').catch(() => undefined);
    const failed = presence.flushDisconnected();
    presence.joined('2');
    await expect(failed).rejects.toMatchObject({ code: '57014' });
    expect(markDisconnected).toHaveBeenCalledTimes(1);
    await jest.advanceTimersByTimeAsync(1000);
    expect(markDisconnected.mock.calls).toEqual([
      [['1', '2'], INSTANCE],
      [['1'], INSTANCE],
    ]);
    await presence.stop();
  });

  it('gives up on a statement after five aborted attempts and keeps its devices queued', async () => {
    const markDisconnected = jest.fn().mockRejectedValue(pgFailure('40001'));
    const presence = await startedPresence(markDisconnected);
    void presence.disconnected('9').catch(() => undefined);
    await expect(presence.flushDisconnected()).rejects.toMatchObject({ code: '40001' });
    expect(markDisconnected).toHaveBeenCalledTimes(5);
    expect((presence as unknown as { leaving: Set<string> }).leaving).toEqual(new Set(['9']));
    await presence.stop();
  });

  it('schedules no write after it stopped, even when its last one failed', async () => {
    jest.useFakeTimers();
    const markDisconnected = jest.fn().mockRejectedValue(pgFailure('40001'));
    const presence = await startedPresence(markDisconnected);
    void presence.disconnected('9').catch(() => undefined);
    const stopping = presence.stop();
    await jest.advanceTimersByTimeAsync(1000);
    await stopping;
    const calls = markDisconnected.mock.calls.length;
    expect(calls).toBeGreaterThan(0);
    await jest.advanceTimersByTimeAsync(10_000);
    expect(markDisconnected).toHaveBeenCalledTimes(calls);
    expect(jest.getTimerCount()).toBe(0);
  });
});
