import type { AuditEntry } from '../audit/audit.service';

/**
 * The webhook event catalogue: every type a webhook can subscribe to, its version and the fields of its `data`
 * (documented in OpenAPI, one schema per type: `WebhookEvent_<type>_v<version>`). A field is added to a type
 * without a new version; a field removed or changed in meaning makes a new version.
 */
type FieldType = 'string' | 'integer' | 'boolean' | 'object' | 'string?' | 'integer?' | 'object?';

export interface EventTypeDoc {
  type: string;
  version: number;
  description: string;
  /** `device:<identifier>`, `firmware:<uuid>`... */
  subject: string;
  data: Record<string, { type: FieldType; description: string }>;
}

const IDENTIFIER = { type: 'string', description: 'The device identifier' } as const;
const PRODUCT = {
  type: 'string?',
  description: "The product's name (null when the change does not name it)",
} as const;
const GROUP = { type: 'string', description: "The deployment group's name" } as const;
const EMAIL = { type: 'string', description: "The member's email address" } as const;
const ROLE = { type: 'string', description: '`view`, `manage` or `admin`' } as const;
const ALARM = {
  type: 'string',
  description:
    "The alarm's id: a key of the report's `alarms` object (a string element when the device sends a list)",
} as const;
const ALARM_DESCRIPTION = {
  type: 'string?',
  description: "The alarm's description as the device reported it (its value in `alarms`), when it has one",
} as const;
const ACTIVE_ALARMS = {
  type: 'integer',
  description: 'Alarms active in the latest report, after this change',
} as const;

const FIRMWARE_UUID = { type: 'string?', description: "The firmware's uuid" } as const;
const FIRMWARE_VERSION = { type: 'string?', description: "The firmware's version" } as const;
const UPDATE_DATA = {
  identifier: IDENTIFIER,
  product: PRODUCT,
  firmware_uuid: { type: 'string', description: 'The firmware the device is updated to' },
  firmware_version: { type: 'string', description: 'Its version' },
  deployment_group: {
    type: 'string?',
    description: 'The deployment group that sent it (null: a manual upgrade)',
  },
  release: { type: 'integer?', description: "The number of the group's release (null: a manual upgrade)" },
  via: { type: 'string', description: '`deployment_group` or `manual`' },
} as const;

