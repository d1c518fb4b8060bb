import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { Queryable } from '../database/transactions';

/** The `gateway_instances` table: each running gateway instance and its lease. */
@Injectable()
export class GatewayInstancesRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * Extends (or creates) the instance's lease to `leaseSeconds` from now: whether the row was created, and how many
   * other instances hold a live lease.
   */
  async renewLease(
    instanceId: string,
    hostname: string,
    leaseSeconds: number,
  ): Promise<{ inserted: boolean; others: number }> {
    const [row] = await this.db.query<{ inserted: boolean; others: number }[]>(
      `WITH renewed AS (
         INSERT INTO gateway_instances (id, hostname, lease_until)
         VALUES ($1, $2, now() + make_interval(secs => $3))
         ON CONFLICT (id) DO UPDATE SET lease_until = EXCLUDED.lease_until
         RETURNING (xmax = 0) AS inserted)
       SELECT renewed.inserted,
              (SELECT count(*)::int FROM gateway_instances WHERE id <> $1 AND lease_until > now()) AS others
         FROM renewed`,
      [instanceId, hostname, leaseSeconds],
    );
    return { inserted: Boolean(row?.inserted), others: row?.others ?? 0 };
  }

  async delete(instanceId: string): Promise<void> {
    await this.db.query(`DELETE FROM gateway_instances WHERE id = $1`, [instanceId]);
  }

  /** Deletes the instances whose lease ran out. */
  async deleteExpired(tx: Queryable = this.db): Promise<void> {
    await tx.query(`DELETE FROM gateway_instances WHERE lease_until < now()`);
  }
}
