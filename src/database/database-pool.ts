import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';

/** The parts of a `pg` pool the pool gauges read. */
export interface PoolCounts {
  totalCount: number;
  idleCount: number;
  waitingCount: number;
}

/** The pg pool TypeORM holds, as the device gateway (warm-up) and the metrics (gauges) see it. */
@Injectable()
export class DatabasePool {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * Opens `count` pool connections now (they stay while in use, and idle for the pool's idle timeout). A server
   * that starts into a reconnect storm would otherwise open them under that load, where a connection that takes
   * longer than the pool's connect timeout to establish fails the handshake that asked for it.
   */
  async openConnections(count: number): Promise<void> {
    await Promise.all(Array.from({ length: count }, () => this.db.query('SELECT 1')));
  }

  /** The pool's connection counts, or undefined when there is no pool (yet). */
  counts(): PoolCounts | undefined {
    if (!this.db.isInitialized) return undefined;
    const master = (this.db.driver as unknown as { master?: Partial<PoolCounts> }).master;
    return typeof master?.totalCount === 'number' ? (master as PoolCounts) : undefined;
  }
}
