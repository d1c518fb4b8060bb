import { isIP } from 'node:net';
import { Inject, Injectable } from '@nestjs/common';
import { AuditService } from '../audit/audit.service';
import type { OrgAccess } from '../common/auth/actor';
import { DomainError } from '../common/errors/domain-error';
import { BLANK } from '../common/errors/messages';
import { Created, pathSegment } from '../common/http/created';
import { type PageRequest, type PaginationView, paginationView } from '../common/http/pagination';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { Transactions } from '../database/transactions';
import { ServerKeyService } from '../device-auth/server-key.service';
import { ProductsService } from '../products/products.service';
import { AddressPolicy } from './address-policy';
import type {
  CreatedWebhookView,
  CreateWebhookDto,
  RedeliverWebhookDto,
  RedeliveryView,
  UpdateWebhookDto,
  WebhookAttemptView,
  WebhookEventQueuedView,
  WebhookEventTypeView,
  WebhookSecretView,
  WebhookView,
} from './dto/webhook.dto';
import { EVENT_TYPES, schemaName } from './webhook-event-types';
import { newEventId } from './webhook-outbox';
import {
  type AttemptRow,
  type RedeliverySelection,
  WebhookOutboxRepository,
} from './webhook-outbox.repository';
import { newSecret } from './webhook-signature';
import { type WebhookChanges, type WebhookRow, WebhooksRepository } from './webhooks.repository';

export const MAX_WEBHOOKS_PER_ORG = 20;
export const TOO_MANY_WEBHOOKS = `An organization has at most ${MAX_WEBHOOKS_PER_ORG} webhooks.`;
export const UNKNOWN_PRODUCT = 'does not name a product of this organization';
export const HTTPS_REQUIRED = 'must be an https:// URL (http:// only for the hosts the server allows)';
export const BAD_URL = 'must be an absolute http(s) URL';
export const URL_CREDENTIALS = 'must not contain a user name or password';
const ISO_TIMESTAMP = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/** The address policy of deliveries (FLEETHUB_WEBHOOK_ALLOW_CIDRS), shared by the API's checks and the sender. */
export const WEBHOOK_ADDRESS_POLICY = Symbol('WEBHOOK_ADDRESS_POLICY');

const iso = (value: Date | null): string | null => (value ? value.toISOString() : null);

