import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { PageRequest } from '../common/http/pagination';
import type { Queryable } from '../database/transactions';
import type { AttemptResult } from './webhook-sender';
import { type OutboxEvent, patternsMatching } from './webhook-event-types';

/** The instance bus channel that wakes every instance's dispatcher when deliveries were queued. */
export const WEBHOOKS_CHANNEL = 'webhooks';

/** A delivery claimed by this instance, with what it needs to send it. */
export interface ClaimedDelivery {
  id: string;
  webhook_id: string;
  attempts: number;
  event_id: string;
  type: string;
  org_id: string;
  product: string | null;
  subject: string;
  data: Record<string, unknown>;
  occurred_at: Date;
  url: string;
  /** The webhook's own rate limit (null: the server's). */
  rate_limit_per_second: number | null;
  secret_encrypted: Buffer;
  previous_secret_encrypted: Buffer | null;
}

export interface AttemptRow {
  id: string;
  event_id: string;
  type: string;
  attempt: number;
  succeeded: boolean;
  response_status: number | null;
  error: string | null;
  latency_ms: number;
  response_excerpt: string | null;
  attempted_at: Date;
  delivery_state: string;
}

/** What a failed attempt did: the delivery given up or rescheduled, the endpoint disabled or not. */
export interface FailureOutcome {
  gaveUp: boolean;
  disabled: boolean;
}

export interface FailurePolicy {
  /** Wait before the next attempt. */
  retryInMs: number;
  disableAfterFailures: number;
  disableAfterMs: number;
}

/** Which events to send again: one, or those of a time range that the webhook subscribes to. */
export type RedeliverySelection = { eventId: string } | { from: Date; to: Date };

export const REDELIVERY_LIMIT = 10_000;

/** An organization and the product an event names (null: none), for `wanted`. */
export interface EventTarget {
  orgId: string;
  product: string | null;
}

/**
 * A SELECT answering events to write (`emitSelected`): `org_id`, `type`, `product`, `subject`, `data` (jsonb), `ord`.
 */
export interface EventSource {
  sql: string;
  params: unknown[];
}

