import { CaCertificatesRepository } from '../src/certificates/ca-certificates.repository';
import { CertificateExpiryScanner } from '../src/certificates/certificate-expiry.scanner';
import { DeviceCertificatesRepository } from '../src/certificates/device-certificates.repository';
import { Transactions } from '../src/database/transactions';
import { BULK_WINDOW } from '../src/devices/device-bulk.service';
import { DeviceReportsService } from '../src/telemetry/device-reports.service';
import { WebhookOutbox } from '../src/webhooks/webhook-outbox';
import { ca, days, type Issued, leaf, verificationCert } from './support/cert-builder';
import { eventually } from './support/eventually';
import { unique, type TestUser } from './support/fixtures';
import { orgScenario } from './support/scenario';
import type { TestApp } from './support/test-app';
import { generateTngCertificates, tngEntry } from './support/trust-and-go-manifest';
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
/** Bulk windows of 3 devices: a bulk over a few devices crosses windows. */
const WINDOW = 3;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const subjects = (requests: ReceivedWebhook[]) => requests.map((r) => r.json.subject).sort();

describe('webhook events of the fleet: bulk changes, imports, health alarms, certificate expiry', () => {
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
    ({ t, admin, org } = await orgScenario({
      env: { ...LOOPBACK_ALLOWED, FLEETHUB_WEBHOOK_RATE_PER_SEC: '0' },
      app: { overrides: [{ provide: BULK_WINDOW, useValue: WINDOW }] },
    }));
  });
  afterAll(async () => {
    await t.close();
    await Promise.all(receivers.map((r) => r.close()));
  });

  async function hook(url: string, body: object, o = org): Promise<string> {
    const res = await t
      .http()
      .post(`/api/orgs/${o}/webhooks`)
      .set(admin.auth)
      .send({ url, ...body })
      .expect(201);
    return res.body.data.id as string;
  }
  const bulk = (product: string, body: object, o = org) =>
    t.http().post(`/api/orgs/${o}/products/${product}/devices/bulk`).set(admin.auth).send(body).expect(200);
  async function devices(product: string, n: number, prefix: string): Promise<string[]> {
    const made: string[] = [];
    for (let i = 0; i < n; i++) made.push(await t.fixtures.device(admin, org, product, unique(prefix)));
    return made;
  }
  /** Waits for `n` requests, then a little more to see that nothing else comes. */
  async function settled(r: WebhookReceiver, n: number, extraMs = 300): Promise<ReceivedWebhook[]> {
    await eventually(
      () => r.received.length,
      (count) => count >= n,
      15_000,
    );
    await sleep(extraMs);
    return r.received;
  }
  const eventsOfOrg = async (o: string) =>
    Number(
      (
        await t.db.query(
          `SELECT count(*) AS n FROM webhook_events e JOIN orgs o ON o.id = e.org_id WHERE o.name = $1`,
          [o],
        )
      )[0].n,
    );

  describe('bulk changes: one event per device changed', () => {
    it('tags over a filter (several windows): device.updated per device with its tags; others not', async () => {
      const product = await t.fixtures.product(admin, org, unique('bulk-'));
      const wants = await receiver();
      const other = await receiver();
      await hook(wants.url(), { event_types: ['device.updated'], product });
      await hook(other.url(), { event_types: ['device.deleted', 'firmware.*'] });
      const all = await devices(product, 7, 'bt-');
      // One device already has the tag: it is not changed, so it gets no event.
      await t
        .http()
        .patch(`/api/orgs/${org}/products/${product}/devices/${all[0]}`)
        .set(admin.auth)
        .send({ tags: ['beta'] })
        .expect(200);
      const res = await bulk(product, { action: 'add_tags', filters: {}, tags: 'beta, wave-1' });
      expect(res.body.data).toEqual({ action: 'add_tags', matched: 7, changed: 7 });
      const got = await settled(wants, 1 + 7);
      expect(got).toHaveLength(8);
      const bulkEvents = got.slice(1);
      expect(subjects(bulkEvents)).toEqual(all.map((d) => `device:${d}`).sort());
      expect(new Set(got.map((r) => r.json.id)).size).toBe(8);
      const first = bulkEvents.find((r) => r.json.subject === `device:${all[0]}`)!;
      expect(first.json).toMatchObject({
        type: 'device.updated',
        org,
        product,
        data: {
          identifier: all[0],
          product,
          changes: { tags: ['beta', 'wave-1'] },
          actor: { type: 'user', email: admin.user.email },
        },
      });
      const second = bulkEvents.find((r) => r.json.subject === `device:${all[1]}`)!;
      expect(second.json.data.changes).toEqual({ tags: ['beta', 'wave-1'] });

      // Removing a tag only some devices carry: events for those only.
      await bulk(product, { action: 'remove_tags', identifiers: [all[0], all[1]], tags: 'wave-1' });
      const removed = (await settled(wants, 10)).slice(8);
      expect(removed.map((r) => [r.json.subject, r.json.data.changes])).toEqual(
        expect.arrayContaining([
          [`device:${all[0]}`, { tags: ['beta'] }],
          [`device:${all[1]}`, { tags: ['beta'] }],
        ]),
      );
      expect(removed).toHaveLength(2);
      expect(other.received).toHaveLength(0);
    });

    it('updates off and on, the penalty box, an upgrade and a move: the one-device events, per device', async () => {
      const product = await t.fixtures.product(admin, org, unique('acts-'));
      const target = await t.fixtures.product(admin, org, unique('dest-'));
      const r = await receiver();
      await hook(r.url(), {
        event_types: ['device.updated', 'device.penalty_box_cleared', 'update.requested', 'device.moved'],
      });
      const all = await devices(product, 4, 'ba-');
      const fw = await t.fixtures.firmware(admin, org, product);

      await bulk(product, { action: 'disable_updates', filters: {} });
      let got = await settled(r, 4);
      expect(got.map((x) => [x.json.type, x.json.data.changes])).toEqual(
        Array(4).fill(['device.updated', { updates_enabled: false }]),
      );
      // Automatic updates off is part of the penalty box that clearing ends: every device changes.
      await bulk(product, { action: 'clear_penalty_box', identifiers: all.slice(0, 2) });
      got = await settled(r, 6);
      expect(
        got
          .slice(4)
          .map((x) => [x.json.type, x.json.subject])
          .sort(),
      ).toEqual(
        all
          .slice(0, 2)
          .map((d) => ['device.penalty_box_cleared', `device:${d}`])
          .sort(),
      );
      await bulk(product, { action: 'upgrade', filters: {}, uuid: fw.uuid });
      got = await settled(r, 10);
      expect(got.slice(6).map((x) => x.json.type)).toEqual(Array(4).fill('update.requested'));
      expect(got[6].json.data).toMatchObject({ product, firmware_uuid: fw.uuid });

      await bulk(product, {
        action: 'move',
        filters: {},
        new_org_name: org,
        new_product_name: target,
      });
      got = await settled(r, 14);
      const moved = got.slice(10);
      expect(subjects(moved)).toEqual(all.map((d) => `device:${d}`).sort());
      for (const m of moved)
        expect(m.json).toMatchObject({
          type: 'device.moved',
          product: target,
          data: {
            product: target,
            from: { org, product },
            to: { org, product: target },
          },
        });
      expect(got).toHaveLength(14);
    });

    it('writes nothing, and runs no outbox statement per window, when no webhook wants the events', async () => {
      const lonelyOrg = await t.fixtures.org(admin);
      const product = await t.fixtures.product(admin, lonelyOrg, unique('quiet-'));
      for (let i = 0; i < 5; i++) await t.fixtures.device(admin, lonelyOrg, product, unique('q-'));
      // A webhook that wants other types only.
      await hook((await receiver()).url(), { event_types: ['firmware.uploaded'] }, lonelyOrg);
      const outbox = t.app.get(WebhookOutbox);
      const emitSelected = jest.spyOn(outbox, 'emitSelected');
      try {
        await bulk(product, { action: 'add_tags', filters: {}, tags: 'quiet' }, lonelyOrg);
        await bulk(product, { action: 'disable_updates', filters: {} }, lonelyOrg);
        expect(emitSelected).not.toHaveBeenCalled();
      } finally {
        emitSelected.mockRestore();
      }
      expect(await eventsOfOrg(lonelyOrg)).toBe(0);
    });
  });

  it('an import: device.created (via import) and certificate.registered for each device it creates, not for those it leaves', async () => {
    const product = await t.fixtures.product(admin, org, unique('imp-'));
    const r = await receiver();
    await hook(r.url(), { event_types: ['device.created', 'certificate.registered'], product });
    const certs = await generateTngCertificates(5, 40_000_000 + Math.floor(Math.random() * 1_000_000));
    const send = (entries: typeof certs) =>
      t
        .http()
        .post(`/api/orgs/${org}/products/${product}/devices/import`)
        .set(admin.auth)
        .send(entries.map((c) => tngEntry(c.identifier, c.der)))
        .expect(201);
    const waitJob = async (location: string) =>
      eventually(
        async () =>
          (await t.http().get(location).set(admin.auth).expect(200)).body.data as { status: string },
        (job) => job.status === 'done',
        20_000,
        100,
      );
    await waitJob((await send(certs.slice(0, 3))).headers.location);
    // Sent again with two more: only the two new devices are created.
    await waitJob((await send(certs)).headers.location);
    const got = await settled(r, 10);
    expect(got).toHaveLength(10);
    const actor = { type: 'user', email: admin.user.email };
    // Each device once, its creation before its certificate (in order per subject).
    for (const { identifier } of certs) {
      const own = got.filter((g) => g.json.subject === `device:${identifier}`).map((g) => g.json);
      expect(own).toEqual([
        expect.objectContaining({
          type: 'device.created',
          product,
          data: { identifier, product, via: 'import', actor },
        }),
        expect.objectContaining({
          type: 'certificate.registered',
          product,
          data: {
            kind: 'device',
            identifier,
            serial: expect.stringMatching(/^[0-9]+$/),
            fingerprint: expect.stringMatching(/^[0-9A-F:]+$|^[0-9a-f]+$/),
            actor,
          },
        }),
      ]);
    }
  });

  it('health alarms: raised and cleared once per alarm, on transitions only', async () => {
    const product = await t.fixtures.product(admin, org, unique('health-'));
    const r = await receiver();
    await hook(r.url(), { event_types: ['health.*'], product });
    const identifier = await t.fixtures.device(admin, org, product, unique('h-'));
    const [{ id: deviceId, org_id: orgId }] = await t.db.query(
      `SELECT id::text, org_id::text FROM devices WHERE identifier = $1`,
      [identifier],
    );
    const reports = t.app.get(DeviceReportsService);
    const report = async (alarms: unknown) => {
      reports.healthReport(
        { deviceId, identifier, orgId },
        { value: { alarms, metrics: { cpu_usage_percent: 10 } } },
      );
      await reports.flush();
    };
    await report({});
    await report({ disk_full: 'Disk /data at 97%' });
    await report({ disk_full: 'Disk /data at 98%' }); // the same alarm: no transition
    await report({ disk_full: 'Disk /data at 98%', 'Elixir.VintageNet.Down': null });
    await report({ 'Elixir.VintageNet.Down': null });
    await report({});
    await report({});
    const got = await settled(r, 4);
    expect(got.map((x) => [x.json.type, x.json.data.alarm, x.json.data.active_alarms])).toEqual([
      ['health.alarm_raised', 'disk_full', 1],
      ['health.alarm_raised', 'Elixir.VintageNet.Down', 2],
      ['health.alarm_cleared', 'disk_full', 1],
      ['health.alarm_cleared', 'Elixir.VintageNet.Down', 0],
    ]);
    expect(got[0].json).toMatchObject({
      org,
      product,
      subject: `device:${identifier}`,
      data: {
        identifier,
        product,
        description: 'Disk /data at 97%',
        actor: { type: 'system' },
      },
    });
    expect(got[1].json.data.description).toBeNull();
  });

  describe('certificate.expiring', () => {
    async function registerCa(authority: Issued): Promise<void> {
      const token = (
        await t.http().get(`/api/orgs/${org}/ca_certificates/verification_token`).set(admin.auth).expect(200)
      ).body.data.verification_token as string;
      const proof = await verificationCert(authority, token);
      await t
        .http()
        .post(`/api/orgs/${org}/ca_certificates`)
        .set(admin.auth)
        .send({ cert: authority.b64, verification_cert: proof.b64, description: 'factory line 3' })
        .expect(201);
    }

    it('is sent once per certificate expiring within the threshold, by scans run twice and concurrently', async () => {
      const product = await t.fixtures.product(admin, org, unique('certs-'));
      const r = await receiver();
      await hook(r.url(), { event_types: ['certificate.expiring'] });
      const soonCa = await ca({ cn: 'Soon CA', notAfter: days(20) });
      const laterCa = await ca({ cn: 'Later CA', notAfter: days(400) });
      await registerCa(soonCa);
      await registerCa(laterCa);
      const soon = await t.fixtures.device(admin, org, product, unique('cs-'));
      const later = await t.fixtures.device(admin, org, product, unique('cl-'));
      const addCert = async (identifier: string, notAfter: Date) => {
        const cert = await leaf(laterCa, { cn: identifier, notAfter });
        await t
          .http()
          .post(`/api/orgs/${org}/products/${product}/devices/${identifier}/certificates`)
          .set(admin.auth)
          .send({ cert: cert.b64 })
          .expect(201);
        return cert;
      };
      const soonCert = await addCert(soon, days(10));
      await addCert(later, days(90));

      // Two scanners (two instances' worth) at once, each twice, then once more.
      const scanner = t.app.get(CertificateExpiryScanner);
      const second = new CertificateExpiryScanner(
        t.app.get(DeviceCertificatesRepository),
        t.app.get(CaCertificatesRepository),
        t.app.get(Transactions),
        t.app.get(WebhookOutbox),
        t.config,
      );
      const counts = await Promise.all([scanner.scan(), second.scan(), second.scan(), scanner.scan()]);
      expect(counts.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(2);
      expect(await scanner.scan()).toBe(0);
      const got = await settled(r, 2, 500);
      expect(got).toHaveLength(2);
      const device = got.find((x) => x.json.data.kind === 'device')!;
      expect(device.json).toMatchObject({
        type: 'certificate.expiring',
        org,
        product,
        subject: `device:${soon}`,
        data: {
          kind: 'device',
          identifier: soon,
          product,
          serial: soonCert.serial,
          not_after: soonCert.cert.notAfter.toISOString(),
          days_left: 9,
          actor: { type: 'system' },
        },
      });
      expect(device.json.data.fingerprint).toMatch(/^[0-9a-f]{64}$/);
      const authority = got.find((x) => x.json.data.kind === 'ca')!;
      expect(authority.json).toMatchObject({
        product: null,
        subject: `ca_certificate:${soonCa.serial}`,
        data: { kind: 'ca', identifier: null, serial: soonCa.serial, description: 'factory line 3' },
      });
      expect([19, 20]).toContain(authority.json.data.days_left);
    });
  });
});