export function webhookView(row: WebhookRow): WebhookView {
  return {
    id: String(row.id),
    url: row.url,
    event_types: row.event_types,
    product: row.product,
    enabled: row.enabled,
    rate_limit_per_second: row.rate_limit_per_second,
    disabled_reason: row.disabled_reason,
    disabled_at: iso(row.disabled_at),
    previous_secret_expires_at: iso(row.previous_secret_expires_at),
    inserted_at: row.inserted_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}

function attemptView(row: AttemptRow): WebhookAttemptView {
  return {
    id: String(row.id),
    event_id: row.event_id,
    event_type: row.type,
    attempt: row.attempt,
    status: row.succeeded ? 'succeeded' : 'failed',
    response_status: row.response_status,
    error: row.error,
    latency_ms: row.latency_ms,
    response_excerpt: row.response_excerpt,
    attempted_at: row.attempted_at.toISOString(),
    delivery_state: row.delivery_state,
  };
}

function timestamp(field: string, raw: string): Date {
  const date = new Date(raw);
  if (!ISO_TIMESTAMP.test(raw) || Number.isNaN(date.getTime()))
    throw DomainError.invalidField(field, 'must be an ISO 8601 timestamp, e.g. 2026-11-22T03:04:05Z');
  return date;
}

/**
 * An organization's webhooks: subscriptions, secrets, the delivery log, redeliveries and test events. Events are
 * written by WebhookOutbox and sent by WebhookDispatcher.
 */
@Injectable()
export class WebhooksService {
  constructor(
    private readonly webhooks: WebhooksRepository,
    private readonly outbox: WebhookOutboxRepository,
    private readonly products: ProductsService,
    private readonly serverKey: ServerKeyService,
    private readonly transactions: Transactions,
    private readonly audit: AuditService,
    @Inject(WEBHOOK_ADDRESS_POLICY) private readonly addresses: AddressPolicy,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  eventTypes(): { data: WebhookEventTypeView[] } {
    return {
      data: EVENT_TYPES.map((t) => ({
        type: t.type,
        version: t.version,
        description: t.description,
        subject: t.subject,
        schema: schemaName(t),
      })),
    };
  }

  async create(access: OrgAccess, dto: CreateWebhookDto): Promise<Created<{ data: CreatedWebhookView }>> {
    const url = this.checkUrl(dto.url);
    const product = await this.checkProduct(access, dto.product ?? null);
    const secret = newSecret();
    const row = await this.transactions.run(async (tx) => {
      if ((await this.webhooks.countForOrgLocked(access.orgId, tx)) >= MAX_WEBHOOKS_PER_ORG)
        throw DomainError.conflict(TOO_MANY_WEBHOOKS);
      const inserted = await this.webhooks.insert(
        {
          orgId: access.orgId,
          url,
          eventTypes: [...new Set(dto.event_types)],
          product,
          enabled: dto.enabled ?? true,
          rateLimitPerSecond: dto.rate_limit_per_second ?? null,
          secretEncrypted: this.serverKey.encrypt(secret),
        },
        tx,
      );
      await this.audit.record(tx, {
        orgId: access.orgId,
        actor: access.actor,
        action: 'webhook.create',
        targetType: 'webhook',
        targetId: String(inserted.id),
        details: { url: new URL(url).origin, event_types: inserted.event_types, product },
      });
      return inserted;
    });
    return new Created(`/api/orgs/${pathSegment(access.orgName)}/webhooks/${row.id}`, {
      data: { ...webhookView(row), secret },
    });
  }

  async list(access: OrgAccess): Promise<{ data: WebhookView[] }> {
    return { data: (await this.webhooks.list(access.orgId)).map(webhookView) };
  }

  async show(access: OrgAccess, id: string): Promise<{ data: WebhookView }> {
    return { data: webhookView(await this.find(access, id)) };
  }

  async update(access: OrgAccess, id: string, dto: UpdateWebhookDto): Promise<{ data: WebhookView }> {
    const changes: WebhookChanges = {};
    if (dto.url !== undefined) changes.url = this.checkUrl(dto.url);
    if (dto.event_types !== undefined) changes.eventTypes = [...new Set(dto.event_types)];
    if (dto.product !== undefined) changes.product = await this.checkProduct(access, dto.product);
    if (dto.enabled !== undefined) changes.enabled = dto.enabled;
    if (dto.rate_limit_per_second !== undefined) changes.rateLimitPerSecond = dto.rate_limit_per_second;
    this.checkId(id);
    if (Object.keys(changes).length === 0) return this.show(access, id);
    const row = await this.transactions.run(async (tx) => {
      const updated = await this.webhooks.update(
        access.orgId,
        id,
        changes,
        `disabled by ${access.actor.email}`,
        tx,
      );
      if (!updated) throw DomainError.notFound();
      await this.audit.record(tx, {
        orgId: access.orgId,
        actor: access.actor,
        action: 'webhook.update',
        targetType: 'webhook',
        targetId: id,
        details: {
          ...(changes.url !== undefined && { url: new URL(changes.url).origin }),
          ...(changes.eventTypes !== undefined && { event_types: changes.eventTypes }),
          ...(changes.product !== undefined && { product: changes.product }),
          ...(changes.enabled !== undefined && { enabled: changes.enabled }),
          ...(changes.rateLimitPerSecond !== undefined && {
            rate_limit_per_second: changes.rateLimitPerSecond,
          }),
        },
      });
      return updated;
    });
    return { data: webhookView(row) };
  }

  async remove(access: OrgAccess, id: string): Promise<void> {
    this.checkId(id);
    await this.transactions.run(async (tx) => {
      if (!(await this.webhooks.delete(access.orgId, id, tx))) throw DomainError.notFound();
      await this.audit.record(tx, {
        orgId: access.orgId,
        actor: access.actor,
        action: 'webhook.delete',
        targetType: 'webhook',
        targetId: id,
      });
    });
  }

  /** A new secret; the current one keeps signing for the grace period (FLEETHUB_WEBHOOK_SECRET_GRACE_HOURS). */
  async rotateSecret(access: OrgAccess, id: string): Promise<{ data: WebhookSecretView }> {
    this.checkId(id);
    const secret = newSecret();
    const row = await this.transactions.run(async (tx) => {
      const rotated = await this.webhooks.rotateSecret(
        access.orgId,
        id,
        this.serverKey.encrypt(secret),
        this.config.webhooks.secretGraceMs,
        tx,
      );
      if (!rotated) throw DomainError.notFound();
      await this.audit.record(tx, {
        orgId: access.orgId,
        actor: access.actor,
        action: 'webhook.rotate_secret',
        targetType: 'webhook',
        targetId: id,
        details: { previous_secret_expires_at: iso(rotated.previous_secret_expires_at) },
      });
      return rotated;
    });
    return { data: { secret, previous_secret_expires_at: iso(row.previous_secret_expires_at) } };
  }

  async deliveries(
    access: OrgAccess,
    id: string,
    page: PageRequest,
  ): Promise<{ data: WebhookAttemptView[]; pagination: PaginationView }> {
    const webhook = await this.find(access, id);
    const { rows, count } = await this.outbox.listAttempts(webhook.id, page);
    return { data: rows.map(attemptView), pagination: paginationView(page, count) };
  }

  /** Queues one event, or the events of a time range, for the webhook again (with a fresh retry window). */
  async redeliver(
    access: OrgAccess,
    id: string,
    dto: RedeliverWebhookDto,
  ): Promise<{ data: RedeliveryView }> {
    const selection = this.selection(dto);
    const webhook = await this.find(access, id);
    if ('eventId' in selection && !(await this.outbox.eventExists(access.orgId, selection.eventId)))
      throw DomainError.notFound();
    const queued = await this.transactions.run(async (tx) => {
      const count = await this.outbox.redeliver(webhook, selection, this.config.webhooks.retryWindowMs, tx);
      await this.audit.record(tx, {
        orgId: access.orgId,
        actor: access.actor,
        action: 'webhook.redeliver',
        targetType: 'webhook',
        targetId: id,
        details: { ...dto, queued: count },
      });
      return count;
    });
    return { data: { queued } };
  }

  /** Queues a `webhook.test` event for this webhook alone (sent even while it is disabled). */
  async test(access: OrgAccess, id: string): Promise<{ data: WebhookEventQueuedView }> {
    const webhook = await this.find(access, id);
    const eventId = newEventId();
    const occurredAt = await this.transactions.run((tx) =>
      this.outbox.emitTo(
        webhook.id,
        {
          eventId,
          orgId: access.orgId,
          type: 'webhook.test',
          product: null,
          subject: `webhook:${webhook.id}`,
          data: { webhook_id: String(webhook.id), actor: { type: 'user', email: access.actor.email } },
        },
        this.config.webhooks.retryWindowMs,
        tx,
      ),
    );
    return { data: { event_id: eventId, type: 'webhook.test', timestamp: occurredAt.toISOString() } };
  }

  private selection(dto: RedeliverWebhookDto): RedeliverySelection {
    const range = dto.from !== undefined || dto.to !== undefined;
    if (dto.event_id !== undefined && range)
      throw DomainError.invalidField('event_id', 'give either event_id, or from and to');
    if (dto.event_id !== undefined) {
      if (dto.event_id === '') throw DomainError.invalidField('event_id', BLANK);
      return { eventId: dto.event_id };
    }
    if (!range) throw DomainError.invalidField('event_id', `${BLANK} (or give from and to)`);
    if (!dto.from) throw DomainError.invalidField('from', BLANK);
    if (!dto.to) throw DomainError.invalidField('to', BLANK);
    const from = timestamp('from', dto.from);
    const to = timestamp('to', dto.to);
    if (to < from) throw DomainError.invalidField('to', 'must not be before from');
    return { from, to };
  }

  private checkId(id: string): void {
    if (!/^[1-9]\d{0,17}$/.test(id)) throw DomainError.notFound();
  }

  private async find(access: OrgAccess, id: string): Promise<WebhookRow> {
    this.checkId(id);
    const row = await this.webhooks.find(access.orgId, id);
    if (!row) throw DomainError.notFound();
    return row;
  }

  private async checkProduct(access: OrgAccess, name: string | null): Promise<string | null> {
    if (name === null || name === '') return null;
    if (!(await this.products.findByName(access.orgId, name)))
      throw DomainError.invalidField('product', UNKNOWN_PRODUCT);
    return name;
  }

  /** The URL as stored, or a 422: https (http for allowed hosts), no credentials, no internal address literal. */
  private checkUrl(raw: string): string {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw DomainError.invalidField('url', BAD_URL);
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw DomainError.invalidField('url', BAD_URL);
    if (url.username !== '' || url.password !== '') throw DomainError.invalidField('url', URL_CREDENTIALS);
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();
    if (
      url.protocol === 'http:' &&
      !this.config.webhooks.httpHosts.some((h) => h.replace(/^\[(.*)\]$/, '$1') === host)
    )
      throw DomainError.invalidField('url', HTTPS_REQUIRED);
    if (isIP(host) !== 0) {
      const refusal = this.addresses.refusal(host);
      if (refusal !== null)
        throw DomainError.invalidField('url', `must not point to an internal address (${refusal})`);
    }
    if (url.href.length > 2048) throw DomainError.invalidField('url', 'should be at most 2048 character(s)');
    return url.href;
  }
}
