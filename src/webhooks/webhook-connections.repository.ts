import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { Queryable } from '../database/transactions';

/** A judged connection change whose state differs from the last one sent: what its event says. */
export interface ConnectionChange {
  org_id: string;
  status: 'connected' | 'disconnected';
  changed_at: Date;
  identifier: string;
  product: string;
  firmware_uuid: string | null;
  firmware_version: string | null;
}

/**
 * `webhook_device_connections` (the debounce of connection events, written by a trigger on `devices`) and
 * `webhook_settings` (what the outbox's triggers read). It reads the devices it judges (identifier, product,
 * firmware) for their events, as the triggers of the outbox do.
 */
@Injectable()
export class WebhookConnectionsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** Records this instance's retry window for the events the outbox's triggers write. */
  async writeSettings(retryWindowMs: number): Promise<void> {
    await this.db.query(
      `INSERT INTO webhook_settings (id, retry_window_ms) VALUES (1, $1)
       ON CONFLICT (id) DO UPDATE SET retry_window_ms = EXCLUDED.retry_window_ms
        WHERE webhook_settings.retry_window_ms <> EXCLUDED.retry_window_ms`,
      [retryWindowMs],
    );
  }

  /**
   * Judges, in `tx`, up to `limit` due changes: connections at once, disconnections `debounceMs` after the
   * change (a later change restarts the wait). Each becomes the state sent; those that differ from the state
   * sent before are answered, for their events. The rows are claimed with SKIP LOCKED, so instances judge
   * different ones; a presence write of a claimed device waits for `tx` (its trigger updates the row), then
   * makes it pending again.
   */
  async judgeDue(limit: number, debounceMs: number, tx: Queryable): Promise<ConnectionChange[]> {
    return tx.query<ConnectionChange[]>(
      `WITH connected AS (
         SELECT device_id, status, changed_at, sent_status FROM webhook_device_connections
          WHERE pending AND status = 'connected'
          ORDER BY changed_at LIMIT $1
          FOR UPDATE SKIP LOCKED
       ), disconnected AS (
         SELECT device_id, status, changed_at, sent_status FROM webhook_device_connections
          WHERE pending AND status = 'disconnected' AND changed_at <= now() - $2::float8 * interval '1 millisecond'
          ORDER BY changed_at LIMIT $1
          FOR UPDATE SKIP LOCKED
       ), due AS (
         SELECT * FROM connected UNION ALL SELECT * FROM disconnected
       ), judged AS (
         UPDATE webhook_device_connections c SET pending = false, sent_status = due.status
           FROM due WHERE c.device_id = due.device_id
       )
       SELECT d.org_id, due.status, due.changed_at, d.identifier, p.name AS product,
              d.firmware_metadata->>'uuid' AS firmware_uuid, d.firmware_version
         FROM due
         JOIN devices d ON d.id = due.device_id
         JOIN products p ON p.id = d.product_id
        WHERE due.status IS DISTINCT FROM due.sent_status
        ORDER BY due.changed_at, d.id`,
      [limit, debounceMs],
    );
  }
}
