import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { type AuditEntry, AuditService } from '../audit/audit.service';
import { APP_CONFIG, type AppConfig } from '../config/config';
import type { Queryable } from '../database/transactions';
import { eventFromAudit, type OutboxEvent } from './webhook-event-types';
import { type EventSource, type EventTarget, WebhookOutboxRepository } from './webhook-outbox.repository';

/** A new event id: `evt_` and 32 hexadecimal characters (the `webhook-id` receivers de-duplicate with). */
export const newEventId = (): string => `evt_${randomUUID().replace(/-/g, '')}`;

/**
 * Writes webhook events into the outbox in the transaction of the change they describe. Every change is audited
 * in its transaction, so the outbox observes the audit trail: each entry that describes an event of the
 * catalogue (`eventFromAudit`) becomes that event, committed or rolled back with the change.
 */
@Injectable()
export class WebhookOutbox {
  constructor(
    audit: AuditService,
    private readonly outbox: WebhookOutboxRepository,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {
    audit.observe((tx, entry) => this.recorded(tx, entry));
  }

  /** Writes `event` (for the organization's webhooks that want it) in `tx`. */
  emit(tx: Queryable, event: OutboxEvent): Promise<void> {
    return this.outbox.emit({ ...event, eventId: newEventId() }, this.config.webhooks.retryWindowMs, tx);
  }

  /** Writes several events (in this order) in `tx`, in one statement. */
  emitMany(tx: Queryable, events: OutboxEvent[]): Promise<void> {
    return this.outbox.emitMany(events, this.config.webhooks.retryWindowMs, tx);
  }

  /**
   * Whether an enabled webhook of these organizations wants one of `types` (for the product named): a change of
   * many rows asks once and writes no event at all (no statement per window) when none does. A webhook created
   * while that change runs misses its events, as one created just after it.
   */
  wanted(targets: readonly EventTarget[], types: readonly string[]): Promise<boolean> {
    return this.outbox.wanted(targets, types);
  }

  /** Writes the events `source` selects (set-based: one statement, whatever their number) in `tx`. */
  emitSelected(tx: Queryable, source: EventSource): Promise<number> {
    return this.outbox.emitSelected(source, this.config.webhooks.retryWindowMs, tx);
  }

  private async recorded(tx: Queryable, entry: AuditEntry): Promise<void> {
    const event = eventFromAudit(entry);
    if (event) await this.emit(tx, event);
  }
}