describe('webhook rate limit per endpoint', () => {
  /** The busy endpoint's own limit; the server's default (FLEETHUB_WEBHOOK_RATE_PER_SEC) is 2, the quiet one's 1000. */
  const RATE = 5;
  let t: TestApp;
  let admin: TestUser;
  let org: string;
  const receivers: WebhookReceiver[] = [];

  beforeAll(async () => {
    ({ t, admin, org } = await orgScenario({
      env: { ...LOOPBACK_ALLOWED, FLEETHUB_WEBHOOK_RATE_PER_SEC: '2' },
    }));
  });
  afterAll(async () => {
    await t.close();
    await Promise.all(receivers.map((r) => r.close()));
  });

  it("holds one endpoint to its rate while another endpoint's events go at once", async () => {
    const [busy, quiet, defaulted] = [new WebhookReceiver(), new WebhookReceiver(), new WebhookReceiver()];
    receivers.push(busy, quiet, defaulted);
    await Promise.all([busy.start(), quiet.start(), defaulted.start()]);
    const [loud, calm] = [unique('loud-'), unique('calm-')];
    await t.fixtures.product(admin, org, loud);
    await t.fixtures.product(admin, org, calm);
    const calmDevices: string[] = [];
    for (let i = 0; i < 3; i++) calmDevices.push(await t.fixtures.device(admin, org, calm, unique('c-')));
    const N = 25;
    for (let i = 0; i < N; i++) await t.fixtures.device(admin, org, loud, unique('l-'));
    for (const [r, product, rate] of [
      [busy, loud, RATE],
      [quiet, calm, 1000],
      [defaulted, calm, null],
    ] as const)
      await t
        .http()
        .post(`/api/orgs/${org}/webhooks`)
        .set(admin.auth)
        .send({ url: r.url(), event_types: ['device.updated'], product, rate_limit_per_second: rate })
        .expect(201);

    const started = Date.now();
    await t
      .http()
      .post(`/api/orgs/${org}/products/${loud}/devices/bulk`)
      .set(admin.auth)
      .send({ action: 'add_tags', filters: {}, tags: 'x' })
      .expect(200);
    await sleep(300);
    // The busy endpoint is throttled now; the quiet one's events are not held behind its backlog.
    const quietStart = Date.now();
    await t
      .http()
      .post(`/api/orgs/${org}/products/${calm}/devices/bulk`)
      .set(admin.auth)
      .send({ action: 'add_tags', identifiers: calmDevices, tags: 'y' })
      .expect(200);
    await eventually(
      () => quiet.received.length,
      (n) => n >= 3,
      5000,
    );
    const quietDone = Math.max(...quiet.received.map((r) => r.at)) - quietStart;
    expect(quietDone).toBeLessThan(1000);
    expect(busy.received.length).toBeLessThan(N);
    // Without a limit of its own, the server's 2 per second: two at once, the third half a second later.
    await eventually(
      () => defaulted.received.length,
      (n) => n >= 3,
      5000,
    );
    const defaultedTimes = defaulted.received.map((r) => r.at).sort((a, b) => a - b);
    expect(defaultedTimes[2] - defaultedTimes[0]).toBeGreaterThanOrEqual(400);

    await eventually(
      () => busy.received.length,
      (n) => n >= N,
      20_000,
    );
    const times = busy.received.map((r) => r.at).sort((a, b) => a - b);
    // A burst of one second's worth, then RATE per second: N deliveries take at least (N - RATE) / RATE s.
    expect(times[N - 1] - started).toBeGreaterThanOrEqual(((N - RATE) / RATE) * 1000 - 300);
    for (let i = 0; i < times.length; i++) {
      const inOneSecond = times.filter((at) => at >= times[i] && at < times[i] + 1000).length;
      expect(inOneSecond).toBeLessThanOrEqual(2 * RATE);
    }
    expect(new Set(busy.received.map((r) => r.json.id)).size).toBe(N);
  });
});
