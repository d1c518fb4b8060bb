import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { isUniqueViolation } from '../common/errors/postgres-errors';
import {
  PARTITIONED_TABLES,
  partitionName,
  TelemetryPartitionsRepository,
} from './telemetry-partitions.repository';

const DAY_MS = 86_400_000;
/** Partitions exist this many days ahead, so that midnight never finds a day without one. */
const DAYS_AHEAD = 2;
const MAINTENANCE_INTERVAL_MS = 3_600_000;

export function startOfUtcDay(at: Date): Date {
  return new Date(Math.floor(at.getTime() / DAY_MS) * DAY_MS);
}

/**
 * Keeps the daily partitions of device log lines and health metrics: those of the retention window and the next
 * days exist (created at start, before devices connect, and every hour), older ones are dropped whole.
 */
@Injectable()
export class TelemetryPartitions implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('DeviceTelemetry');
  private timer: NodeJS.Timeout | null = null;
  private readonly retentionDays: number;

  constructor(
    private readonly partitions: TelemetryPartitionsRepository,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.retentionDays = config.telemetry.retentionDays;
  }

  async onModuleInit(): Promise<void> {
    await this.maintain();
    this.timer = setInterval(() => {
      this.maintain().catch((err: unknown) => this.logger.error({ err }, 'partition maintenance failed'));
    }, MAINTENANCE_INTERVAL_MS);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** The earliest time a stored line or metric may carry: the start of the oldest day kept. */
  earliest(now = new Date()): Date {
    return new Date(startOfUtcDay(now).getTime() - this.retentionDays * DAY_MS);
  }

  /** Creates the partitions from the oldest day kept to DAYS_AHEAD days ahead; drops those entirely past retention. */
  async maintain(now = new Date()): Promise<{ created: string[]; dropped: string[] }> {
    const created: string[] = [];
    const dropped: string[] = [];
    const first = this.earliest(now).getTime();
    const last = startOfUtcDay(now).getTime() + DAYS_AHEAD * DAY_MS;
    for (const table of PARTITIONED_TABLES) {
      const existing = new Set(await this.partitions.list(table));
      for (let day = first; day <= last; day += DAY_MS) {
        const name = partitionName(table, new Date(day));
        if (existing.has(name)) continue;
        try {
          await this.partitions.create(table, new Date(day));
        } catch (err) {
          // Another instance created it at the same moment.
          if (!isUniqueViolation(err)) throw err;
        }
        created.push(name);
      }
      const keepFrom = partitionName(table, new Date(first));
      for (const name of existing) {
        // Names sort as their days do (YYYYMMDD).
        if (name < keepFrom) {
          await this.partitions.drop(name);
          dropped.push(name);
        }
      }
    }
    if (dropped.length > 0) this.logger.log(`dropped expired partitions: ${dropped.join(', ')}`);
    return { created, dropped };
  }
}
