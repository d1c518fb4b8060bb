import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { BooleanField, CustomField, StringField } from '../../common/validation/fields';
import { isSubscribable } from '../webhook-event-types';

export const URL_MAX_LENGTH = 2048;
export const MAX_EVENT_TYPES = 50;

/** `event_types`: 1–50 distinct strings, each `*`, `<family>.*` or a type of the catalogue. */
export function checkEventTypes(value: unknown): string | null {
  if (value === undefined) return null;
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string'))
    return 'must be an array of event types';
  if (value.length === 0) return "can't be empty";
  if (value.length > MAX_EVENT_TYPES) return `should have at most ${MAX_EVENT_TYPES} entries`;
  const unknown = (value as string[]).filter((v) => !isSubscribable(v));
  if (unknown.length > 0)
    return `unknown event type(s): ${unknown
      .slice(0, 5)
      .map((v) => JSON.stringify(v.slice(0, 64)))
      .join(', ')}`;
  return null;
}

export const MAX_RATE_LIMIT_PER_SECOND = 10_000;

/** `rate_limit_per_second`: null (the server's default) or an integer from 1 to MAX_RATE_LIMIT_PER_SECOND. */
export function checkRateLimit(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  return Number.isInteger(value) && (value as number) >= 1 && (value as number) <= MAX_RATE_LIMIT_PER_SECOND
    ? null
    : `must be an integer from 1 to ${MAX_RATE_LIMIT_PER_SECOND}`;
}

const RATE_LIMIT_DOC = {
  type: Number,
  nullable: true,
  description:
    "Deliveries per second each fleethub instance starts to this endpoint at most (bursts of one second's " +
    'worth; a throttled endpoint never delays the others); null: the server default ' +
    '(FLEETHUB_WEBHOOK_RATE_PER_SEC, 50; 0 there means no limit)',
  minimum: 1,
  maximum: MAX_RATE_LIMIT_PER_SECOND,
  example: 20,
};

const EVENT_TYPES_DOC = {
  type: String,
  isArray: true,
  description:
    'The events wanted: types of the catalogue (`GET .../webhooks/event_types`), a family (`device.*`) or ' +
    '`*` for every event',
  example: ['device.*', 'deployment_group.paused'],
};

const URL_DOC = {
  description:
    'Where events are POSTed. `https://` (`http://` only for the hosts the server allows, ' +
    'FLEETHUB_WEBHOOK_HTTP_HOSTS); no user name or password. Deliveries never go to loopback, private, ' +
    'link-local or metadata addresses unless the server allows the range (FLEETHUB_WEBHOOK_ALLOW_CIDRS).',
  example: 'https://hooks.example.com/fleethub',
};

export class CreateWebhookDto {
  @StringField({ required: true, max: URL_MAX_LENGTH, doc: URL_DOC })
  url: string;

  @CustomField('eventTypes', (value) => (value === undefined ? "can't be blank" : checkEventTypes(value)))
  @ApiProperty({ ...EVENT_TYPES_DOC, required: true })
  event_types: string[];

  @StringField({
    nullable: true,
    max: 255,
    doc: {
      description: "Only this product's events (by name); omit or null for every event of the organization",
    },
  })
  product?: string | null;

  @BooleanField({ description: 'Deliver events (default true)', default: true })
  enabled?: boolean;

  @CustomField('rateLimitPerSecond', checkRateLimit)
  @ApiPropertyOptional(RATE_LIMIT_DOC)
  rate_limit_per_second?: number | null;
}

export class UpdateWebhookDto {
  @StringField({ nonBlank: true, max: URL_MAX_LENGTH, doc: URL_DOC })
  url?: string;

  @CustomField('eventTypes', checkEventTypes)
  @ApiPropertyOptional(EVENT_TYPES_DOC)
  event_types?: string[];

  @StringField({
    nullable: true,
    max: 255,
    doc: { description: "Only this product's events; null for every event of the organization" },
  })
  product?: string | null;

  @BooleanField({
    description:
      'false: no events are queued for it (those of that time are not sent later); true: enabled again, ' +
      'its failure streak and the reason it was disabled cleared',
  })
  enabled?: boolean;

  @CustomField('rateLimitPerSecond', checkRateLimit)
  @ApiPropertyOptional(RATE_LIMIT_DOC)
  rate_limit_per_second?: number | null;
}

