import { Injectable, Logger } from '@nestjs/common';
import type { HealthCheckResult, HealthIndicatorResult } from '@nestjs/terminus';
import { performance } from 'node:perf_hooks';
import { InstanceBus } from '../database/instance-bus/instance-bus';
import { FirmwareStorage } from '../firmware/storage/firmware-storage';
import { databaseNotAnswering, draining, storageNotAnswering } from './health.errors';
import { ShutdownState } from './shutdown-state';

/** How long one storage probe's answer is reused: a balancer polling every second costs one HeadBucket in 5 s. */
export const STORAGE_PROBE_TTL_MS = 5000;

/** The database answers when a round trip sent on the instance's own connection within this was answered. */
export const DATABASE_ANSWER_MS = 2000;

/**
 * Readiness: the process takes work (it is not draining), the database answers, and the firmware storage can be
 * reached (its probe, cached a few seconds). "The database answers" is read off the instance bus's heartbeat, a
 * round trip every 500 ms on a connection of its own: a ping through the pool waited behind the device joins for a
 * free connection, so an instance absorbing a reconnect storm looked down to the balancer for seconds and was
 * taken out of service when it was needed most (docs/decisions.md, "Readiness").
 */
@Injectable()
export class ReadinessService {
  private readonly logger = new Logger(ReadinessService.name);
  private storageProbe: { at: number; result: Promise<boolean> } | null = null;

  constructor(
    private readonly bus: InstanceBus,
    private readonly shutdown: ShutdownState,
    private readonly storage: FirmwareStorage,
  ) {}

  async check(): Promise<HealthCheckResult> {
    if (this.shutdown.draining) throw draining();
    if (!(performance.now() - this.bus.caughtUpAt <= DATABASE_ANSWER_MS)) throw databaseNotAnswering();
    if (!(await this.storageReachable())) throw storageNotAnswering();
    const up: HealthIndicatorResult = { database: { status: 'up' }, storage: { status: 'up' } };
    return { status: 'ok', info: up, error: {}, details: up };
  }

  private storageReachable(now = Date.now()): Promise<boolean> {
    if (this.storageProbe === null || now - this.storageProbe.at >= STORAGE_PROBE_TTL_MS) {
      const result = this.storage.probe().then(
        () => true,
        (err: unknown) => {
          this.logger.warn({ err }, 'firmware storage cannot be reached');
          return false;
        },
      );
      this.storageProbe = { at: now, result };
    }
    return this.storageProbe.result;
  }
}
