import { randomUUID } from 'node:crypto';
import { setImmediate as afterPendingIo } from 'node:timers/promises';
import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { Counter, Gauge, Histogram } from 'prom-client';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { InstanceBus } from '../database/instance-bus/instance-bus';
import { ServerKeyService } from '../device-auth/server-key.service';
import { MetricsService } from '../metrics/metrics.service';
import { OrgsService } from '../orgs/orgs.service';
import type { AddressPolicy } from './address-policy';
import { EndpointRateLimit } from './endpoint-rate-limit';
import { VERSION_OF } from './webhook-event-types';
import { type ClaimedDelivery, WEBHOOKS_CHANNEL, WebhookOutboxRepository } from './webhook-outbox.repository';
import { type AttemptResult, WEBHOOK_RESOLVER, type WebhookResolver, WebhookSender } from './webhook-sender';
import { signedHeaders } from './webhook-signature';
import { WEBHOOK_ADDRESS_POLICY } from './webhooks.service';

/**
 * The wait before attempt `attempt + 1` after `attempt` failed ones: `base · 2^(attempt-1)`, at most `max`, with
 * "equal jitter" (a random half of it), so that endpoints recovering together are not hit by every retry at once.
 */
export function retryDelayMs(attempt: number, baseMs: number, maxMs: number, random = Math.random): number {
  const exponential = Math.min(maxMs, baseMs * 2 ** Math.min(Math.max(attempt - 1, 0), 40));
  return Math.round(exponential / 2 + (random() * exponential) / 2);
}

/** How long events are kept (FLEETHUB_WEBHOOK_RETENTION_DAYS) is enforced this often, in batches. */
const RETENTION_INTERVAL_MS = 10 * 60_000;
const RETENTION_BATCH = 5000;
/** A claim outlives the attempt's deadline by this much; an instance that died lets it lapse. */
const LEASE_MARGIN_MS = 5_000;
/** Successes are recorded together: as soon as this many wait, or this long after the first. */
const SUCCESS_BATCH = 100;
const SUCCESS_BATCH_WAIT_MS = 2;
/**
 * A claim's deliveries are started this many at a time, the event loop's pending I/O (API requests among it)
 * served in between: each start (body, signature, request) is tens of microseconds of synchronous work, and a
 * claim of a few hundred started at once held every API request behind it for ~20 ms.
 */
const STARTS_BETWEEN_IO = 16;
/** Decrypted secrets kept (by their encrypted value, so a rotation is a new entry), at most this many. */
const SECRETS_KEPT = 10_000;

interface PendingSuccess {
  id: string;
  token: string;
  result: AttemptResult;
  recorded: (done: boolean) => void;
  failed: (err: unknown) => void;
}

/**
 * Sends the outbox's deliveries. Every instance runs one: it claims due deliveries in PostgreSQL (SKIP LOCKED,
 * with a lease), so instances share them without sending one twice at once, and a killed instance's claims lapse
 * and are taken again (at least once). Only the first pending delivery of a (webhook, subject) is claimable, so
 * one subject's events arrive in order. At most `concurrencyPerEndpoint` attempts per endpoint run here at
 * once, out of `concurrencyTotal`: a slow endpoint holds its own slots, never the others'. At most the webhook's
 * `rate_limit_per_second` (or the server's `ratePerSecond`) attempts per endpoint start here per second
 * (EndpointRateLimit): a claim skips the endpoints without a token, so a throttled endpoint's backlog waits in
 * PostgreSQL while the others' deliveries go on.
 */
