import { UsageError } from './cli-command';
import { telemetryOptions, updateOptions } from './simulate.command';

describe('simulate: update flags', () => {
  it('leaves unset flags to the simulator defaults', () => {
    expect(updateOptions({})).toEqual({});
  });

  it('reads apply time, fail share, seed and the starting firmware', () => {
    expect(
      updateOptions({
        applyMs: '0',
        failShare: '0.05',
        seed: 'run-1',
        platform: 'rpi4',
        architecture: 'aarch64',
        firmwareVersion: '1.0.0',
      }),
    ).toEqual({
      applyMs: 0,
      failShare: 0.05,
      seed: 'run-1',
      firmware: { platform: 'rpi4', architecture: 'aarch64', version: '1.0.0' },
    });
    expect(updateOptions({ failShare: '1' })).toEqual({ failShare: 1 });
    expect(updateOptions({ failShare: '.5' })).toEqual({ failShare: 0.5 });
  });

  it.each([
    [{ applyMs: '-1' }, '--apply-ms must be a whole number of milliseconds up to 3600000'],
    [{ applyMs: '1.5' }, '--apply-ms must be a whole number of milliseconds up to 3600000'],
    [{ applyMs: '3600001' }, '--apply-ms must be a whole number of milliseconds up to 3600000'],
    [{ failShare: '1.01' }, '--fail-share must be a number from 0 to 1'],
    [{ failShare: '5%' }, '--fail-share must be a number from 0 to 1'],
    [{ failShare: '' }, '--fail-share must be a number from 0 to 1'],
    [{ platform: ' ' }, '--platform must not be empty'],
  ])('refuses %j', (options, message) => {
    expect(() => updateOptions(options)).toThrow(new UsageError(message));
  });
});

describe('simulate: telemetry flags', () => {
  it('reads the log rate and the health interval; unset, the simulator defaults', () => {
    expect(telemetryOptions({})).toEqual({});
    expect(telemetryOptions({ logsPerSecond: '0.5', healthEvery: '60' })).toEqual({
      logsPerSecond: 0.5,
      healthEveryMs: 60_000,
    });
  });

  it.each([
    [{ logsPerSecond: '-1' }, '--logs-per-second must be a number from 0 to 100'],
    [{ logsPerSecond: '101' }, '--logs-per-second must be a number from 0 to 100'],
    [{ healthEvery: '0' }, '--health-every must be a whole number of seconds from 1 to 86400'],
    [{ healthEvery: '1.5' }, '--health-every must be a whole number of seconds from 1 to 86400'],
  ])('refuses %j', (options, message) => {
    expect(() => telemetryOptions(options)).toThrow(new UsageError(message));
  });
});
