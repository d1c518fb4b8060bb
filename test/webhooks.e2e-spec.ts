import type { LookupAddress } from 'node:dns';
import { Webhook } from 'standardwebhooks';
import { WebhookDispatcher } from '../src/webhooks/webhook-dispatcher';
import { WEBHOOK_RESOLVER } from '../src/webhooks/webhook-sender';
import { fieldError, NOT_FOUND } from './support/contract-bodies';
import { eventually } from './support/eventually';
import { unique, type TestUser } from './support/fixtures';
import { orgScenario } from './support/scenario';
import type { TestApp } from './support/test-app';
import { type ReceivedWebhook, WebhookReceiver } from './support/webhook-receiver';

/** Receivers listen on 127.0.0.1, allowed (and allowed over http) by this configuration only. */
const LOOPBACK_ALLOWED = {
  FLEETHUB_WEBHOOK_HTTP_HOSTS: '127.0.0.1',
  FLEETHUB_WEBHOOK_ALLOW_CIDRS: '127.0.0.1/32',
  FLEETHUB_WEBHOOK_BACKOFF_BASE_MS: '40',
  FLEETHUB_WEBHOOK_BACKOFF_MAX_MS: '160',
  FLEETHUB_WEBHOOK_POLL_MS: '50',
  FLEETHUB_WEBHOOK_TIMEOUT_MS: '3000',
  FLEETHUB_RATE_LIMIT_API_PER_MIN: '0',
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The body and headers a receiver got, verified with the Standard Webhooks reference library. */
function verify(secret: string, request: ReceivedWebhook): unknown {
  return new Webhook(secret).verify(request.body, {
    'webhook-id': String(request.headers['webhook-id']),
    'webhook-timestamp': String(request.headers['webhook-timestamp']),
    'webhook-signature': String(request.headers['webhook-signature']),
  });
}

describe('webhooks', () => {
  let t: TestApp;
  let admin: TestUser;
  let org: string;
  const receivers: WebhookReceiver[] = [];
  const receiver = async () => {
    const r = await new WebhookReceiver().start();
    receivers.push(r);
    return r;
  };

  beforeAll(async () => {
    ({ t, admin, org } = await orgScenario({ env: LOOPBACK_ALLOWED }));
  });
  afterAll(async () => {
    await t.close();
    await Promise.all(receivers.map((r) => r.close()));
  });

  const base = (o = org) => `/api/orgs/${o}/webhooks`;
  const create = (body: object, who = admin, o = org) => t.http().post(base(o)).set(who.auth).send(body);
  async function hook(url: string, body: object = {}): Promise<{ id: string; secret: string }> {
    const res = await create({ url, event_types: ['*'], ...body }).expect(201);
    return { id: res.body.data.id as string, secret: res.body.data.secret as string };
  }
  const attempts = async (id: string) =>
    (await t.http().get(`${base()}/${id}/deliveries?page_size=500`).set(admin.auth).expect(200)).body
      .data as {
      event_id: string;
      event_type: string;
      attempt: number;
      status: string;
      response_status: number | null;
      error: string | null;
      latency_ms: number;
      response_excerpt: string | null;
      delivery_state: string;
    }[];

  describe('subscriptions', () => {
    it('create, list, show, change and delete; the secret is shown once', async () => {
      const res = await create({
        url: 'https://hooks.example.com/a?x=1',
        event_types: ['device.*', 'member.added'],
      }).expect(201);
      const id = res.body.data.id as string;
      expect(res.headers.location).toBe(`/api/orgs/${org}/webhooks/${id}`);
      expect(res.body.data).toEqual({
        id: expect.stringMatching(/^\d+$/),
        url: 'https://hooks.example.com/a?x=1',
        event_types: ['device.*', 'member.added'],
        product: null,
        enabled: true,
        rate_limit_per_second: null,
        disabled_reason: null,
        disabled_at: null,
        previous_secret_expires_at: null,
        inserted_at: expect.stringMatching(/Z$/),
        updated_at: expect.stringMatching(/Z$/),
        secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
      });
      const { secret: _secret, ...view } = res.body.data as Record<string, unknown>;
      expect((await t.http().get(`${base()}/${id}`).set(admin.auth).expect(200)).body).toEqual({
        data: view,
      });
      const list = (await t.http().get(base()).set(admin.auth).expect(200)).body.data as { id: string }[];
      expect(list.map((w) => w.id)).toContain(id);
      expect(JSON.stringify(list)).not.toContain('whsec_');

      const patched = await t
        .http()
        .patch(`${base()}/${id}`)
        .set(admin.auth)
        .send({ enabled: false, event_types: ['*'] })
        .expect(200);
      expect(patched.body.data).toMatchObject({
        enabled: false,
        event_types: ['*'],
        disabled_reason: `disabled by ${admin.user.email}`,
      });
      const enabled = await t
        .http()
        .patch(`${base()}/${id}`)
        .set(admin.auth)
        .send({ enabled: true })
        .expect(200);
      expect(enabled.body.data).toMatchObject({ enabled: true, disabled_reason: null, disabled_at: null });
      const limited = await t
        .http()
        .patch(`${base()}/${id}`)
        .set(admin.auth)
        .send({ rate_limit_per_second: 20 })
        .expect(200);
      expect(limited.body.data).toMatchObject({ rate_limit_per_second: 20, event_types: ['*'] });
      const unlimited = await t
        .http()
        .patch(`${base()}/${id}`)
        .set(admin.auth)
        .send({ rate_limit_per_second: null })
        .expect(200);
      expect(unlimited.body.data).toMatchObject({ rate_limit_per_second: null });

      await t.http().delete(`${base()}/${id}`).set(admin.auth).expect(204);
      await t.http().get(`${base()}/${id}`).set(admin.auth).expect(404, NOT_FOUND);
      await t.http().delete(`${base()}/${id}`).set(admin.auth).expect(404, NOT_FOUND);
      await t.http().get(`${base()}/not-a-number`).set(admin.auth).expect(404, NOT_FOUND);
      await t.http().get(`${base()}/99999999999999999999999`).set(admin.auth).expect(404, NOT_FOUND);
    });

    it('refuses bad input with a 422 naming the field, and changes nothing', async () => {
      const before = (await t.http().get(base()).set(admin.auth)).body.data.length as number;
      const cases: [object, object][] = [
        [{ event_types: ['*'] }, fieldError('url', "can't be blank")],
        [{ url: 'not a url', event_types: ['*'] }, fieldError('url', 'must be an absolute http(s) URL')],
        [
          { url: 'ftp://example.com/', event_types: ['*'] },
          fieldError('url', 'must be an absolute http(s) URL'),
        ],
        [
          { url: 'http://example.com/', event_types: ['*'] },
          fieldError('url', 'must be an https:// URL (http:// only for the hosts the server allows)'),
        ],
        [
          { url: 'https://user:pw@example.com/', event_types: ['*'] },
          fieldError('url', 'must not contain a user name or password'),
        ],
        [{ url: 'https://example.com/' }, fieldError('event_types', "can't be blank")],
        [{ url: 'https://example.com/', event_types: [] }, fieldError('event_types', "can't be empty")],
        [
          { url: 'https://example.com/', event_types: ['device.exploded'] },
          fieldError('event_types', 'unknown event type(s): "device.exploded"'),
        ],
        [
          { url: 'https://example.com/', event_types: 'device.created' },
          fieldError('event_types', 'must be an array of event types'),
        ],
        [
          { url: 'https://example.com/', event_types: ['*'], product: 'nope' },
          fieldError('product', 'does not name a product of this organization'),
        ],
        [
          { url: 'https://example.com/', event_types: ['*'], enabled: 'yes' },
          fieldError('enabled', 'must be true or false'),
        ],
        [
          { url: 'https://example.com/', event_types: ['*'], rate_limit_per_second: 0 },
          fieldError('rate_limit_per_second', 'must be an integer from 1 to 10000'),
        ],
        [
          { url: 'https://example.com/', event_types: ['*'], rate_limit_per_second: '5' },
          fieldError('rate_limit_per_second', 'must be an integer from 1 to 10000'),
        ],
      ];
      for (const [body, error] of cases) await create(body).expect(422, error);
      expect((await t.http().get(base()).set(admin.auth)).body.data).toHaveLength(before);
    });

    it('needs manage to manage and admin to rotate the secret; view reads the catalogue', async () => {
      const [viewer, manager] = [await t.fixtures.user(), await t.fixtures.user()];
      await t.fixtures.addMember(org, viewer, 'view');
      await t.fixtures.addMember(org, manager, 'manage');
      await create({ url: 'https://example.com/', event_types: ['*'] }, viewer).expect(403, NOT_FOUND);
      await t.http().get(base()).set(viewer.auth).expect(403, NOT_FOUND);
      const types = await t.http().get(`${base()}/event_types`).set(viewer.auth).expect(200);
      expect(types.body.data).toContainEqual({
        type: 'device.created',
        version: 1,
        description: expect.any(String),
        subject: 'device:<identifier>',
        schema: 'WebhookEvent_device.created_v1',
      });
      const made = await create({ url: 'https://example.com/m', event_types: ['*'] }, manager).expect(201);
      const id = made.body.data.id as string;
      await t.http().post(`${base()}/${id}/secret`).set(manager.auth).expect(403, NOT_FOUND);
      const rotated = await t.http().post(`${base()}/${id}/secret`).set(admin.auth).expect(200);
      expect(rotated.body.data).toEqual({
        secret: expect.stringMatching(/^whsec_/),
        previous_secret_expires_at: expect.stringMatching(/Z$/),
      });
      const outsider = await t.fixtures.user();
      await t.http().get(`${base()}/${id}`).set(outsider.auth).expect(404, NOT_FOUND);
      await t.http().delete(`${base()}/${id}`).set(admin.auth).expect(204);
    });

    it('documents one schema per event type in OpenAPI', async () => {
      const doc = (await t.http().get('/api/openapi.json').expect(200)).body as {
        components: { schemas: Record<string, unknown> };
      };
      expect(doc.components.schemas['WebhookEventEnvelope']).toBeDefined();
      expect(doc.components.schemas['WebhookEvent_device.created_v1']).toBeDefined();
      expect(doc.components.schemas['WebhookEvent_deployment_group.paused_v1']).toBeDefined();
      // What fleethub POSTs to a webhook: the create operation's callback, its body one of the catalogue's types.
      const paths = (doc as unknown as { paths: Record<string, Record<string, { callbacks?: unknown }>> })
        .paths;
      expect(paths['/api/orgs/{org_name}/webhooks'].post.callbacks).toMatchObject({
        event: {
          '{$request.body#/url}': {
            post: {
              requestBody: {
                content: { 'application/json': { schema: { $ref: '#/components/schemas/WebhookEvent' } } },
              },
            },
          },
        },
      });
    });
  });

  describe('events', () => {
    it('fire once per change, signed, with the envelope; filters by type and product', async () => {
      const all = await receiver();
      const devicesOfP1 = await receiver();
      const p1 = await t.fixtures.product(admin, org, unique('p1-'));
      const everything = await hook(all.url());
      await hook(devicesOfP1.url(), { event_types: ['device.*'], product: p1 });
      const p2 = await t.fixtures.product(admin, org, unique('p2-'));
      const dev = await t.fixtures.device(admin, org, p1, unique('wh-'));
      await t.fixtures.device(admin, org, p2, unique('wh-'));
      // A refused change writes no event.
      await t
        .http()
        .post(`/api/orgs/${org}/products/${p1}/devices`)
        .set(admin.auth)
        .send({ identifier: dev })
        .expect(422);
      await t
        .http()
        .patch(`/api/orgs/${org}/products/${p1}/devices/${dev}`)
        .set(admin.auth)
        .send({ description: 'lab' })
        .expect(200);
      const member = await t.fixtures.user();
      await t
        .http()
        .post(`/api/orgs/${org}/users`)
        .set(admin.auth)
        .send({ email: member.user.email, role: 'view' })
        .expect(201);
      await t
        .http()
        .put(`/api/orgs/${org}/users/${member.user.email}`)
        .set(admin.auth)
        .send({ role: 'manage' })
        .expect(200);
      await t.http().delete(`/api/orgs/${org}/users/${member.user.email}`).set(admin.auth).expect(204);
      const fw = await t.fixtures.firmware(admin, org, p1);
      const groups = `/api/orgs/${org}/products/${p1}/deployments`;
      await t
        .http()
        .post(groups)
        .set(admin.auth)
        .send({ name: 'canary', firmware: fw.uuid, conditions: { version: '', tags: ['none-such'] } })
        .expect(201);
      await t.http().patch(`${groups}/canary`).set(admin.auth).send({ notes: 'first wave' }).expect(200);
      await t.http().patch(`${groups}/canary`).set(admin.auth).send({ state: 'off' }).expect(200);
      await t.http().patch(`${groups}/canary`).set(admin.auth).send({ state: 'on' }).expect(200);
      await t.http().delete(`${groups}/canary`).set(admin.auth).expect(204);
      await t
        .http()
        .post(`/api/orgs/${org}/products/${p1}/devices/${dev}/move`)
        .set(admin.auth)
        .send({ new_org_name: org, new_product_name: p2 })
        .expect(200);
      await t.http().delete(`/api/orgs/${org}/products/${p2}/devices/${dev}`).set(admin.auth).expect(204);
      await t
        .http()
        .delete(`/api/orgs/${org}/products/${p1}/firmwares/${fw.uuid}`)
        .set(admin.auth)
        .expect(204);

      const expected = [
        'product.created',
        'device.created',
        'device.created',
        'device.updated',
        'member.added',
        'member.role_changed',
        'member.removed',
        'firmware.uploaded',
        'deployment_group.created',
        'deployment_group.changed',
        'deployment_group.paused',
        'deployment_group.resumed',
        'deployment_group.deleted',
        'device.moved',
        'device.deleted',
        'firmware.deleted',
      ];
      await eventually(
        () => all.received.length,
        (n) => n >= expected.length,
      );
      await sleep(300); // nothing more comes
      expect(all.received.map((r) => r.json.type).sort()).toEqual([...expected].sort());
      const ids = all.received.map((r) => r.json.id);
      expect(new Set(ids).size).toBe(ids.length);
      for (const request of all.received) {
        expect(verify(everything.secret, request)).toEqual(request.json);
        expect(request.headers['webhook-id']).toBe(request.json.id);
        expect(request.headers['content-type']).toBe('application/json');
        expect(request.json).toEqual({
          id: expect.stringMatching(/^evt_[0-9a-f]{32}$/),
          type: expect.any(String),
          version: 1,
          timestamp: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/),
          org,
          product: request.json.product,
          subject: expect.any(String),
          data: expect.objectContaining({ actor: { type: 'user', email: admin.user.email } }),
        });
        expect([p1, p2, null]).toContain(request.json.product);
      }
      const created = all.ofType('device.created').find((r) => r.json.subject === `device:${dev}`)!;
      expect(created.json).toMatchObject({ product: p1, data: { identifier: dev, product: p1, via: 'api' } });
      expect(all.ofType('device.moved')[0].json).toMatchObject({
        product: p2,
        subject: `device:${dev}`,
        data: { from: { org, product: p1 }, to: { org, product: p2 } },
      });
      expect(all.ofType('deployment_group.paused')[0].json).toMatchObject({
        product: p1,
        subject: `deployment_group:${p1}/canary`,
        data: { name: 'canary', by: 'user', reason: `turned off by ${admin.user.email}` },
      });
      expect(all.ofType('member.role_changed')[0].json.data).toMatchObject({
        email: member.user.email,
        role: 'manage',
        previous_role: 'view',
      });
      expect(all.ofType('firmware.uploaded')[0].json.data).toMatchObject({ uuid: fw.uuid, version: '1.0.0' });

      // The product-filtered, device-only webhook: the devices of p1 (the move names p2: not it).
      await eventually(
        () => devicesOfP1.received.length,
        (n) => n >= 2,
      );
      await sleep(200);
      expect(devicesOfP1.received.map((r) => [r.json.type, r.json.subject])).toEqual([
        ['device.created', `device:${dev}`],
        ['device.updated', `device:${dev}`],
      ]);
    });

    it('a receiver answering 500 three times, then 200, gets the event exactly once more', async () => {
      const flaky = await receiver();
      let failures = 0;
      flaky.answer = () => (failures++ < 3 ? { status: 500, body: 'boom' } : { status: 200, body: 'ok' });
      const product = await t.fixtures.product(admin, org, unique('retry-'));
      const { id } = await hook(flaky.url(), { event_types: ['device.created'], product });
      const dev = await t.fixtures.device(admin, org, product, unique('retry-'));
      await eventually(
        () => flaky.received.length,
        (n) => n >= 4,
      );
      await sleep(500);
      expect(flaky.received).toHaveLength(4);
      const eventId = flaky.received[0].json.id;
      expect(flaky.attemptsOf(eventId)).toHaveLength(4);
      expect(flaky.received[0].json.subject).toBe(`device:${dev}`);
      // Each attempt is signed afresh with the same stable id.
      const log = await eventually(
        () => attempts(id),
        (rows) => rows.length === 4,
      );
      expect(log.map((a) => [a.attempt, a.status, a.response_status])).toEqual([
        [4, 'succeeded', 200],
        [3, 'failed', 500],
        [2, 'failed', 500],
        [1, 'failed', 500],
      ]);
      expect(log[1]).toMatchObject({
        event_id: eventId,
        event_type: 'device.created',
        error: null,
        response_excerpt: 'boom',
        delivery_state: 'delivered',
      });
      expect(log.every((a) => a.latency_ms >= 0)).toBe(true);
    });

    it("delivers one device's events in order under concurrency, failures and retries included", async () => {
      const slow = await receiver();
      let n = 0;
      // Answers come late and out of order; every third request fails once.
      slow.answer = () => {
        n += 1;
        return { status: n % 3 === 0 ? 503 : 200, delayMs: (n * 7) % 25 };
      };
      const product = await t.fixtures.product(admin, org, unique('order-'));
      await hook(slow.url(), { event_types: ['device.updated'], product });
      const devices = await Promise.all(
        Array.from({ length: 6 }, () => t.fixtures.device(admin, org, product, unique('ord-'))),
      );
      const UPDATES = 8;
      await Promise.all(
        devices.map(async (dev) => {
          for (let i = 0; i < UPDATES; i++)
            await t
              .http()
              .patch(`/api/orgs/${org}/products/${product}/devices/${dev}`)
              .set(admin.auth)
              .send({ description: String(i) })
              .expect(200);
        }),
      );
      const delivered = () => slow.received.filter((_, i) => (i + 1) % 3 !== 0);
      await eventually(
        () => delivered().length,
        (count) => count >= devices.length * UPDATES,
        20_000,
      );
      for (const dev of devices) {
        const sequence = delivered()
          .filter((r) => r.json.subject === `device:${dev}`)
          .map((r) => (r.json.data.changes as { description: string }).description);
        expect(sequence).toEqual(Array.from({ length: UPDATES }, (_, i) => String(i)));
      }
    });

    it('an endpoint that never answers holds only its own slots: the others are not delayed', async () => {
      const silent = await receiver();
      const fast = await receiver();
      silent.answer = () => ({ status: 200, delayMs: 10_000 }); // past the 3 s timeout: never answered
      const product = await t.fixtures.product(admin, org, unique('slow-'));
      const { id } = await hook(silent.url(), { event_types: ['device.created'], product });
      await hook(fast.url(), { event_types: ['device.created'], product });
      const started = Date.now();
      await Promise.all(
        Array.from({ length: 10 }, () => t.fixtures.device(admin, org, product, unique('sl-'))),
      );
      await eventually(
        () => fast.received.length,
        (n) => n >= 10,
      );
      // All ten reached the fast endpoint before the first attempt on the silent one timed out, and the silent one
      // had at most its 4 attempts in flight.
      expect(Date.now() - started).toBeLessThan(3000);
      expect(silent.received.length).toBeLessThanOrEqual(4);
      await t.http().patch(`${base()}/${id}`).set(admin.auth).send({ enabled: false }).expect(200);
    });

    it('during a secret rotation, both secrets sign', async () => {
      const r = await receiver();
      const product = await t.fixtures.product(admin, org, unique('rot-'));
      const { id, secret: old } = await hook(r.url(), { event_types: ['device.created'], product });
      // One delivery signed before the rotation: the dispatcher keeps a secret it has decrypted, and the rotation
      // must still reach the next delivery.
      await t.fixtures.device(admin, org, product, unique('rot-'));
      await eventually(
        () => r.received.length,
        (count) => count >= 1,
      );
      expect(String(r.received[0].headers['webhook-signature']).split(' ')).toHaveLength(1);
      expect(verify(old, r.received[0])).toEqual(r.received[0].json);
      const rotated = await t.http().post(`${base()}/${id}/secret`).set(admin.auth).expect(200);
      const fresh = rotated.body.data.secret as string;
      await t.fixtures.device(admin, org, product, unique('rot-'));
      await eventually(
        () => r.received.length,
        (count) => count >= 2,
      );
      const request = r.received[1];
      expect(String(request.headers['webhook-signature']).split(' ')).toHaveLength(2);
      expect(verify(fresh, request)).toEqual(request.json);
      expect(verify(old, request)).toEqual(request.json);
      expect(() => verify('whsec_' + Buffer.alloc(32, 1).toString('base64'), request)).toThrow();
    });

    it('sends a test event, redelivers one event with its id, and sends nothing to a disabled webhook', async () => {
      const r = await receiver();
      const product = await t.fixtures.product(admin, org, unique('ops-'));
      const { id, secret } = await hook(r.url(), { event_types: ['device.*'], product });
      const test = await t.http().post(`${base()}/${id}/test`).set(admin.auth).expect(202);
      expect(test.body.data).toEqual({
        event_id: expect.stringMatching(/^evt_/),
        type: 'webhook.test',
        timestamp: expect.stringMatching(/Z$/),
      });
      await eventually(
        () => r.received.length,
        (count) => count >= 1,
      );
      expect(r.received[0].json).toMatchObject({ type: 'webhook.test', data: { webhook_id: id } });
      expect(verify(secret, r.received[0])).toBeTruthy();

      const dev = await t.fixtures.device(admin, org, product, unique('ops-'));
      await eventually(
        () => r.ofType('device.created').length,
        (count) => count >= 1,
      );
      const eventId = r.ofType('device.created')[0].json.id;
      const deliveredTimes = async (times: number) =>
        eventually(
          () => attempts(id),
          (rows) =>
            rows.filter((a) => a.event_id === eventId && a.status === 'succeeded').length >= times &&
            rows.every((a) => a.event_id !== eventId || a.delivery_state === 'delivered'),
        );
      await deliveredTimes(1);
      await t
        .http()
        .post(`${base()}/${id}/redeliver`)
        .set(admin.auth)
        .send({ event_id: eventId })
        .expect(202, { data: { queued: 1 } });
      await eventually(
        () => r.attemptsOf(eventId).length,
        (count) => count >= 2,
      );
      expect(r.attemptsOf(eventId)[1].json).toEqual(r.attemptsOf(eventId)[0].json);
      await deliveredTimes(2);
      await t
        .http()
        .post(`${base()}/${id}/redeliver`)
        .set(admin.auth)
        .send({ event_id: 'evt_00000000000000000000000000000000' })
        .expect(404, NOT_FOUND);
      await t
        .http()
        .post(`${base()}/${id}/redeliver`)
        .set(admin.auth)
        .send({})
        .expect(422, fieldError('event_id', "can't be blank (or give from and to)"));
      await t
        .http()
        .post(`${base()}/${id}/redeliver`)
        .set(admin.auth)
        .send({ from: 'yesterday', to: '2026-01-01T00:00:00Z' })
        .expect(422, fieldError('from', 'must be an ISO 8601 timestamp, e.g. 2026-11-22T03:04:05Z'));
      const range = await t
        .http()
        .post(`${base()}/${id}/redeliver`)
        .set(admin.auth)
        .send({
          from: new Date(Date.now() - 60_000).toISOString(),
          to: new Date(Date.now() + 60_000).toISOString(),
        })
        .expect(202);
      expect(range.body.data.queued).toBe(1); // the device event; test events are not in ranges
      await eventually(
        () => r.attemptsOf(eventId).length,
        (count) => count >= 3,
      );

      await t.http().patch(`${base()}/${id}`).set(admin.auth).send({ enabled: false }).expect(200);
      const before = r.received.length;
      await t
        .http()
        .patch(`/api/orgs/${org}/products/${product}/devices/${dev}`)
        .set(admin.auth)
        .send({ description: 'while disabled' })
        .expect(200);
      await sleep(400);
      expect(r.received).toHaveLength(before);
      await t
        .http()
        .get(`${base()}/${id}/deliveries?foo=1`)
        .set(admin.auth)
        .expect(422, fieldError('foo', 'is not a known parameter'));
    });

    it('keeps events for the retention period only', async () => {
      const r = await receiver();
      const product = await t.fixtures.product(admin, org, unique('ret-'));
      const { id } = await hook(r.url(), { event_types: ['device.created'], product });
      await t.fixtures.device(admin, org, product, unique('ret-'));
      await eventually(
        () => r.received.length,
        (count) => count >= 1,
      );
      await t.db.query(
        `UPDATE webhook_events SET occurred_at = now() - interval '8 days'
          WHERE id IN (SELECT event_seq FROM webhook_deliveries WHERE webhook_id = $1)`,
        [id],
      );
      expect(await t.app.get(WebhookDispatcher).enforceRetention()).toBeGreaterThanOrEqual(1);
      expect(await attempts(id)).toEqual([]);
    });

    it('counts attempts in the metrics', async () => {
      const text = (await t.http().get('/metrics').expect(200)).text;
      expect(text).toMatch(/^fleethub_webhook_attempts_total\{result="succeeded"\} \d+/m);
      expect(text).toMatch(/^fleethub_webhook_attempts_total\{result="failed"\} \d+/m);
      expect(text).toMatch(/^fleethub_webhook_pending_deliveries \d+/m);
    });
  });
});

