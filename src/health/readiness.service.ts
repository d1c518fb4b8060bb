import { Injectable, ServiceUnavailableException } from '@nestjs/common';
import { type HealthCheckResult, HealthCheckService, TypeOrmHealthIndicator } from '@nestjs/terminus';
import { databaseNotAnswering, draining } from './health.errors';
import { ShutdownState } from './shutdown-state';

/** Readiness: the process takes work (it is not draining) and the database answers a ping within 2 s. */
@Injectable()
export class ReadinessService {
  constructor(
    private readonly health: HealthCheckService,
    private readonly database: TypeOrmHealthIndicator,
    private readonly shutdown: ShutdownState,
  ) {}

  async check(): Promise<HealthCheckResult> {
    if (this.shutdown.draining) throw draining();
    try {
      return await this.health.check([() => this.database.pingCheck('database', { timeout: 2000 })]);
    } catch (err) {
      // Terminus reports a failed check as a 503 exception carrying the check's result.
      if (err instanceof ServiceUnavailableException) throw databaseNotAnswering();
      throw err;
    }
  }
}
