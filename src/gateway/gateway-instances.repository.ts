import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { Queryable } from '../database/transactions';

/** The `gateway_instances` table: each running gateway instance and its lease. */
@Injectable()
export class GatewayInstancesRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** Extends (or creates) the instance's lease to `leaseSeconds` from now; true when the row was created. */
  async renewLease(instanceId: string, hostname: string, leaseSeconds: number): Promise<boolean> {
    const [row] = await this.db.query<{ inserted: boolean }[]>(
      `INSERT INTO gateway_instances (id, hostname, lease_until)
       VALUES ($1, $2, now() + make_interval(secs => $3))
       ON CONFLICT (id) DO UPDATE SET lease_until = EXCLUDED.lease_until
       RETURNING (xmax = 0) AS inserted`,
      [instanceId, hostname, leaseSeconds],
    );
    return Boolean(row?.inserted);
  }

  async delete(instanceId: string): Promise<void> {
    await this.db.query(`DELETE FROM gateway_instances WHERE id = $1`, [instanceId]);
  }

  /** Deletes the instances whose lease ran out. */
  async deleteExpired(tx: Queryable = this.db): Promise<void> {
    await tx.query(`DELETE FROM gateway_instances WHERE lease_until < now()`);
  }
}