describe('webhook address safety (no loopback allowed, a test resolver)', () => {
  let t: TestApp;
  let admin: TestUser;
  let org: string;
  const resolved: string[] = [];
  const table: Record<string, LookupAddress[]> = {
    'loopback.test': [{ address: '127.0.0.1', family: 4 }],
    'v6loop.test': [{ address: '::1', family: 6 }],
    'metadata.test': [{ address: '169.254.169.254', family: 4 }],
    'private.test': [{ address: '10.20.30.40', family: 4 }],
  };
  const resolver = {
    resolve: (name: string) => {
      resolved.push(name);
      return Promise.resolve(table[name] ?? []);
    },
  };

  beforeAll(async () => {
    ({ t, admin, org } = await orgScenario({
      env: {
        FLEETHUB_WEBHOOK_BACKOFF_BASE_MS: '20',
        FLEETHUB_WEBHOOK_BACKOFF_MAX_MS: '40',
        FLEETHUB_WEBHOOK_POLL_MS: '50',
        FLEETHUB_WEBHOOK_DISABLE_AFTER_FAILURES: '3',
        FLEETHUB_WEBHOOK_DISABLE_AFTER_HOURS: '0',
      },
      app: { overrides: [{ provide: WEBHOOK_RESOLVER, useValue: resolver }] },
    }));
  });
  afterAll(() => t.close());

  const url = () => `/api/orgs/${org}/webhooks`;

  it.each([
    ['https://127.0.0.1/hook', '127.0.0.1 is loopback'],
    ['https://[::1]/hook', '::1 is loopback'],
    ['https://169.254.169.254/latest/meta-data', '169.254.169.254 is link-local (cloud metadata)'],
    ['https://10.0.0.1/hook', '10.0.0.1 is private'],
    ['https://[::ffff:10.1.1.1]/hook', '::ffff:a01:101 is private'],
  ])('refuses the literal address of %s', async (target, why) => {
    await t
      .http()
      .post(url())
      .set(admin.auth)
      .send({ url: target, event_types: ['*'] })
      .expect(422, fieldError('url', `must not point to an internal address (${why})`));
  });

  it('refuses http:// without an allowed host', async () => {
    await t
      .http()
      .post(url())
      .set(admin.auth)
      .send({ url: 'http://127.0.0.1:9/hook', event_types: ['*'] })
      .expect(
        422,
        fieldError('url', 'must be an https:// URL (http:// only for the hosts the server allows)'),
      );
  });

  it.each([
    ['loopback.test', '127.0.0.1 is loopback'],
    ['v6loop.test', '::1 is loopback'],
    ['metadata.test', '169.254.169.254 is link-local (cloud metadata)'],
    ['private.test', '10.20.30.40 is private'],
  ])('refuses %s, a name resolving to an internal address, at connect time', async (name, why) => {
    const created = await t
      .http()
      .post(url())
      .set(admin.auth)
      .send({ url: `https://${name}/hook`, event_types: ['*'] })
      .expect(201);
    const id = created.body.data.id as string;
    await t.http().post(`${url()}/${id}/test`).set(admin.auth).expect(202);
    const log = await eventually(
      async () =>
        (await t.http().get(`${url()}/${id}/deliveries`).set(admin.auth)).body.data as {
          response_status: number | null;
          error: string | null;
        }[],
      (rows) => rows.length >= 1,
    );
    expect(log[0]).toMatchObject({ response_status: null, error: `address refused: ${name}: ${why}` });
    expect(resolved).toContain(name);
  });

  it('disables an endpoint that keeps failing, says why, and enables it again on request', async () => {
    const created = await t
      .http()
      .post(url())
      .set(admin.auth)
      .send({ url: 'https://metadata.test/x', event_types: ['*'] })
      .expect(201);
    const id = created.body.data.id as string;
    await t.http().post(`${url()}/${id}/test`).set(admin.auth).expect(202);
    const shown = await eventually(
      async () => (await t.http().get(`${url()}/${id}`).set(admin.auth)).body.data as Record<string, unknown>,
      (data) => data.enabled === false,
    );
    expect(shown).toMatchObject({
      enabled: false,
      disabled_at: expect.stringMatching(/Z$/),
      disabled_reason: expect.stringMatching(
        /^disabled by fleethub: 3 failed attempts in a row since \S+Z; the last: address refused: metadata\.test/,
      ),
    });
    // Events of the organization are no longer queued for it.
    await t.fixtures.product(admin, org, unique('after-'));
    const [{ count }] = await t.db.query(
      `SELECT count(*)::int AS count FROM webhook_deliveries WHERE webhook_id = $1`,
      [id],
    );
    expect(count).toBe(1);
    const again = await t.http().patch(`${url()}/${id}`).set(admin.auth).send({ enabled: true }).expect(200);
    expect(again.body.data).toMatchObject({ enabled: true, disabled_reason: null });
  });
});
