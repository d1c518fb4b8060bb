import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { Tx } from '../database/transactions';

/** The `event_streams` table: the open event streams of every instance, for the per-user limit. */
@Injectable()
export class EventStreamsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * Records a stream of the user on `instanceId` unless the user already has `limit` open on live instances
   * (those whose lease has not run out), under a lock of the user (in `tx`): two streams opened at once cannot
   * both take the last place. Its id, or null when the user is at the limit.
   */
  async insertWithinLimit(
    userId: string,
    instanceId: string,
    productId: string,
    limit: number,
    tx: Tx,
  ): Promise<string | null> {
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext('event-streams'), hashtext($1))`, [userId]);
    const rows: { id: string }[] = await tx.query(
      `INSERT INTO event_streams (user_id, instance_id, product_id)
       SELECT $1, $2, $3
        WHERE (SELECT count(*) FROM event_streams s JOIN gateway_instances g ON g.id = s.instance_id
                WHERE s.user_id = $1 AND g.lease_until > now()) < $4
       RETURNING id`,
      [userId, instanceId, productId, limit],
    );
    return rows[0]?.id ?? null;
  }

  async delete(id: string): Promise<void> {
    await this.db.query(`DELETE FROM event_streams WHERE id = $1`, [id]);
  }

  /** Every stream of the instance goes (it stops serving them). */
  async deleteOfInstance(instanceId: string): Promise<void> {
    await this.db.query(`DELETE FROM event_streams WHERE instance_id = $1`, [instanceId]);
  }
}