export class RedeliverWebhookDto {
  @StringField({
    max: 40,
    doc: {
      description: 'One event to send again (its id, `evt_...`)',
      example: 'evt_3f1c0a9e6d2b4c8f9a7e5d3c1b0a9f8e',
    },
  })
  event_id?: string;

  @StringField({
    max: 40,
    doc: { description: 'With `to`: every event of this time range (ISO 8601, inclusive) the webhook wants' },
  })
  from?: string;

  @StringField({ max: 40, doc: { description: 'The end of the range (ISO 8601, inclusive)' } })
  to?: string;
}

export class WebhookView {
  @ApiProperty({ example: '7' }) id: string;
  @ApiProperty({ example: 'https://hooks.example.com/fleethub' }) url: string;
  @ApiProperty({ type: [String], example: ['device.*'] }) event_types: string[];
  @ApiProperty({ type: String, nullable: true, example: null }) product: string | null;
  @ApiProperty({ example: true }) enabled: boolean;
  @ApiProperty({ ...RATE_LIMIT_DOC, example: null }) rate_limit_per_second: number | null;
  @ApiProperty({
    type: String,
    nullable: true,
    description:
      'Why it is disabled: by a person, or by fleethub after it kept failing (with the last error)',
  })
  disabled_reason: string | null;
  @ApiProperty({ type: String, nullable: true }) disabled_at: string | null;
  @ApiProperty({
    type: String,
    nullable: true,
    description: 'Until when the secret before the last rotation still signs (null: it does not)',
  })
  previous_secret_expires_at: string | null;
  @ApiProperty({ example: '2026-11-22T03:04:05.123Z' }) inserted_at: string;
  @ApiProperty({ example: '2026-11-22T03:04:05.123Z' }) updated_at: string;
}

export class CreatedWebhookView extends WebhookView {
  @ApiProperty({
    description: 'The signing secret (`whsec_` + base64), shown only now',
    example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  })
  secret: string;
}

export class WebhookSecretView {
  @ApiProperty({ description: 'The new signing secret, shown only now' }) secret: string;
  @ApiProperty({
    type: String,
    nullable: true,
    description: 'Until when the previous secret signs too (both signatures are sent)',
  })
  previous_secret_expires_at: string | null;
}

export class WebhookAttemptView {
  @ApiProperty({ example: '91' }) id: string;
  @ApiProperty({ example: 'evt_3f1c0a9e6d2b4c8f9a7e5d3c1b0a9f8e' }) event_id: string;
  @ApiProperty({ example: 'device.created' }) event_type: string;
  @ApiProperty({ example: 1, description: 'The attempt number of this delivery (1: the first)' })
  attempt: number;
  @ApiProperty({ enum: ['succeeded', 'failed'] }) status: 'succeeded' | 'failed';
  @ApiProperty({ type: Number, nullable: true, example: 200 }) response_status: number | null;
  @ApiProperty({ type: String, nullable: true, description: 'Why there was no HTTP answer' }) error:
    string | null;
  @ApiProperty({ example: 42 }) latency_ms: number;
  @ApiProperty({ type: String, nullable: true, description: 'The first KiB of the response body' })
  response_excerpt: string | null;
  @ApiProperty({ example: '2026-11-22T03:04:05.123Z' }) attempted_at: string;
  @ApiProperty({
    enum: ['pending', 'delivered', 'failed'],
    description: 'Where the delivery stands now (`failed`: given up)',
  })
  delivery_state: string;
}

export class WebhookEventQueuedView {
  @ApiProperty({ example: 'evt_3f1c0a9e6d2b4c8f9a7e5d3c1b0a9f8e' }) event_id: string;
  @ApiProperty({ example: 'webhook.test' }) type: string;
  @ApiProperty({ example: '2026-11-22T03:04:05.123Z' }) timestamp: string;
}

export class RedeliveryView {
  @ApiProperty({ example: 1, description: 'Deliveries queued (one still pending is left as it is)' })
  queued: number;
}

export class WebhookEventTypeView {
  @ApiProperty({ example: 'device.created' }) type: string;
  @ApiProperty({ example: 1 }) version: number;
  @ApiProperty() description: string;
  @ApiProperty({ example: 'device:<identifier>' }) subject: string;
  @ApiProperty({
    example: 'WebhookEvent_device.created_v1',
    description: 'The schema of its body in `components.schemas` of this document',
  })
  schema: string;
}