export const EVENT_TYPES: readonly EventTypeDoc[] = [
  {
    type: 'device.created',
    version: 1,
    description: 'A device was created: through the API, or registered by its first connection',
    subject: 'device:<identifier>',
    data: {
      identifier: IDENTIFIER,
      product: PRODUCT,
      via: {
        type: 'string',
        description:
          '`api`, `shared_secret`, `certificate` (just-in-time registration) or `import` (a device import job)',
      },
    },
  },
  {
    type: 'device.updated',
    version: 1,
    description: "A device's description, tags or `updates_enabled` changed",
    subject: 'device:<identifier>',
    data: {
      identifier: IDENTIFIER,
      product: PRODUCT,
      changes: { type: 'object', description: 'The fields set, with their new values' },
    },
  },
  {
    type: 'device.deleted',
    version: 1,
    description: 'A device was deleted',
    subject: 'device:<identifier>',
    data: { identifier: IDENTIFIER, product: PRODUCT },
  },
  {
    type: 'device.moved',
    version: 1,
    description:
      'A device moved to another product (sent to both organizations when it changes organization); `product` ' +
      'is the new one',
    subject: 'device:<identifier>',
    data: {
      identifier: IDENTIFIER,
      product: PRODUCT,
      from: { type: 'object', description: '`{org, product}` before the move' },
      to: { type: 'object', description: '`{org, product}` after the move' },
    },
  },
  {
    type: 'device.penalty_box_cleared',
    version: 1,
    description: 'A person took a device out of the penalty box',
    subject: 'device:<identifier>',
    data: { identifier: IDENTIFIER, product: PRODUCT },
  },
  {
    type: 'update.requested',
    version: 1,
    description: 'A person asked for a device to be updated to a firmware (a manual upgrade)',
    subject: 'device:<identifier>',
    data: {
      identifier: IDENTIFIER,
      product: PRODUCT,
      firmware_uuid: { type: 'string', description: 'The firmware the device is to install' },
    },
  },
  {
    type: 'update.failed',
    version: 1,
    description:
      "A device's update failed: the device reported it failed or ignored it, or (a deployment group's) it did " +
      'not complete in time',
    subject: 'device:<identifier>',
    data: {
      identifier: IDENTIFIER,
      product: PRODUCT,
      deployment_group: {
        type: 'string?',
        description: 'The deployment group that sent it (null: a manual upgrade)',
      },
      release: {
        type: 'integer?',
        description: 'The number of the release it was updating to (null: a manual upgrade)',
      },
      firmware_uuid: { type: 'string', description: 'The firmware the device was updated to' },
      firmware_version: { type: 'string', description: 'Its version' },
      via: { type: 'string', description: '`deployment_group` or `manual`' },
      reason: {
        type: 'string',
        description: "`reported` (failed or ignored) or `expired` (a deployment group's only)",
      },
    },
  },
  {
    type: 'device.penalty_box_entered',
    version: 1,
    description:
      "A failed update put the device in the penalty box (or kept it there): the deployment group's updates skip " +
      'it for `penalty_timeout_minutes`',
    subject: 'device:<identifier>',
    data: {
      identifier: IDENTIFIER,
      product: PRODUCT,
      deployment_group: GROUP,
      penalty_timeout_minutes: { type: 'integer', description: 'How long it stays there' },
    },
  },
  {
    type: 'firmware.uploaded',
    version: 1,
    description: 'A firmware was uploaded',
    subject: 'firmware:<uuid>',
    data: {
      uuid: { type: 'string', description: "The firmware's uuid" },
      product: PRODUCT,
      version: { type: 'string', description: 'Its version' },
      size: { type: 'integer?', description: 'Its size in bytes' },
      tool: { type: 'string?', description: '`fwup`, `atomvm` or `esp-idf`' },
    },
  },
  {
    type: 'firmware.deleted',
    version: 1,
    description: 'A firmware was deleted',
    subject: 'firmware:<uuid>',
    data: {
      uuid: { type: 'string', description: "The firmware's uuid" },
      product: PRODUCT,
      version: { type: 'string?', description: 'Its version' },
    },
  },
  {
    type: 'deployment_group.created',
    version: 1,
    description: 'A deployment group was created',
    subject: 'deployment_group:<product>/<name>',
    data: {
      name: GROUP,
      product: PRODUCT,
      firmware: { type: 'string', description: 'The uuid of its first release' },
      settings: { type: 'object', description: 'Its settings as given' },
    },
  },
  {
    type: 'deployment_group.changed',
    version: 1,
    description: "A deployment group's settings changed, or it got a new release",
    subject: 'deployment_group:<product>/<name>',
    data: {
      name: GROUP,
      product: PRODUCT,
      changes: { type: 'object?', description: 'The settings changed, with their new values' },
      release: { type: 'object?', description: '`{number, firmware}` of the new release' },
      previous_name: { type: 'string?', description: 'Its name before a rename' },
    },
  },
  {
    type: 'deployment_group.paused',
    version: 1,
    description:
      'A deployment group stopped rolling out: a person turned it off, or fleethub paused it because too many ' +
      'updates of its release failed',
    subject: 'deployment_group:<product>/<name>',
    data: {
      name: GROUP,
      product: PRODUCT,
      reason: { type: 'string', description: 'Why it paused' },
      by: { type: 'string', description: '`user` or `fleethub`' },
      release: { type: 'integer?', description: 'The number of the release whose failures paused it' },
      failed_count: { type: 'integer?', description: 'Failed updates of that release' },
    },
  },
  {
    type: 'deployment_group.resumed',
    version: 1,
    description: 'A person turned a deployment group back on',
    subject: 'deployment_group:<product>/<name>',
    data: { name: GROUP, product: PRODUCT },
  },
  {
    type: 'deployment_group.deleted',
    version: 1,
    description: 'A deployment group was deleted',
    subject: 'deployment_group:<product>/<name>',
    data: { name: GROUP, product: PRODUCT },
  },
  {
    type: 'certificate.registered',
    version: 1,
    description: 'A device certificate or a CA certificate was registered',
    subject: 'device:<identifier> or ca_certificate:<serial>',
    data: {
      kind: { type: 'string', description: '`device` or `ca`' },
      identifier: { type: 'string?', description: 'The device (device certificates)' },
      serial: { type: 'string', description: "The certificate's serial number" },
      fingerprint: { type: 'string?', description: 'SHA-256 fingerprint (device certificates)' },
    },
  },
  {
    type: 'certificate.revoked',
    version: 1,
    description: 'A device certificate or a CA certificate was removed: it no longer authenticates',
    subject: 'device:<identifier> or ca_certificate:<serial>',
    data: {
      kind: { type: 'string', description: '`device` or `ca`' },
      identifier: { type: 'string?', description: 'The device (device certificates)' },
      serial: { type: 'string', description: "The certificate's serial number" },
    },
  },
  {
    type: 'member.added',
    version: 1,
    description: 'Someone became a member of the organization (added, or accepted an invitation)',
    subject: 'member:<email>',
    data: { email: EMAIL, role: ROLE },
  },
  {
    type: 'member.removed',
    version: 1,
    description: 'A member was removed from the organization',
    subject: 'member:<email>',
    data: { email: EMAIL, role: ROLE },
  },
  {
    type: 'member.role_changed',
    version: 1,
    description: "A member's role changed",
    subject: 'member:<email>',
    data: { email: EMAIL, role: ROLE, previous_role: ROLE },
  },
  {
    type: 'product.created',
    version: 1,
    description: 'A product was created',
    subject: 'product:<name>',
    data: { product: { type: 'string', description: "The product's name" } },
  },
  {
    type: 'product.updated',
    version: 1,
    description: "A product's settings or extensions changed",
    subject: 'product:<name>',
    data: {
      product: { type: 'string', description: "The product's name" },
      changes: { type: 'object', description: 'The settings changed, with their new values' },
    },
  },
  {
    type: 'product.deleted',
    version: 1,
    description: 'A product was deleted',
    subject: 'product:<name>',
    data: { product: { type: 'string', description: "The product's name" } },
  },
  // Live events (device path and orchestrator, written outside the audit trail): connection, update lifecycle,
  // rollout end. See WebhookConnectionEvents and migrations/1795945722623-WebhookLiveEvents.ts.
  {
    type: 'device.connected',
    version: 1,
    description:
      'A device connected, and the last connection state sent for it was not `connected` (a device that ' +
      'reconnects within FLEETHUB_WEBHOOK_CONNECTION_DEBOUNCE_SEC sends nothing)',
    subject: 'device:<identifier>',
    data: {
      identifier: IDENTIFIER,
      product: PRODUCT,
      firmware_uuid: FIRMWARE_UUID,
      firmware_version: FIRMWARE_VERSION,
      connected_at: { type: 'string', description: 'When it connected (UTC)' },
    },
  },
  {
    type: 'device.disconnected',
    version: 1,
    description:
      'A device disconnected and stayed disconnected for FLEETHUB_WEBHOOK_CONNECTION_DEBOUNCE_SEC (sent that ' +
      'long after it went; a flapping device sends at most one pair)',
    subject: 'device:<identifier>',
    data: {
      identifier: IDENTIFIER,
      product: PRODUCT,
      firmware_uuid: FIRMWARE_UUID,
      firmware_version: FIRMWARE_VERSION,
      disconnected_at: { type: 'string', description: 'When it disconnected (UTC)' },
    },
  },
  {
    type: 'update.started',
    version: 1,
    description:
      'A device was sent an update (by a deployment group or a manual upgrade); sent again only when the update ' +
      'is sent anew after a `rescheduled` status',
    subject: 'device:<identifier>',
    data: UPDATE_DATA,
  },
  {
    type: 'update.progress',
    version: 1,
    description: "A device's update passed 25, 50 or 75 %: each milestone at most once per update sent",
    subject: 'device:<identifier>',
    data: {
      ...UPDATE_DATA,
      percent: { type: 'integer', description: 'The milestone passed: 25, 50 or 75' },
    },
  },
  {
    type: 'update.completed',
    version: 1,
    description: 'A device that was sent an update came back running its firmware',
    subject: 'device:<identifier>',
    data: UPDATE_DATA,
  },
  {
    type: 'deployment_group.finished',
    version: 1,
    description:
      'Every device of a deployment group that takes updates runs its current release, none in flight: sent once ' +
      'per release',
    subject: 'deployment_group:<product>/<name>',
    data: {
      name: GROUP,
      product: PRODUCT,
      release: { type: 'integer', description: 'The number of the release' },
      firmware_uuid: FIRMWARE_UUID,
      firmware_version: FIRMWARE_VERSION,
      devices: { type: 'integer', description: 'The devices of the group' },
    },
  },
  // Events not from the audit trail: health alarms (health reports), certificate expiry (the expiry scan).
  {
    type: 'health.alarm_raised',
    version: 1,
    description:
      "An alarm appeared in a device's health report (it was not active in the device's previous report); one " +
      'event per alarm',
    subject: 'device:<identifier>',
    data: {
      identifier: IDENTIFIER,
      product: PRODUCT,
      alarm: ALARM,
      description: ALARM_DESCRIPTION,
      active_alarms: ACTIVE_ALARMS,
    },
  },
  {
    type: 'health.alarm_cleared',
    version: 1,
    description:
      "An alarm active in a device's previous health report is no longer in its latest one; one event per alarm",
    subject: 'device:<identifier>',
    data: {
      identifier: IDENTIFIER,
      product: PRODUCT,
      alarm: ALARM,
      description: ALARM_DESCRIPTION,
      active_alarms: ACTIVE_ALARMS,
    },
  },
  {
    type: 'certificate.expiring',
    version: 1,
    description:
      'A device certificate or a CA certificate expires within `FLEETHUB_WEBHOOK_CERT_EXPIRY_DAYS` (30 by ' +
      'default): sent once per certificate, by a periodic scan',
    subject: 'device:<identifier> or ca_certificate:<serial>',
    data: {
      kind: { type: 'string', description: '`device` or `ca`' },
      identifier: { type: 'string?', description: 'The device (device certificates)' },
      product: PRODUCT,
      serial: { type: 'string', description: "The certificate's serial number" },
      fingerprint: { type: 'string?', description: 'SHA-256 fingerprint (device certificates)' },
      not_after: { type: 'string', description: 'When it expires (ISO 8601, UTC)' },
      days_left: { type: 'integer', description: 'Whole days left until then when the scan found it' },
      description: { type: 'string?', description: "The CA certificate's description (CA certificates)" },
    },
  },
  // End of the health and certificate expiry events.
  {
    type: 'webhook.test',
    version: 1,
    description:
      'Sent by `POST .../webhooks/{webhook_id}/test` to this webhook only, whatever it subscribes to',
    subject: 'webhook:<id>',
    data: { webhook_id: { type: 'string', description: 'The webhook' } },
  },
];