@Injectable()
export class WebhookDispatcher implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(WebhookDispatcher.name);
  private readonly sender: WebhookSender;
  private readonly inFlight = new Map<string, number>();
  private readonly running = new Set<Promise<void>>();
  private readonly orgNames = new Map<string, string>();
  private readonly secrets = new Map<string, string>();
  private readonly rateLimit: EndpointRateLimit;
  private rateTimer: NodeJS.Timeout | null = null;
  private successes: PendingSuccess[] = [];
  private successTimer: NodeJS.Timeout | null = null;
  private total = 0;
  private pumping = false;
  private pumpAgain = false;
  private stopped = false;
  private pollTimer: NodeJS.Timeout | null = null;
  private retentionTimer: NodeJS.Timeout | null = null;
  private readonly attempts: Counter<'result'>;
  private readonly givenUp: Counter;
  private readonly disabled: Counter;
  private readonly attemptDuration: Histogram;
  private readonly deliveryLatency: Histogram;

  constructor(
    private readonly outbox: WebhookOutboxRepository,
    private readonly serverKey: ServerKeyService,
    private readonly orgs: OrgsService,
    bus: InstanceBus,
    metrics: MetricsService,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(WEBHOOK_ADDRESS_POLICY) policy: AddressPolicy,
    @Inject(WEBHOOK_RESOLVER) resolver: WebhookResolver,
  ) {
    this.sender = new WebhookSender(policy, resolver, config.webhooks.timeoutMs);
    this.rateLimit = new EndpointRateLimit();
    bus.subscribe(WEBHOOKS_CHANNEL, () => this.kick());
    const registers = [metrics.registry];
    this.attempts = new Counter({
      name: 'fleethub_webhook_attempts_total',
      help: 'Webhook delivery attempts, by result (succeeded: a 2xx answer)',
      labelNames: ['result'],
      registers,
    });
    this.givenUp = new Counter({
      name: 'fleethub_webhook_deliveries_given_up_total',
      help: 'Webhook deliveries given up after their retry window (FLEETHUB_WEBHOOK_RETRY_HOURS)',
      registers,
    });
    this.disabled = new Counter({
      name: 'fleethub_webhook_endpoints_disabled_total',
      help: 'Webhooks disabled by fleethub because they kept failing',
      registers,
    });
    this.attemptDuration = new Histogram({
      name: 'fleethub_webhook_attempt_duration_seconds',
      help: 'Duration of one webhook delivery attempt (connect to response headers and excerpt)',
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.deliveryLatency = new Histogram({
      name: 'fleethub_webhook_delivery_latency_seconds',
      help: 'From the change that made an event to its successful delivery',
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 15, 60, 300, 3600],
      registers,
    });
    const pending: Gauge = new Gauge({
      name: 'fleethub_webhook_pending_deliveries',
      help: 'Webhook deliveries waiting to be sent or retried, across instances',
      registers,
      collect: async () => pending.set(await this.outbox.countPending().catch(() => Number.NaN)),
    });
  }

  onApplicationBootstrap(): void {
    this.pollTimer = setInterval(() => this.kick(), this.config.webhooks.pollMs);
    this.pollTimer.unref();
    this.retentionTimer = setInterval(() => void this.enforceRetention(), RETENTION_INTERVAL_MS);
    this.retentionTimer.unref();
    void this.enforceRetention();
    this.kick();
  }

  /** Stops claiming; attempts in flight finish (each within its deadline) and are recorded. */
  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.pollTimer) clearInterval(this.pollTimer);
    if (this.retentionTimer) clearInterval(this.retentionTimer);
    if (this.rateTimer) clearTimeout(this.rateTimer);
    await Promise.allSettled([...this.running]);
    this.sender.close();
  }

  /** Looks for due deliveries now (one pump at a time; a kick during one makes one more). */
  kick(): void {
    if (this.stopped) return;
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    this.pumping = true;
    void this.pump()
      .catch((err: unknown) => this.logger.warn({ err }, 'webhook claim failed'))
      .finally(() => {
        this.pumping = false;
        if (this.pumpAgain) {
          this.pumpAgain = false;
          this.kick();
        }
      });
  }

  /** Deletes events past their retention (with their deliveries and log). */
  async enforceRetention(): Promise<number> {
    let deleted = 0;
    try {
      for (;;) {
        const batch = await this.outbox.deleteExpired(this.config.webhooks.retentionDays, RETENTION_BATCH);
        deleted += batch;
        if (batch < RETENTION_BATCH || this.stopped) break;
      }
    } catch (err) {
      this.logger.warn({ err }, 'webhook retention failed');
    }
    return deleted;
  }

  private async pump(): Promise<void> {
    const { concurrencyTotal, concurrencyPerEndpoint, timeoutMs } = this.config.webhooks;
    while (!this.stopped) {
      const room = concurrencyTotal - this.total;
      if (room <= 0) return;
      const saturated = [...this.inFlight].filter(([, n]) => n >= concurrencyPerEndpoint).map(([id]) => id);
      const throttled = this.rateLimit.exhausted();
      this.wakeForTokens();
      const token = randomUUID();
      const skip = [...new Set([...saturated, ...throttled])];
      const rooms = new Map(
        [...this.inFlight].map(([id, n]) => [id, Math.max(0, concurrencyPerEndpoint - n)]),
      );
      const claimed = await this.outbox.claim(
        room,
        timeoutMs + LEASE_MARGIN_MS,
        skip,
        token,
        concurrencyPerEndpoint,
        rooms,
      );
      if (claimed.length === 0) return;
      await this.resolveOrgNames(claimed);
      const surplus: string[] = [];
      let startedSinceIo = 0;
      for (const [i, delivery] of claimed.entries()) {
        if (startedSinceIo === STARTS_BETWEEN_IO) {
          startedSinceIo = 0;
          await afterPendingIo();
          if (this.stopped) {
            // Shutting down: what is not started yet goes back now rather than when its lease lapses.
            surplus.push(...claimed.slice(i).map((d) => d.id));
            break;
          }
        }
        const webhookId = String(delivery.webhook_id);
        const busy = this.inFlight.get(webhookId) ?? 0;
        const rate = delivery.rate_limit_per_second ?? this.config.webhooks.ratePerSecond;
        if (busy >= concurrencyPerEndpoint || !this.rateLimit.take(webhookId, rate)) {
          surplus.push(delivery.id);
          continue;
        }
        this.inFlight.set(webhookId, busy + 1);
        this.total += 1;
        startedSinceIo += 1;
        const run = this.deliver(delivery, token).finally(() => {
          this.running.delete(run);
          const left = (this.inFlight.get(webhookId) ?? 1) - 1;
          if (left <= 0) this.inFlight.delete(webhookId);
          else this.inFlight.set(webhookId, left);
          this.total -= 1;
          this.kick();
        });
        this.running.add(run);
      }
      await this.outbox.release(surplus, token);
      if (claimed.length < room) {
        this.wakeForTokens();
        return;
      }
    }
  }

  /** While an endpoint waits for its rate, one timer looks again when the first of them has a token. */
  private wakeForTokens(): void {
    if (this.rateTimer || this.stopped) return;
    const wait = this.rateLimit.nextTokenInMs();
    if (wait === null) return;
    this.rateTimer = setTimeout(() => {
      this.rateTimer = null;
      this.kick();
    }, wait);
    this.rateTimer.unref();
  }

  private async resolveOrgNames(claimed: ClaimedDelivery[]): Promise<void> {
    const missing = [...new Set(claimed.map((d) => String(d.org_id)))].filter((id) => !this.orgNames.has(id));
    if (missing.length === 0) return;
    if (this.orgNames.size > 10_000) this.orgNames.clear();
    for (const [id, name] of await this.orgs.namesByIds(missing)) this.orgNames.set(id, name);
  }

  /** A webhook's signing secret from its encrypted value (decrypted once, not per delivery). */
  private secret(blob: Buffer): string {
    const key = blob.toString('base64');
    let secret = this.secrets.get(key);
    if (secret === undefined) {
      if (this.secrets.size >= SECRETS_KEPT) this.secrets.clear();
      secret = this.serverKey.decrypt(blob);
      this.secrets.set(key, secret);
    }
    return secret;
  }

  /** The request body: the event's envelope (WebhookEventEnvelope in OpenAPI). */
  private body(delivery: ClaimedDelivery): string {
    return JSON.stringify({
      id: delivery.event_id,
      type: delivery.type,
      version: VERSION_OF.get(delivery.type) ?? 1,
      timestamp: delivery.occurred_at.toISOString(),
      org: this.orgNames.get(String(delivery.org_id)) ?? null,
      product: delivery.product,
      subject: delivery.subject,
      data: delivery.data,
    });
  }

  private async deliver(delivery: ClaimedDelivery, token: string): Promise<void> {
    try {
      const body = this.body(delivery);
      const secrets = [delivery.secret_encrypted, delivery.previous_secret_encrypted]
        .filter((blob): blob is Buffer => blob !== null)
        .map((blob) => this.secret(blob));
      const headers = signedHeaders(secrets, delivery.event_id, Math.floor(Date.now() / 1000), body);
      const result = await this.sender.send(delivery.url, headers, body);
      await this.record(delivery, token, result);
    } catch (err) {
      // Its lease lapses and another attempt follows.
      this.logger.warn({ err, delivery: delivery.id }, 'webhook delivery failed unexpectedly');
    }
  }

  /**
   * Records a success with the others that end within SUCCESS_BATCH_WAIT_MS (one statement for them all, not one
   * round trip each); true when it was recorded (false: the lease was lost meanwhile). Its subject's next event
   * becomes claimable once it is recorded, so the wait delays it by at most those milliseconds.
   */
  private recordSuccess(id: string, token: string, result: AttemptResult): Promise<boolean> {
    return new Promise((recorded, failed) => {
      this.successes.push({ id, token, result, recorded, failed });
      if (this.successes.length >= SUCCESS_BATCH) this.flushSuccesses();
      else this.successTimer ??= setTimeout(() => this.flushSuccesses(), SUCCESS_BATCH_WAIT_MS);
    });
  }

  private flushSuccesses(): void {
    if (this.successTimer) clearTimeout(this.successTimer);
    this.successTimer = null;
    const batch = this.successes;
    this.successes = [];
    if (batch.length === 0) return;
    this.outbox.recordSuccesses(batch).then(
      (recorded) => batch.forEach((success) => success.recorded(recorded.has(success.id))),
      (err: unknown) => batch.forEach((success) => success.failed(err)),
    );
  }

  private async record(delivery: ClaimedDelivery, token: string, result: AttemptResult): Promise<void> {
    this.attemptDuration.observe(result.latencyMs / 1000);
    const succeeded = result.status !== null && result.status >= 200 && result.status < 300;
    this.attempts.inc({ result: succeeded ? 'succeeded' : 'failed' });
    if (succeeded) {
      if (await this.recordSuccess(delivery.id, token, result))
        this.deliveryLatency.observe((Date.now() - delivery.occurred_at.getTime()) / 1000);
      return;
    }
    const { backoffBaseMs, backoffMaxMs, disableAfterFailures, disableAfterMs } = this.config.webhooks;
    const outcome = await this.outbox.recordFailure(delivery.id, token, result, {
      retryInMs: retryDelayMs(delivery.attempts + 1, backoffBaseMs, backoffMaxMs),
      disableAfterFailures,
      disableAfterMs,
    });
    if (outcome?.gaveUp) this.givenUp.inc();
    if (outcome?.disabled) {
      this.disabled.inc();
      const last = result.error ?? `HTTP ${String(result.status)}`;
      this.logger.warn(`webhook ${delivery.webhook_id} disabled: it kept failing (last: ${last})`);
    }
  }
}
