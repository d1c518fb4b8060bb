import {
  Column,
  CreateDateColumn,
  Entity,
  Index,
  JoinColumn,
  ManyToOne,
  OneToOne,
  PrimaryColumn,
} from 'typeorm';
import { Device } from '../devices/device.entity';
import { BigIdColumn, InsertedAtColumn, UpdatedAtColumn } from '../database/columns';
import { Org } from '../orgs/org.entity';

/** An organization's subscription: where its events go, which ones, signed with which secret. */
@Entity('webhooks')
@Index('webhooks_org_id_idx', ['orgId', 'id'])
export class Webhook {
  @BigIdColumn()
  id: string;

  @Column({ name: 'org_id', type: 'bigint' })
  orgId: string;

  @ManyToOne(() => Org, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'org_id' })
  org?: Org;

  @Column({ type: 'varchar', length: 2048 })
  url: string;

  /** Event types (`device.created`), family wildcards (`device.*`) or `*`. */
  @Column({ name: 'event_types', type: 'text', array: true })
  eventTypes: string[];

  /** Only events of this product (by name); null: every event of the organization. */
  @Column({ type: 'varchar', length: 255, nullable: true })
  product: string | null;

  @Column({ type: 'boolean', default: true })
  enabled: boolean;

  /** Why the endpoint was disabled (by a person or automatically); null while enabled. */
  @Column({ name: 'disabled_reason', type: 'text', nullable: true })
  disabledReason: string | null;

  @Column({ name: 'disabled_at', type: 'timestamptz', nullable: true })
  disabledAt: Date | null;

  /** The signing secret (`whsec_...`), encrypted with the server key. */
  @Column({ name: 'secret_encrypted', type: 'bytea' })
  secretEncrypted: Buffer;

  /** The secret before the last rotation, still signing until `previous_secret_expires_at`. */
  @Column({ name: 'previous_secret_encrypted', type: 'bytea', nullable: true })
  previousSecretEncrypted: Buffer | null;

  @Column({ name: 'previous_secret_expires_at', type: 'timestamptz', nullable: true })
  previousSecretExpiresAt: Date | null;

  /** Failed attempts in a row, and since when (reset by a success). */
  /** Deliveries per second each instance starts to it at most; null: the server's FLEETHUB_WEBHOOK_RATE_PER_SEC. */
  @Column({ name: 'rate_limit_per_second', type: 'integer', nullable: true })
  rateLimitPerSecond: number | null;

  @Column({ name: 'consecutive_failures', type: 'integer', default: 0 })
  consecutiveFailures: number;

  @Column({ name: 'failing_since', type: 'timestamptz', nullable: true })
  failingSince: Date | null;

  @InsertedAtColumn()
  insertedAt: Date;

  @UpdatedAtColumn()
  updatedAt: Date;
}

/**
 * The transactional outbox: one row per event, written in the transaction of the change it describes, and only
 * when an enabled webhook of the organization wants it (an organization without one accumulates nothing).
 */
@Entity('webhook_events')
@Index('webhook_events_occurred_at_idx', ['occurredAt'])
@Index('webhook_events_org_id_idx', ['orgId', 'occurredAt'])
export class WebhookEvent {
  /** The order events were written in. */
  @BigIdColumn()
  id: string;

  /** `evt_` + 32 hex characters: the stable id receivers de-duplicate with (`webhook-id`). */
  @Column({ name: 'event_id', type: 'varchar', length: 40, unique: true })
  eventId: string;

  @Column({ name: 'org_id', type: 'bigint' })
  orgId: string;

  @ManyToOne(() => Org, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'org_id' })
  org?: Org;

  @Column({ type: 'varchar', length: 64 })
  type: string;

  @Column({ type: 'varchar', length: 255, nullable: true })
  product: string | null;

  /** What the event is about, e.g. `device:sim-0001`: one subject's events are delivered in order. */
  @Column({ type: 'varchar', length: 320 })
  subject: string;

  @Column({ type: 'jsonb', default: () => "'{}'" })
  data: Record<string, unknown>;

  @CreateDateColumn({ name: 'occurred_at', type: 'timestamptz', default: () => 'now()' })
  occurredAt: Date;
}

export const DELIVERY_STATES = ['pending', 'delivered', 'failed'] as const;
export type DeliveryState = (typeof DELIVERY_STATES)[number];

/**
 * One event to send to one webhook, until it is delivered or given up. Claimed with a lease. Claims read it per
 * webhook (`webhook_deliveries_webhook_due_idx`), so that one endpoint's backlog (never answering, disabled) is
 * never scanned for the others' deliveries. The table's fillfactor (70, migration WebhookThroughput) leaves room
 * on each page for the claim's new row version: the claim changes no indexed column, so it is a HOT update.
 */
@Entity('webhook_deliveries')
@Index('webhook_deliveries_webhook_due_idx', ['webhookId', 'nextAttemptAt', 'id'], {
  where: "state = 'pending'",
})
@Index('webhook_deliveries_subject_idx', ['webhookId', 'subject', 'eventSeq'], { where: "state = 'pending'" })
@Index('webhook_deliveries_webhook_event_key', ['webhookId', 'eventSeq'], { unique: true })
@Index('webhook_deliveries_event_seq_idx', ['eventSeq'])
export class WebhookDelivery {
  @BigIdColumn()
  id: string;

  @Column({ name: 'event_seq', type: 'bigint' })
  eventSeq: string;

