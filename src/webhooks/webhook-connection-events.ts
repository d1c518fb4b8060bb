import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { Transactions } from '../database/transactions';
import { WebhookConnectionsRepository } from './webhook-connections.repository';
import type { OutboxEvent } from './webhook-event-types';
import { WebhookOutbox } from './webhook-outbox';

/** Changes judged per transaction; a sweep runs transactions until fewer are due. */
const JUDGE_BATCH = 500;

/**
 * `device.connected` and `device.disconnected`, debounced. A trigger on `devices` records every change between
 * connected and not in `webhook_device_connections` (in the presence write's transaction, whatever instance or
 * statement made it: a join, a batch of disconnections, the reaper). Every instance sweeps that table each
 * FLEETHUB_WEBHOOK_POLL_MS: a connection is judged at once, a disconnection once the device has stayed
 * disconnected for FLEETHUB_WEBHOOK_CONNECTION_DEBOUNCE_SEC; an event is written when the state differs from the
 * last one sent, in the transaction that records it as sent. So a device flapping inside the window sends
 * nothing, or one pair, and the state survives restarts and moves between instances; no timer per device.
 */
@Injectable()
export class WebhookConnectionEvents implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(WebhookConnectionEvents.name);
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;

  constructor(
    private readonly connections: WebhookConnectionsRepository,
    private readonly outbox: WebhookOutbox,
    private readonly transactions: Transactions,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  onApplicationBootstrap(): void {
    this.connections
      .writeSettings(this.config.webhooks.retryWindowMs)
      .catch((err: unknown) => this.logger.warn({ err }, 'webhook settings not written'));
    this.timer = setInterval(() => void this.sweep(), this.config.webhooks.pollMs);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.running;
  }

  /** Judges every due change (one sweep at a time here). */
  sweep(): Promise<void> {
    this.running ??= this.judgeAll()
      .catch((err: unknown) => this.logger.warn({ err }, 'connection events sweep failed'))
      .finally(() => {
        this.running = null;
      });
    return this.running;
  }

  private async judgeAll(): Promise<void> {
    for (;;) {
      const judged = await this.transactions.run(async (tx) => {
        const changes = await this.connections.judgeDue(
          JUDGE_BATCH,
          this.config.webhooks.connectionDebounceMs,
          tx,
        );
        const events: OutboxEvent[] = changes.map((change) => ({
          orgId: change.org_id,
          type: `device.${change.status}`,
          product: change.product,
          subject: `device:${change.identifier}`,
          data: {
            identifier: change.identifier,
            product: change.product,
            firmware_uuid: change.firmware_uuid,
            firmware_version: change.firmware_version,
            [`${change.status}_at`]: change.changed_at.toISOString(),
            actor: { type: 'system' },
          },
        }));
        await this.outbox.emitMany(tx, events);
        return changes.length;
      });
      if (judged < JUDGE_BATCH) return;
    }
  }
}