export const EVENT_TYPE_NAMES: ReadonlySet<string> = new Set(EVENT_TYPES.map((t) => t.type));
export const VERSION_OF: ReadonlyMap<string, number> = new Map(EVENT_TYPES.map((t) => [t.type, t.version]));

/** Families that `<family>.*` subscribes to whole. */
export const EVENT_FAMILIES: ReadonlySet<string> = new Set(EVENT_TYPES.map((t) => t.type.split('.')[0]));

/** `*`, `<family>.*` or a type of the catalogue (`webhook.test` is never subscribed to: it goes to one webhook). */
export function isSubscribable(pattern: string): boolean {
  if (pattern === '*') return true;
  if (pattern.endsWith('.*')) return EVENT_FAMILIES.has(pattern.slice(0, -2));
  return EVENT_TYPE_NAMES.has(pattern) && pattern !== 'webhook.test';
}

/** The subscriptions that want `type`: the type itself, its family's wildcard, `*`. */
export function patternsMatching(type: string): string[] {
  return ['*', `${type.split('.')[0]}.*`, type];
}

/** An event to write to the outbox. */
export interface OutboxEvent {
  orgId: string;
  type: string;
  product: string | null;
  subject: string;
  data: Record<string, unknown>;
}

const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);

function actorOf(entry: AuditEntry): Record<string, unknown> {
  return entry.actor ? { type: 'user', email: entry.actor.email } : { type: 'system' };
}

