import { performance } from 'node:perf_hooks';
import { ErrorCode } from '../common/errors/error-codes';
import type { InstanceBus } from '../database/instance-bus/instance-bus';
import type { FirmwareStorage } from '../firmware/storage/firmware-storage';
import { DATABASE_ANSWER_MS, ReadinessService } from './readiness.service';
import { ShutdownState } from './shutdown-state';

describe('ReadinessService', () => {
  let bus: { caughtUpAt: number };
  let shutdown: ShutdownState;
  let probes: number;
  let storageUp: boolean;
  let readiness: ReadinessService;

  beforeEach(() => {
    bus = { caughtUpAt: performance.now() };
    shutdown = new ShutdownState();
    probes = 0;
    storageUp = true;
    const storage = {
      probe: () => {
        probes += 1;
        return storageUp ? Promise.resolve() : Promise.reject(new Error('bucket gone'));
      },
    };
    readiness = new ReadinessService(
      bus as unknown as InstanceBus,
      shutdown,
      storage as unknown as FirmwareStorage,
    );
  });

  const failure = async () => {
    const error: unknown = await readiness.check().then(
      () => null,
      (err: unknown) => err,
    );
    return (error as { code?: ErrorCode } | null)?.code ?? null;
  };

  it('is ready when the last heartbeat answered was sent within the limit, and says what answered', async () => {
    await expect(readiness.check()).resolves.toEqual({
      status: 'ok',
      info: { database: { status: 'up' }, storage: { status: 'up' } },
      error: {},
      details: { database: { status: 'up' }, storage: { status: 'up' } },
    });
  });

  it('is not ready when the database has not answered a heartbeat lately, or the bus is not connected', async () => {
    bus.caughtUpAt = performance.now() - DATABASE_ANSWER_MS - 100;
    expect(await failure()).toBe(ErrorCode.DATABASE_UNAVAILABLE);
    bus.caughtUpAt = Number.NEGATIVE_INFINITY;
    expect(await failure()).toBe(ErrorCode.DATABASE_UNAVAILABLE);
    bus.caughtUpAt = performance.now();
    expect(await failure()).toBeNull();
  });

  it('is not ready while draining, whatever the database says', async () => {
    shutdown.draining = true;
    expect(await failure()).toBe(ErrorCode.SERVICE_UNAVAILABLE);
  });

  it('is not ready when the storage cannot be reached; the probe is reused for a few seconds', async () => {
    storageUp = false;
    expect(await failure()).toBe(ErrorCode.SERVICE_UNAVAILABLE);
    expect(await failure()).toBe(ErrorCode.SERVICE_UNAVAILABLE);
    expect(probes).toBe(1);
  });
});