/** The outbox (`webhook_events`), its deliveries (`webhook_deliveries`) and their log (`webhook_delivery_attempts`). */
@Injectable()
export class WebhookOutboxRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * Writes the event and a delivery for each enabled webhook of its organization that wants it, in the caller's
   * transaction, and wakes the dispatchers when it commits. Nothing is written when no webhook wants it. One
   * statement: the organization's webhooks are read by `webhooks_org_id_idx`.
   */
  async emit(event: OutboxEvent & { eventId: string }, retryWindowMs: number, tx: Queryable): Promise<void> {
    await tx.query(
      `WITH targets AS (
         SELECT w.id FROM webhooks w
          WHERE w.org_id = $1 AND w.enabled AND (w.product IS NULL OR w.product = $3)
            AND w.event_types && $7::text[]
       ), e AS (
         INSERT INTO webhook_events (event_id, org_id, type, product, subject, data)
         SELECT $2::varchar, $1::bigint, $4::varchar, $3::varchar, $5::varchar, $6::jsonb WHERE EXISTS (SELECT 1 FROM targets)
         RETURNING id
       ), d AS (
         INSERT INTO webhook_deliveries (event_seq, webhook_id, subject, give_up_at)
         SELECT e.id, t.id, $5::varchar, now() + $8::float8 * interval '1 millisecond' FROM e CROSS JOIN targets t
       )
       SELECT pg_notify('${WEBHOOKS_CHANNEL}', '') FROM e`,
      [
        event.orgId,
        event.eventId,
        event.product,
        event.type,
        event.subject.slice(0, 320),
        event.data,
        patternsMatching(event.type),
        retryWindowMs,
      ],
    );
  }

  /**
   * `emit` for many events in one statement (a batch of update failures): each event is written, in the order
   * given, when some enabled webhook of its organization wants it, with a delivery per such webhook. The events
   * are `emitSelected`'s source, read from arrays.
   */
  async emitMany(events: OutboxEvent[], retryWindowMs: number, tx: Queryable): Promise<void> {
    if (events.length === 0) return;
    await this.emitSelected(
      {
        sql: `SELECT * FROM unnest($1::bigint[], $2::varchar[], $3::varchar[], $4::varchar[], $5::jsonb[])
                WITH ORDINALITY AS src(org_id, type, product, subject, data, ord)`,
        params: [
          events.map((e) => e.orgId),
          events.map((e) => e.type),
          events.map((e) => e.product),
          events.map((e) => e.subject),
          events.map((e) => JSON.stringify(e.data)),
        ],
      },
      retryWindowMs,
      tx,
    );
  }

  /**
   * Whether some enabled webhook of one of these organizations wants one of `types` for its product (null: the
   * event names none): the check a change of many devices makes once, before it writes any event, so that it
   * costs one index lookup (`webhooks_org_id_idx`) when nobody listens.
   */
  async wanted(
    targets: readonly EventTarget[],
    types: readonly string[],
    tx: Queryable = this.db,
  ): Promise<boolean> {
    if (targets.length === 0 || types.length === 0) return false;
    const [row] = await tx.query<{ wanted: boolean }[]>(
      `SELECT EXISTS (
         SELECT 1 FROM unnest($1::bigint[], $2::varchar[]) AS t(org_id, product)
           JOIN webhooks w ON w.org_id = t.org_id AND w.enabled AND (w.product IS NULL OR w.product = t.product)
          WHERE w.event_types && $3::text[]) AS wanted`,
      [
        targets.map((t) => t.orgId),
        targets.map((t) => t.product),
        [...new Set(types.flatMap((type) => patternsMatching(type)))],
      ],
    );
    return row.wanted;
  }

  /**
   * Events selected by `source` (a SELECT of the feature that owns the rows, answering `org_id`, `type`, `product`,
   * `subject`, `data` (jsonb) and `ord`, the order to write them in), each written with a new event id and a
   * delivery per enabled webhook of its organization that wants it, in one `INSERT ... SELECT` in the caller's
   * transaction: a change of thousands of devices writes their events without a row crossing to the server.
   * The deliveries join the events written with `webhooks` itself (statistics, an index), never two CTEs on the
   * event id: the planner estimates one row for a CTE and a nested loop over two is quadratic in the events.
   * `source` uses parameters `$1..$n` (its `params`). The number of events written.
   */
  async emitSelected(source: EventSource, retryWindowMs: number, tx: Queryable): Promise<number> {
    const window = `$${source.params.length + 1}`;
    const [{ count }] = await tx.query<{ count: number }[]>(
      `WITH ev AS MATERIALIZED (
         SELECT 'evt_' || replace(gen_random_uuid()::text, '-', '') AS event_id, src.org_id::bigint AS org_id,
                src.type::varchar AS type, src.product::varchar AS product, left(src.subject, 320) AS subject,
                src.data::jsonb AS data, src.ord
           FROM (${source.sql}) src
       ), e AS (
         INSERT INTO webhook_events (event_id, org_id, type, product, subject, data)
         SELECT ev.event_id, ev.org_id, ev.type, ev.product, ev.subject, ev.data FROM ev
          WHERE EXISTS (SELECT 1 FROM webhooks w
                         WHERE w.org_id = ev.org_id AND w.enabled
                           AND (w.product IS NULL OR w.product = ev.product)
                           AND w.event_types && ARRAY['*', split_part(ev.type, '.', 1) || '.*', ev.type]::text[])
          ORDER BY ev.ord
         RETURNING id, org_id, type, product, subject
       ), d AS (
         INSERT INTO webhook_deliveries (event_seq, webhook_id, subject, give_up_at)
         SELECT e.id, w.id, e.subject, now() + ${window}::float8 * interval '1 millisecond'
           FROM e JOIN webhooks w ON w.org_id = e.org_id AND w.enabled
                                 AND (w.product IS NULL OR w.product = e.product)
                                 AND w.event_types && ARRAY['*', split_part(e.type, '.', 1) || '.*', e.type]::text[]
       ), woken AS (
         SELECT pg_notify('${WEBHOOKS_CHANNEL}', '') FROM e LIMIT 1
       )
       SELECT (SELECT count(*)::int FROM e) AS count, (SELECT count(*) FROM woken) AS woken`,
      [...source.params, retryWindowMs],
    );
    return count;
  }

  /** A `webhook.test` event delivered to one webhook only (enabled or not). */
  async emitTo(
    webhookId: string,
    event: OutboxEvent & { eventId: string },
    retryWindowMs: number,
    tx: Queryable,
  ): Promise<Date> {
    const [row] = await tx.query<{ occurred_at: Date }[]>(
      `WITH e AS (
         INSERT INTO webhook_events (event_id, org_id, type, product, subject, data)
         VALUES ($2, $1, $4, $3, $5, $6) RETURNING id, occurred_at
       ), d AS (
         INSERT INTO webhook_deliveries (event_seq, webhook_id, subject, give_up_at)
         SELECT e.id, $7::bigint, $5::varchar, now() + $8::float8 * interval '1 millisecond' FROM e
       )
       SELECT occurred_at, pg_notify('${WEBHOOKS_CHANNEL}', '') FROM e`,
      [
        event.orgId,
        event.eventId,
        event.product,
        event.type,
        event.subject,
        event.data,
        webhookId,
        retryWindowMs,
      ],
    );
    return row.occurred_at;
  }

  /**
   * Claims up to `limit` due deliveries for `leaseMs` under `token`: pending, not leased (or the lease lapsed:
   * its instance died), of an enabled webhook (test events go to disabled ones too) not in `skip`, and first of
   * their webhook and subject (an earlier pending event of the subject, even one waiting for its retry, holds
   * the later ones back); at most `room` of a webhook (`rooms` gives the webhooks with attempts in flight theirs).
   * Read per webhook, on `webhook_deliveries_webhook_due_idx` (a disabled webhook's test events on the subject
   * index): an endpoint's backlog, however long (never answering, disabled, throttled), is never scanned to find
   * another's deliveries. SKIP LOCKED: instances claiming at once take different rows.
   */
  async claim(
    limit: number,
    leaseMs: number,
    skip: string[],
    token: string,
    room: number,
    rooms: ReadonlyMap<string, number> = new Map(),
  ): Promise<ClaimedDelivery[]> {
    return this.db.query<ClaimedDelivery[]>(
      `WITH hooks AS (
         SELECT w.id, w.enabled, coalesce(r.room, $5) AS room
           FROM webhooks w LEFT JOIN unnest($6::bigint[], $7::int[]) AS r(id, room) ON r.id = w.id
          WHERE NOT (w.id = ANY($3::bigint[]))
       ), due AS (
         SELECT c.id, c.next_attempt_at FROM hooks w CROSS JOIN LATERAL (
           SELECT d.id, d.next_attempt_at FROM webhook_deliveries d
            WHERE d.webhook_id = w.id AND d.state = 'pending' AND d.next_attempt_at <= now()
              AND (d.lease_until IS NULL OR d.lease_until < now())
              AND NOT EXISTS (
                SELECT 1 FROM webhook_deliveries p
                 WHERE p.webhook_id = d.webhook_id AND p.subject = d.subject AND p.state = 'pending'
                   AND p.event_seq < d.event_seq)
            ORDER BY d.next_attempt_at, d.id
            LIMIT w.room
              FOR UPDATE OF d SKIP LOCKED) c
          WHERE w.enabled AND w.room > 0
         UNION ALL
         SELECT c.id, c.next_attempt_at FROM hooks w CROSS JOIN LATERAL (
           SELECT d.id, d.next_attempt_at FROM webhook_deliveries d
             JOIN webhook_events e ON e.id = d.event_seq AND e.type = 'webhook.test'
            WHERE d.webhook_id = w.id AND d.subject = 'webhook:' || w.id AND d.state = 'pending'
              AND d.next_attempt_at <= now() AND (d.lease_until IS NULL OR d.lease_until < now())
              AND NOT EXISTS (
                SELECT 1 FROM webhook_deliveries p
                 WHERE p.webhook_id = d.webhook_id AND p.subject = d.subject AND p.state = 'pending'
                   AND p.event_seq < d.event_seq)
            ORDER BY d.event_seq
            LIMIT w.room
              FOR UPDATE OF d SKIP LOCKED) c
          WHERE NOT w.enabled AND w.room > 0
       ), chosen AS (
         SELECT id FROM due ORDER BY next_attempt_at, id LIMIT $1
       ), claimed AS (
         UPDATE webhook_deliveries d SET lease_until = now() + $2::float8 * interval '1 millisecond', lease_token = $4
           FROM chosen WHERE d.id = chosen.id
         RETURNING d.id, d.webhook_id, d.event_seq, d.attempts
       )
       SELECT c.id, c.webhook_id, c.attempts, e.event_id, e.type, e.org_id, e.product, e.subject, e.data,
              e.occurred_at, w.url, w.rate_limit_per_second, w.secret_encrypted,
              CASE WHEN w.previous_secret_expires_at > now() THEN w.previous_secret_encrypted END
                AS previous_secret_encrypted
         FROM claimed c
         JOIN webhook_events e ON e.id = c.event_seq
         JOIN webhooks w ON w.id = c.webhook_id
        ORDER BY e.id`,
      [limit, leaseMs, skip, token, room, [...rooms.keys()], [...rooms.values()]],
    );
  }

  /** Gives claimed deliveries back unsent (this instance has no room for them now). */
  async release(ids: string[], token: string): Promise<void> {
    if (ids.length === 0) return;
    await this.db.query(
      `UPDATE webhook_deliveries SET lease_until = NULL, lease_token = NULL
        WHERE id = ANY($1::bigint[]) AND lease_token = $2`,
      [ids, token],
    );
  }

  /**
   * 2xx answers, several at once (one statement): each delivery is done, its attempt logged, and its endpoint's
   * failure streak ends. Answers the ids recorded; one whose lease was lost meanwhile is not among them.
   */
  async recordSuccesses(
    successes: readonly { id: string; token: string; result: AttemptResult }[],
  ): Promise<Set<string>> {
    const rows = await this.db.query<{ id: string }[]>(
      `WITH input AS (
         SELECT * FROM unnest($1::bigint[], $2::uuid[], $3::int[], $4::int[], $5::text[])
           AS i(id, token, status, latency_ms, excerpt)
       ), d AS (
         UPDATE webhook_deliveries d SET state = 'delivered', attempts = d.attempts + 1, lease_until = NULL,
                lease_token = NULL, completed_at = now()
           FROM input i WHERE d.id = i.id AND d.lease_token = i.token
         RETURNING d.id, d.webhook_id, d.attempts
       ), a AS (
         INSERT INTO webhook_delivery_attempts
           (delivery_id, webhook_id, attempt, response_status, succeeded, error, latency_ms, response_excerpt)
         SELECT d.id, d.webhook_id, d.attempts, i.status, true, NULL, i.latency_ms, i.excerpt
           FROM d JOIN input i ON i.id = d.id
       ), w AS (
         UPDATE webhooks w SET consecutive_failures = 0, failing_since = NULL
          WHERE w.id IN (SELECT webhook_id FROM d) AND w.consecutive_failures <> 0
       )
       SELECT id::text AS id FROM d`,
      [
        successes.map((s) => s.id),
        successes.map((s) => s.token),
        successes.map((s) => s.result.status),
        successes.map((s) => s.result.latencyMs),
        successes.map((s) => s.result.excerpt),
      ],
    );
    return new Set(rows.map((row) => String(row.id)));
  }

  /**
   * A failed attempt: logged; the delivery waits `retryInMs` for its next one, or is given up when that would
   * be past its retry window; the endpoint's failure streak grows, and the endpoint is disabled (with the
   * reason) once the streak is `disableAfterFailures` long and has lasted `disableAfterMs`. Null when the lease
   * was lost meanwhile.
   */
  async recordFailure(
    id: string,
    token: string,
    result: AttemptResult,
    policy: FailurePolicy,
  ): Promise<FailureOutcome | null> {
    const rows = await this.db.query<{ gave_up: boolean; disabled: boolean | null }[]>(
      `WITH d AS (
         UPDATE webhook_deliveries SET attempts = attempts + 1, lease_until = NULL, lease_token = NULL,
                state = CASE WHEN now() + $6::float8 * interval '1 millisecond' > give_up_at
                             THEN 'failed' ELSE 'pending' END::webhook_delivery_state,
                completed_at = CASE WHEN now() + $6::float8 * interval '1 millisecond' > give_up_at THEN now() END,
                next_attempt_at = now() + $6::float8 * interval '1 millisecond'
          WHERE id = $1 AND lease_token = $2
         RETURNING id, webhook_id, attempts, state
       ), a AS (
         INSERT INTO webhook_delivery_attempts
           (delivery_id, webhook_id, attempt, response_status, succeeded, error, latency_ms, response_excerpt)
         SELECT id, webhook_id, attempts, $3::int, false, $7::varchar, $4::int, $5::text FROM d
       ), w AS (
         UPDATE webhooks w SET
                consecutive_failures = w.consecutive_failures + 1,
                failing_since = coalesce(w.failing_since, now()),
                enabled = w.enabled AND NOT (
                  w.consecutive_failures + 1 >= $8
                  AND coalesce(w.failing_since, now()) <= now() - $9::float8 * interval '1 millisecond'),
                disabled_reason = CASE
                  WHEN w.enabled AND w.consecutive_failures + 1 >= $8
                       AND coalesce(w.failing_since, now()) <= now() - $9::float8 * interval '1 millisecond'
                  THEN format('disabled by fleethub: %s failed attempts in a row since %s; the last: %s',
                              w.consecutive_failures + 1,
                              to_char(coalesce(w.failing_since, now()) AT TIME ZONE 'UTC',
                                      'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                              $10::text)
                  ELSE w.disabled_reason END,
                disabled_at = CASE
                  WHEN w.enabled AND w.consecutive_failures + 1 >= $8
                       AND coalesce(w.failing_since, now()) <= now() - $9::float8 * interval '1 millisecond'
                  THEN now() ELSE w.disabled_at END
           FROM d WHERE w.id = d.webhook_id
         RETURNING w.id, (NOT w.enabled AND w.disabled_at = now()) AS disabled
       )
       SELECT d.state = 'failed' AS gave_up, w.disabled FROM d LEFT JOIN w ON w.id = d.webhook_id`,
      [
        id,
        token,
        result.status,
        result.latencyMs,
        result.excerpt,
        policy.retryInMs,
        result.error,
        policy.disableAfterFailures,
        policy.disableAfterMs,
        result.status !== null ? `HTTP ${result.status}` : (result.error ?? 'no answer'),
      ],
    );
    if (rows.length === 0) return null;
    return { gaveUp: rows[0].gave_up, disabled: rows[0].disabled === true };
  }

  /** One page of the webhook's attempts, newest first, and the count of all. */
  async listAttempts(webhookId: string, page: PageRequest): Promise<{ rows: AttemptRow[]; count: number }> {
    const [rows, [{ count }]] = await Promise.all([
      this.db.query<AttemptRow[]>(
        `SELECT a.id, e.event_id, e.type, a.attempt, a.succeeded, a.response_status, a.error, a.latency_ms,
                a.response_excerpt, a.attempted_at, d.state AS delivery_state
           FROM webhook_delivery_attempts a
           JOIN webhook_deliveries d ON d.id = a.delivery_id
           JOIN webhook_events e ON e.id = d.event_seq
          WHERE a.webhook_id = $1
          ORDER BY a.attempted_at DESC, a.id DESC
          LIMIT $2 OFFSET $3`,
        [webhookId, page.pageSize, page.offset],
      ),
      this.db.query<{ count: number }[]>(
        `SELECT count(*)::int AS count FROM webhook_delivery_attempts WHERE webhook_id = $1`,
        [webhookId],
      ),
    ]);
    return { rows, count };
  }

  /**
   * Queues the selected events of the webhook's organization for it again (a fresh retry window), whether it had
   * them before or not; the time range takes the events its subscription wants, at most REDELIVERY_LIMIT.
   * Deliveries still pending are left as they are. The number queued.
   */
  async redeliver(
    webhook: { id: string; org_id: string; event_types: string[]; product: string | null },
    selection: RedeliverySelection,
    retryWindowMs: number,
    tx: Queryable,
  ): Promise<number> {
    const byId = 'eventId' in selection;
    const where = byId
      ? `e.event_id = $3`
      : `e.occurred_at >= $3 AND e.occurred_at <= $4 AND e.type <> 'webhook.test'
         AND ($5::varchar IS NULL OR e.product = $5)
         AND (ARRAY['*', split_part(e.type, '.', 1) || '.*', e.type::text] && $6::text[])`;
    const params = byId
      ? [webhook.id, webhook.org_id, selection.eventId, retryWindowMs]
      : [
          webhook.id,
          webhook.org_id,
          selection.from,
          selection.to,
          webhook.product,
          webhook.event_types,
          retryWindowMs,
        ];
    const window = `$${params.length}`;
    const [{ count }] = await tx.query<{ count: number }[]>(
      `WITH chosen AS (
         SELECT e.id, e.subject FROM webhook_events e
          WHERE e.org_id = $2 AND ${where}
          ORDER BY e.id LIMIT ${REDELIVERY_LIMIT}
       ), queued AS (
         INSERT INTO webhook_deliveries (event_seq, webhook_id, subject, give_up_at)
         SELECT c.id, $1::bigint, c.subject, now() + ${window}::float8 * interval '1 millisecond' FROM chosen c
         ON CONFLICT (webhook_id, event_seq) DO UPDATE
            SET state = 'pending', next_attempt_at = now(), give_up_at = excluded.give_up_at,
                completed_at = NULL, lease_until = NULL, lease_token = NULL
          WHERE webhook_deliveries.state <> 'pending'
         RETURNING 1
       )
       SELECT count(*)::int AS count FROM queued`,
      params,
    );
    if (count > 0) await tx.query(`SELECT pg_notify('${WEBHOOKS_CHANNEL}', '')`);
    return count;
  }

  /** Whether the organization has this event (for a 404 on an unknown one). */
  async eventExists(orgId: string, eventId: string): Promise<boolean> {
    const rows = await this.db.query<unknown[]>(
      `SELECT 1 FROM webhook_events WHERE org_id = $1 AND event_id = $2`,
      [orgId, eventId],
    );
    return rows.length > 0;
  }

  /** Deletes up to `batch` events older than `days` (their deliveries and log go with them); how many. */
  async deleteExpired(days: number, batch: number): Promise<number> {
    const [, deleted] = await this.db.query<[unknown, number]>(
      `DELETE FROM webhook_events WHERE id IN (
         SELECT id FROM webhook_events WHERE occurred_at < now() - $1::float8 * interval '1 day' ORDER BY id LIMIT $2)`,
      [days, batch],
    );
    return deleted;
  }

  async countPending(): Promise<number> {
    const [{ count }] = await this.db.query<{ count: number }[]>(
      `SELECT count(*)::int AS count FROM webhook_deliveries WHERE state = 'pending'`,
    );
    return count;
  }
}