/**
 * The webhook event an audit entry describes, or null for changes that have none (scripts, keys, tokens...).
 * Every event's data also carries `actor` (`{type: 'user', email}` or `{type: 'system'}`).
 */
export function eventFromAudit(entry: AuditEntry): OutboxEvent | null {
  const d = entry.details ?? {};
  const target = entry.targetId;
  const product = text(d.product);
  const make = (type: string, subject: string, data: Record<string, unknown>, p = product): OutboxEvent => ({
    orgId: entry.orgId,
    type,
    product: p,
    subject,
    data: { ...data, actor: actorOf(entry) },
  });
  const device = `device:${target}`;
  const group = (p: string | null) => `deployment_group:${p ?? ''}/${target}`;
  const { product: _product, ...rest } = d;
  switch (entry.action) {
    case 'device.create':
      return make('device.created', device, { identifier: target, product, via: 'api' });
    case 'device.register':
      return make('device.created', device, {
        identifier: target,
        product,
        via: d.jitp === true ? 'certificate' : 'shared_secret',
      });
    case 'device.update':
      return make('device.updated', device, { identifier: target, product, changes: rest });
    case 'device.delete':
      return make('device.deleted', device, { identifier: target, product });
    case 'device.move': {
      const to = (d.to ?? {}) as Record<string, unknown>;
      return make(
        'device.moved',
        device,
        { identifier: target, product: text(to.product), from: d.from, to: d.to },
        text(to.product),
      );
    }
    case 'device.penalty_clear':
      return make('device.penalty_box_cleared', device, { identifier: target, product });
    case 'device.upgrade':
      return make('update.requested', device, {
        identifier: target,
        product,
        firmware_uuid: d.firmware_uuid,
      });
    case 'firmware.upload':
      return make('firmware.uploaded', `firmware:${target}`, {
        uuid: target,
        product,
        version: d.version,
        size: d.size ?? null,
        tool: d.tool ?? null,
      });
    case 'firmware.delete':
      return make('firmware.deleted', `firmware:${target}`, {
        uuid: target,
        product,
        version: d.version ?? null,
      });
    case 'deployment_group.create': {
      const { firmware, ...settings } = rest;
      return make('deployment_group.created', group(product), { name: target, product, firmware, settings });
    }
    case 'deployment_group.update': {
      const { previous_name, ...changes } = rest;
      if (changes.is_active === false)
        return make('deployment_group.paused', group(product), {
          name: target,
          product,
          reason: entry.actor ? `turned off by ${entry.actor.email}` : 'turned off',
          by: 'user',
        });
      if (changes.is_active === true)
        return make('deployment_group.resumed', group(product), { name: target, product });
      return make('deployment_group.changed', group(product), {
        name: target,
        product,
        changes,
        ...(previous_name !== undefined && { previous_name }),
      });
    }
    case 'deployment_group.release':
      return make('deployment_group.changed', group(product), {
        name: target,
        product,
        release: { number: d.number, firmware: d.firmware },
      });
    case 'deployment_group.pause':
      return make('deployment_group.paused', group(product), {
        name: target,
        product,
        reason: d.reason,
        by: 'fleethub',
        release: d.release ?? null,
        failed_count: d.failed_count ?? null,
      });
    case 'deployment_group.delete':
      return make('deployment_group.deleted', group(product), { name: target, product });
    case 'device_certificate.create':
      return make('certificate.registered', device, {
        kind: 'device',
        identifier: target,
        serial: d.serial,
        fingerprint: d.fingerprint ?? null,
      });
    case 'device_certificate.delete':
      return make('certificate.revoked', device, { kind: 'device', identifier: target, serial: d.serial });
    case 'ca_certificate.create':
      return make('certificate.registered', `ca_certificate:${target}`, {
        kind: 'ca',
        identifier: null,
        serial: target,
        fingerprint: null,
      });
    case 'ca_certificate.delete':
      return make('certificate.revoked', `ca_certificate:${target}`, {
        kind: 'ca',
        identifier: null,
        serial: target,
      });
    case 'member.add':
    case 'invitation.accept':
      return make('member.added', `member:${target}`, { email: target, role: d.role }, null);
    case 'member.remove':
      return make('member.removed', `member:${target}`, { email: target, role: d.role }, null);
    case 'member.update':
      return make(
        'member.role_changed',
        `member:${target}`,
        { email: target, role: d.role, previous_role: d.previous_role },
        null,
      );
    case 'product.create':
      return make('product.created', `product:${target}`, { product: target }, target);
    case 'product.update':
    case 'product.extensions.update':
      return make('product.updated', `product:${target}`, { product: target, changes: rest }, target);
    case 'product.delete':
      return make('product.deleted', `product:${target}`, { product: target }, target);
    default:
      return null;
  }
}