  @ManyToOne(() => WebhookEvent, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'event_seq' })
  event?: WebhookEvent;

  @Column({ name: 'webhook_id', type: 'bigint' })
  webhookId: string;

  @ManyToOne(() => Webhook, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'webhook_id' })
  webhook?: Webhook;

  /** The event's subject, copied so that the order check reads one index. */
  @Column({ type: 'varchar', length: 320 })
  subject: string;

  @Column({ type: 'enum', enum: DELIVERY_STATES, enumName: 'webhook_delivery_state', default: 'pending' })
  state: DeliveryState;

  @Column({ type: 'integer', default: 0 })
  attempts: number;

  @Column({ name: 'next_attempt_at', type: 'timestamptz', default: () => 'now()' })
  nextAttemptAt: Date;

  /** After this, a failed attempt gives the delivery up instead of scheduling another. */
  @Column({ name: 'give_up_at', type: 'timestamptz' })
  giveUpAt: Date;

  /** Held by the instance whose claim this is, until then (an instance that died lets it lapse). */
  @Column({ name: 'lease_until', type: 'timestamptz', nullable: true })
  leaseUntil: Date | null;

  @Column({ name: 'lease_token', type: 'uuid', nullable: true })
  leaseToken: string | null;

  @Column({ name: 'completed_at', type: 'timestamptz', nullable: true })
  completedAt: Date | null;
}

/** The delivery log: one row per attempt. */
@Entity('webhook_delivery_attempts')
@Index('webhook_delivery_attempts_webhook_idx', ['webhookId', 'attemptedAt', 'id'])
@Index('webhook_delivery_attempts_delivery_idx', ['deliveryId'])
export class WebhookDeliveryAttempt {
  @BigIdColumn()
  id: string;

  @Column({ name: 'delivery_id', type: 'bigint' })
  deliveryId: string;

  @ManyToOne(() => WebhookDelivery, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'delivery_id' })
  delivery?: WebhookDelivery;

  /**
   * The delivery's webhook, copied for the log's index. No foreign key (migration WebhookThroughput): the attempt
   * goes with its delivery, which goes with its webhook; the check cost every attempt a lookup and a share lock on
   * the webhook's row, which every concurrent delivery's record also locks.
   */
  @Column({ name: 'webhook_id', type: 'bigint' })
  webhookId: string;

  @ManyToOne(() => Webhook, { onDelete: 'CASCADE', createForeignKeyConstraints: false })
  @JoinColumn({ name: 'webhook_id' })
  webhook?: Webhook;

  /** 1 for the first attempt of the delivery. */
  @Column({ type: 'integer' })
  attempt: number;

  /** The HTTP status answered; null when none was (refused address, timeout, connection error). */
  @Column({ name: 'response_status', type: 'integer', nullable: true })
  responseStatus: number | null;

  @Column({ type: 'boolean' })
  succeeded: boolean;

  /** What went wrong without an HTTP answer, e.g. `timeout`, `address refused: 10.0.0.1 is private`. */
  @Column({ type: 'varchar', length: 500, nullable: true })
  error: string | null;

  @Column({ name: 'latency_ms', type: 'integer' })
  latencyMs: number;

  /** The start of the response body (at most 1 KiB, as text). */
  @Column({ name: 'response_excerpt', type: 'text', nullable: true })
  responseExcerpt: string | null;

  @CreateDateColumn({ name: 'attempted_at', type: 'timestamptz', default: () => 'now()' })
  attemptedAt: Date;
}

/**
 * The debounce of `device.connected`/`device.disconnected`: per device, the connection state last sent and the
 * last change not judged yet. A trigger on `devices` writes a change (in the presence write's transaction, only
 * for organizations with a webhook that wants these events); WebhookConnectionEvents judges it: at once for a
 * connection, `FLEETHUB_WEBHOOK_CONNECTION_DEBOUNCE_SEC` after the change for a disconnection.
 */
@Entity('webhook_device_connections')
@Index('webhook_device_connections_connected_due_idx', ['changedAt'], {
  where: "pending AND status = 'connected'",
})
@Index('webhook_device_connections_disconnected_due_idx', ['changedAt'], {
  where: "pending AND status = 'disconnected'",
})
export class WebhookDeviceConnection {
  @PrimaryColumn({ name: 'device_id', type: 'bigint' })
  deviceId: string;

  @OneToOne(() => Device, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'device_id' })
  device?: Device;

  /** `connected` or `disconnected`: the device's state at its last change. */
  @Column({ type: 'varchar', length: 16 })
  status: string;

  @Column({ name: 'changed_at', type: 'timestamptz' })
  changedAt: Date;

  /** The last change is not judged yet. */
  @Column({ type: 'boolean', default: true })
  pending: boolean;

  /** The state last sent (null: none yet). */
  @Column({ name: 'sent_status', type: 'varchar', length: 16, nullable: true })
  sentStatus: string | null;
}

/**
 * One row (id 1): the outbox settings the triggers that write events need (they cannot read the configuration);
 * every instance writes its own at start.
 */
@Entity('webhook_settings')
export class WebhookSettings {
  @PrimaryColumn({ type: 'smallint' })
  id: number;

  /** FLEETHUB_WEBHOOK_RETRY_HOURS, in milliseconds. */
  @Column({ name: 'retry_window_ms', type: 'bigint' })
  retryWindowMs: string;
}
