import type { AuditEntry } from '../audit/audit.service';
import type { Actor } from '../common/auth/actor';
import {
  EVENT_TYPES,
  eventFromAudit,
  eventSchemas,
  isSubscribable,
  patternsMatching,
} from './webhook-event-types';

const actor = { email: 'ada@example.com' } as Actor;
const entry = (action: string, targetId: string, details: Record<string, unknown> = {}): AuditEntry => ({
  orgId: '7',
  actor,
  action,
  targetType: 'x',
  targetId,
  details,
});

describe('webhook event catalogue', () => {
  it('maps audit entries to events with their subject, product and data', () => {
    expect(eventFromAudit(entry('device.create', 'sim-1', { product: 'gw' }))).toEqual({
      orgId: '7',
      type: 'device.created',
      product: 'gw',
      subject: 'device:sim-1',
      data: {
        identifier: 'sim-1',
        product: 'gw',
        via: 'api',
        actor: { type: 'user', email: 'ada@example.com' },
      },
    });
    expect(
      eventFromAudit({
        ...entry('deployment_group.pause', 'canary', { product: 'gw', reason: 'r', release: 2 }),
        actor: null,
      }),
    ).toMatchObject({
      type: 'deployment_group.paused',
      product: 'gw',
      subject: 'deployment_group:gw/canary',
      data: { name: 'canary', reason: 'r', by: 'fleethub', release: 2, actor: { type: 'system' } },
    });
    expect(
      eventFromAudit(entry('deployment_group.update', 'canary', { product: 'gw', is_active: true })),
    ).toMatchObject({ type: 'deployment_group.resumed' });
    expect(
      eventFromAudit(entry('member.update', 'b@example.com', { role: 'admin', previous_role: 'view' })),
    ).toMatchObject({ type: 'member.role_changed', product: null, subject: 'member:b@example.com' });
    expect(eventFromAudit(entry('script.create', '3'))).toBeNull();
    expect(eventFromAudit(entry('webhook.create', '3'))).toBeNull();
  });

  it('produces every type of the catalogue from some audit action (those emitted elsewhere aside)', () => {
    // webhook.test: the test route; update.failed, device.penalty_box_entered and deployment_group.finished: the
    // deployment orchestrator; connections: WebhookConnectionEvents; the update lifecycle: database triggers;
    // health.*: written with the health reports that raise or clear alarms; certificate.expiring: the expiry scan.
    const elsewhere = [
      'webhook.test',
      'update.failed',
      'device.penalty_box_entered',
      'deployment_group.finished',
      'device.connected',
      'device.disconnected',
      'update.started',
      'update.progress',
      'update.completed',
      'health.alarm_raised',
      'health.alarm_cleared',
      'certificate.expiring',
    ];
    const actions = [
      ['device.create', {}],
      ['device.update', {}],
      ['device.delete', {}],
      ['device.move', { to: { org: 'o', product: 'p' } }],
      ['device.penalty_clear', {}],
      ['device.upgrade', {}],
      ['firmware.upload', {}],
      ['firmware.delete', {}],
      ['deployment_group.create', {}],
      ['deployment_group.update', { notes: 'x' }],
      ['deployment_group.update', { is_active: false }],
      ['deployment_group.update', { is_active: true }],
      ['deployment_group.delete', {}],
      ['device_certificate.create', {}],
      ['device_certificate.delete', {}],
      ['member.add', {}],
      ['member.remove', {}],
      ['member.update', {}],
      ['product.create', {}],
      ['product.update', {}],
      ['product.delete', {}],
    ] as const;
    const produced = new Set(
      actions.map(([action, details]) => eventFromAudit(entry(action, 't', details))?.type),
    );
    for (const t of EVENT_TYPES) if (!elsewhere.includes(t.type)) expect(produced).toContain(t.type);
  });

  it('subscriptions: a type, a family or everything', () => {
    expect(isSubscribable('*')).toBe(true);
    expect(isSubscribable('device.*')).toBe(true);
    expect(isSubscribable('device.created')).toBe(true);
    expect(isSubscribable('devices.*')).toBe(false);
    expect(isSubscribable('webhook.test')).toBe(false);
    expect(isSubscribable('device')).toBe(false);
    expect(patternsMatching('device.created')).toEqual(['*', 'device.*', 'device.created']);
  });

  it('has one OpenAPI schema per type, with its version', () => {
    const schemas = eventSchemas();
    for (const t of EVENT_TYPES) expect(schemas[`WebhookEvent_${t.type}_v${t.version}`]).toBeDefined();
    expect(schemas.WebhookEventEnvelope).toBeDefined();
  });
});