const SCHEMA_TYPES: Record<FieldType, object> = {
  string: { type: 'string' },
  integer: { type: 'integer' },
  boolean: { type: 'boolean' },
  object: { type: 'object', additionalProperties: true },
  'string?': { type: 'string', nullable: true },
  'integer?': { type: 'integer', nullable: true },
  'object?': { type: 'object', additionalProperties: true, nullable: true },
};

export const schemaName = (t: EventTypeDoc) => `WebhookEvent_${t.type}_v${t.version}`;

/**
 * The OpenAPI schemas of the catalogue: `WebhookEventEnvelope` and one per type (the envelope with its `type`
 * and `data`), for `components.schemas`.
 */
export function eventSchemas(): Record<string, object> {
  const schemas: Record<string, object> = {
    WebhookEventEnvelope: {
      type: 'object',
      description:
        'The body of every webhook request (JSON). Headers: `webhook-id` (= `id`), `webhook-timestamp` (Unix ' +
        'seconds of the attempt), `webhook-signature` (`v1,<base64 HMAC-SHA256>`, space-separated when two ' +
        'secrets sign during a rotation), as the Standard Webhooks specification defines them.',
      required: ['id', 'type', 'version', 'timestamp', 'org', 'product', 'subject', 'data'],
      properties: {
        id: {
          type: 'string',
          example: 'evt_3f1c0a9e6d2b4c8f9a7e5d3c1b0a9f8e',
          description: 'Stable: receivers de-duplicate with it',
        },
        type: { type: 'string', example: 'device.created' },
        version: { type: 'integer', example: 1, description: "The version of the type's schema" },
        timestamp: { type: 'string', format: 'date-time', description: 'When the change happened (UTC)' },
        org: { type: 'string', description: "The organization's name" },
        product: {
          type: 'string',
          nullable: true,
          description: "The product's name, when the event has one",
        },
        subject: {
          type: 'string',
          example: 'device:sim-0001',
          description: "What the event is about; one subject's events arrive in the order they happened",
        },
        data: { type: 'object', additionalProperties: true },
      },
    },
  };
  schemas.WebhookEvent = {
    description: 'One webhook request body: one of the event types of the catalogue, told apart by `type`',
    oneOf: EVENT_TYPES.map((t) => ({ $ref: `#/components/schemas/${schemaName(t)}` })),
  };
  for (const t of EVENT_TYPES) {
    schemas[schemaName(t)] = {
      description: `${t.description}. Subject: \`${t.subject}\`.`,
      allOf: [
        { $ref: '#/components/schemas/WebhookEventEnvelope' },
        {
          type: 'object',
          properties: {
            type: { type: 'string', enum: [t.type] },
            version: { type: 'integer', enum: [t.version] },
            data: {
              type: 'object',
              additionalProperties: true,
              required: Object.keys(t.data),
              properties: {
                ...Object.fromEntries(
                  Object.entries(t.data).map(([name, f]) => [
                    name,
                    { ...SCHEMA_TYPES[f.type], description: f.description },
                  ]),
                ),
                actor: {
                  type: 'object',
                  description: 'Who made the change: `{type: "user", email}` or `{type: "system"}`',
                  additionalProperties: true,
                },
              },
            },
          },
        },
      ],
    };
  }
  return schemas;
}

/**
 * The OpenAPI callback of `POST .../webhooks`: what fleethub POSTs to the webhook's `url` (the body is a
 * `WebhookEvent`; a 2xx answer delivers it, anything else is retried).
 */
export function eventCallback(): Record<string, unknown> {
  return {
    event: {
      '{$request.body#/url}': {
        post: {
          operationId: 'Webhooks_event',
          tags: ['Webhooks'],
          summary: 'An event, POSTed to the webhook by fleethub',
          description:
            'Signed as Standard Webhooks define: `webhook-id` (the event id; the same on every attempt), ' +
            '`webhook-timestamp`, `webhook-signature`. Delivered at least once, in order per subject; no redirect ' +
            'is followed.',
          security: [],
          parameters: ['webhook-id', 'webhook-timestamp', 'webhook-signature'].map((name) => ({
            name,
            in: 'header',
            required: true,
            schema: { type: 'string' },
          })),
          requestBody: {
            required: true,
            content: { 'application/json': { schema: { $ref: '#/components/schemas/WebhookEvent' } } },
          },
          responses: {
            '200': { description: 'Any 2xx: delivered' },
            '400': { description: 'Anything else (or no answer in time): tried again later' },
          },
        },
      },
    },
  };
}
