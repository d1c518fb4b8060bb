import { Injectable, Logger, ServiceUnavailableException } from '@nestjs/common';
import {
  type HealthCheckResult,
  HealthCheckService,
  type HealthIndicatorResult,
  TypeOrmHealthIndicator,
} from '@nestjs/terminus';
import { FirmwareStorage } from '../firmware/storage/firmware-storage';
import { databaseNotAnswering, draining, storageNotAnswering } from './health.errors';
import { ShutdownState } from './shutdown-state';

/** How long one storage probe's answer is reused: a balancer polling every second costs one HeadBucket in 5 s. */
export const STORAGE_PROBE_TTL_MS = 5000;

/**
 * Readiness: the process takes work (it is not draining), the database answers a ping within 2 s, and the
 * firmware storage can be reached (its probe, cached a few seconds).
 */
@Injectable()
export class ReadinessService {
  private readonly logger = new Logger(ReadinessService.name);
  private storageProbe: { at: number; result: Promise<boolean> } | null = null;

  constructor(
    private readonly health: HealthCheckService,
    private readonly database: TypeOrmHealthIndicator,
    private readonly shutdown: ShutdownState,
    private readonly storage: FirmwareStorage,
  ) {}

  async check(): Promise<HealthCheckResult> {
    if (this.shutdown.draining) throw draining();
    let result: HealthCheckResult;
    try {
      result = await this.health.check([() => this.database.pingCheck('database', { timeout: 2000 })]);
    } catch (err) {
      // Terminus reports a failed check as a 503 exception carrying the check's result.
      if (err instanceof ServiceUnavailableException) throw databaseNotAnswering();
      throw err;
    }
    if (!(await this.storageReachable())) throw storageNotAnswering();
    const storage: HealthIndicatorResult = { storage: { status: 'up' } };
    return { ...result, info: { ...result.info, ...storage }, details: { ...result.details, ...storage } };
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
