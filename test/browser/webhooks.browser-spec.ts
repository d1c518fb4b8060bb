import type { Browser } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { launchChromium, screenshot } from '../support/chromium';
import { PASSWORD, seriousViolations, signIn, watchedPage } from '../support/console-browser';
import { eventually } from '../support/eventually';
import type { TestUser } from '../support/fixtures';
import { listenOnLoopback } from '../support/listening-app';
import { createTestApp, type TestApp } from '../support/test-app';
import { type ReceivedWebhook, WebhookReceiver } from '../support/webhook-receiver';

const VIEWPORT = { width: 1280, height: 900 };

/** The receiver listens on 127.0.0.1, allowed (and allowed over http) by this configuration only. */
const LOOPBACK_ALLOWED = {
  FLEETHUB_WEBHOOK_HTTP_HOSTS: '127.0.0.1',
  FLEETHUB_WEBHOOK_ALLOW_CIDRS: '127.0.0.1/32',
  FLEETHUB_WEBHOOK_POLL_MS: '50',
  FLEETHUB_WEBHOOK_TIMEOUT_MS: '3000',
  FLEETHUB_WEBHOOK_BACKOFF_BASE_MS: '40',
  FLEETHUB_WEBHOOK_BACKOFF_MAX_MS: '160',
  FLEETHUB_WEBHOOK_DISABLE_AFTER_FAILURES: '3',
  FLEETHUB_WEBHOOK_DISABLE_AFTER_HOURS: '0',
  FLEETHUB_RATE_LIMIT_API_PER_MIN: '0',
};

/** What the receiver got, verified with the Standard Webhooks reference library and the secret the page showed. */
function verify(secret: string, request: ReceivedWebhook): unknown {
  return new Webhook(secret).verify(request.body, {
    'webhook-id': String(request.headers['webhook-id']),
    'webhook-timestamp': String(request.headers['webhook-timestamp']),
    'webhook-signature': String(request.headers['webhook-signature']),
  });
}

describe('the console: webhooks in Chromium', () => {
  let t: TestApp;
  let url: string;
  let browser: Browser;
  let admin: TestUser;
  let viewer: TestUser;
  let org: string;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    t = await createTestApp(LOOPBACK_ALLOWED);
    ({ url } = await listenOnLoopback(t));
    admin = await t.fixtures.user({ name: 'Ada Admin', password: PASSWORD });
    viewer = await t.fixtures.user({ name: 'Vic Viewer', password: PASSWORD });
    org = await t.fixtures.org(admin, 'webhook-pages');
    await t.fixtures.addMember(org, viewer, 'view');
    await t.fixtures.product(admin, org, 'gateway');
    receiver = await new WebhookReceiver().start();
    receiver.answer = () => ({ status: 200, body: 'thanks' });
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await receiver?.close();
    await t?.close();
  });

  const webhooks = async () =>
    (await t.http().get(`/api/orgs/${org}/webhooks`).set(admin.auth).expect(200)).body.data as {
      id: string;
      url: string;
      event_types: string[];
      product: string | null;
      rate_limit_per_second: number | null;
      enabled: boolean;
      disabled_reason: string | null;
    }[];

  it('creates a webhook (its secret shown once), sends a test event the receiver gets and the log shows, redelivers it, rotates the secret, disables and deletes it', async () => {
    const problems: string[] = [];
    const context = await browser.newContext({ viewport: VIEWPORT });
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: url });
    const page = await watchedPage(context, problems);
    await signIn(page, url, admin);
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
    await page.getByText('No webhook yet.').waitFor();
    expect(await seriousViolations(page)).toEqual([]);

    // A refused URL: the server's words.
    await page.getByLabel('URL', { exact: true }).fill('http://hooks.example.com/fleethub');
    await page.getByRole('checkbox', { name: 'Every device event (device.*)' }).check();
    await page.getByRole('button', { name: 'Create webhook' }).click();
    await page.getByRole('alert').filter({ hasText: /^URL / }).waitFor();

    // Whole families and single types from the catalogue, one product.
    await page.getByLabel('URL', { exact: true }).fill(receiver.url());
    await page.getByRole('checkbox', { name: 'firmware.uploaded', exact: true }).check();
    await page.getByRole('combobox', { name: 'Product' }).selectOption('gateway');
    await page.getByLabel('Deliveries per second at most').fill('20');
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'console-webhooks-new');
    await page.getByRole('button', { name: 'Create webhook' }).click();
    const created = page.getByRole('region', { name: "New webhook's secret" });
    const secret = (await created.getByLabel('Signing secret').textContent()) ?? '';
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/=]+$/);
    const [webhook] = await webhooks();
    expect(webhook).toMatchObject({
      url: receiver.url(),
      event_types: ['device.*', 'firmware.uploaded'],
      product: 'gateway',
      rate_limit_per_second: 20,
      enabled: true,
    });
    const row = page.getByRole('row', { name: new RegExp(receiver.url()) });
    await row.getByRole('cell', { name: 'every device event, firmware.uploaded' }).waitFor();
    await row.getByRole('cell', { name: 'gateway' }).waitFor();
    await row.getByRole('cell', { name: 'enabled' }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'console-webhooks');
    // Shown once: gone after Done, and not in what the API lists.
    await created.getByRole('button', { name: 'Copy the secret' }).click();
    await created.getByRole('status').filter({ hasText: 'Copied.' }).waitFor();
    expect(await page.evaluate<string>('navigator.clipboard.readText()')).toBe(secret);
    await created.getByRole('button', { name: 'Done' }).click();
    expect(await page.getByText(secret).count()).toBe(0);
    expect(JSON.stringify(await webhooks())).not.toContain(secret);

    // The webhook's page: a test event, received (signed with that secret), then in the delivery log.
    await row.getByRole('link', { name: receiver.url() }).click();
    await page.waitForURL(`${url}/orgs/${org}/webhooks/${webhook.id}`);
    await page.getByText('Nothing delivered yet.').waitFor();
    await page.getByText('20 deliveries a second', { exact: true }).waitFor();
    /** The log's rows of an event once it has `count` of them (Refresh pressed meanwhile), or the last count. */
    const logRows = (event: string, count: number) =>
      eventually(
        async () => {
          await page.getByRole('button', { name: 'Refresh the log' }).click();
          return page.getByRole('row', { name: new RegExp(event) }).count();
        },
        (rows) => rows === count,
        10_000,
        250,
      );
    await page.getByRole('button', { name: 'Send a test event' }).click();
    const queued = page.getByRole('status').filter({ hasText: /^Test event evt_\w+ queued\.$/ });
    await queued.waitFor();
    const eventId = /evt_\w+/.exec((await queued.textContent()) ?? '')![0];
    const [test] = await eventually(
      () => receiver.attemptsOf(eventId),
      (got) => got.length === 1,
    );
    expect(test).toBeDefined();
    expect(verify(secret, test)).toMatchObject({ type: 'webhook.test', data: { webhook_id: webhook.id } });
    const logged = page.getByRole('row', { name: new RegExp(eventId) });
    expect(await logRows(eventId, 1)).toBe(1);
    await logged.getByRole('cell', { name: 'succeeded (HTTP 200)' }).waitFor();
    await logged.getByRole('cell', { name: 'thanks' }).waitFor();
    await logged.getByRole('cell', { name: 'delivered' }).waitFor();
    await logged.getByRole('cell', { name: /^\d+ ms$/ }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'console-webhook');

    // Sent again: the same id, a second attempt in the log.
    await logged.getByRole('button', { name: `Redeliver event ${eventId}` }).click();
    await page
      .getByRole('status')
      .filter({ hasText: `Event ${eventId} queued again.` })
      .waitFor();
    const attempts = await eventually(
      () => receiver.attemptsOf(eventId),
      (got) => got.length === 2,
    );
    expect(attempts).toHaveLength(2);
    expect(await logRows(eventId, 2)).toBe(2);

    // A new secret, shown once after a confirmation; the old one still signs during the grace period.
    await page.getByRole('button', { name: 'Rotate the secret…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Rotate the signing secret' });
    expect(await seriousViolations(page)).toEqual([]);
    await dialog.getByRole('button', { name: 'Rotate the secret' }).click();
    const rotated =
      (await page.getByRole('region', { name: 'New secret' }).getByLabel('Signing secret').textContent()) ??
      '';
    expect(rotated).toMatch(/^whsec_/);
    expect(rotated).not.toBe(secret);
    await page.getByText(/^The previous secret keeps signing too until /).waitFor();

    // Edited: the product filter off, every event.
    await page.getByRole('button', { name: 'Edit' }).click();
    const edit = page.getByRole('form', { name: 'Edit the webhook' });
    await edit.getByRole('checkbox', { name: 'Every event (*)' }).check();
    await edit.getByRole('combobox', { name: 'Product' }).selectOption('');
    await edit.getByLabel('Deliveries per second at most').fill('');
    await edit.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('status').filter({ hasText: 'Webhook saved.' }).waitFor();
    expect((await webhooks())[0]).toMatchObject({
      event_types: ['*'],
      product: null,
      rate_limit_per_second: null,
    });
    await page.getByText("the server's default", { exact: true }).waitFor();

    // Disabled (the reason names who), enabled again.
    await page.getByRole('button', { name: 'Disable' }).click();
    await page.getByRole('status').filter({ hasText: 'Webhook disabled.' }).waitFor();
    await page.getByText(`disabled by ${admin.user.email}`, { exact: true }).waitFor();
    expect((await webhooks())[0]).toMatchObject({
      enabled: false,
      disabled_reason: `disabled by ${admin.user.email}`,
    });
    await page.getByRole('button', { name: 'Enable' }).click();
    await page.getByRole('status').filter({ hasText: 'Webhook enabled.' }).waitFor();
    expect((await webhooks())[0]).toMatchObject({ enabled: true, disabled_reason: null });
    await page.getByRole('button', { name: 'Disable' }).click();
    await page.getByRole('status').filter({ hasText: 'Webhook disabled.' }).waitFor();

    // Deleted after a confirmation (Cancel first: nothing happens).
    await page.getByRole('button', { name: 'Delete…' }).click();
    const confirm = page.getByRole('dialog', { name: 'Delete the webhook' });
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    expect(await webhooks()).toHaveLength(1);
    await page.getByRole('button', { name: 'Delete…' }).click();
    await confirm.getByRole('button', { name: 'Delete the webhook' }).click();
    await page.waitForURL(`${url}/orgs/${org}/webhooks`);
    await page.getByText('No webhook yet.').waitFor();
    expect(await webhooks()).toEqual([]);
    expect(problems).toEqual([]);
    await context.close();
  });

  it('a view member sees the page without a manage action, and the server refuses one anyway', async () => {
    const made = await t
      .http()
      .post(`/api/orgs/${org}/webhooks`)
      .set(admin.auth)
      .send({ url: receiver.url('/viewer'), event_types: ['*'] })
      .expect(201);
    const id = made.body.data.id as string;

    const problems: string[] = [];
    const context = await browser.newContext({ viewport: VIEWPORT });
    const page = await watchedPage(context, problems);
    await signIn(page, url, viewer);
    await page.getByRole('link', { name: 'Webhooks' }).click();
    await page.getByRole('heading', { name: 'Webhooks', level: 1 }).waitFor();
    await page
      .getByText("The organization's webhooks are shown to its members with the manage role.")
      .waitFor();
    // The catalogue (every member may read it), nothing to change.
    await page.getByText(/^The event types \(\d+\)$/).click();
    await page.getByRole('rowheader', { name: 'device.created' }).waitFor();
    expect(
      await page
        .getByRole('button')
        .filter({ hasText: /Create|Delete|Disable|Rotate|test/ })
        .count(),
    ).toBe(0);
    expect(await page.getByLabel('URL', { exact: true }).count()).toBe(0);
    expect(await page.getByRole('link', { name: receiver.url('/viewer') }).count()).toBe(0);
    expect(await seriousViolations(page)).toEqual([]);

    await page.goto(`${url}/orgs/${org}/webhooks/${id}`);
    await page
      .getByText("The organization's webhooks are shown to its members with the manage role.")
      .waitFor();
    expect(
      await page
        .getByRole('button')
        .filter({ hasText: /Delete|Disable|Rotate|test|Redeliver/ })
        .count(),
    ).toBe(0);
    expect(await seriousViolations(page)).toEqual([]);

    const refused = await page.evaluate(
      async ([webhookPath]) => {
        const session = (await (await fetch('/api/session')).json()) as { data: { csrf_token: string } };
        const headers = { 'X-CSRF-Token': session.data.csrf_token };
        return [
          (await fetch(webhookPath, { method: 'DELETE', headers })).status,
          (await fetch(`${webhookPath}/test`, { method: 'POST', headers })).status,
        ];
      },
      [`/api/orgs/${org}/webhooks/${id}`],
    );
    expect(refused).toEqual([403, 403]);
    expect(await webhooks()).toHaveLength(1);
    expect(problems).toEqual([]);
    await context.close();
  });

  it('shows why fleethub disabled a webhook that kept failing, and its failed attempts in the log', async () => {
    const failing = await new WebhookReceiver().start();
    failing.answer = () => ({ status: 500, body: 'down for maintenance' });
    try {
      const made = await t
        .http()
        .post(`/api/orgs/${org}/webhooks`)
        .set(admin.auth)
        .send({ url: failing.url('/failing'), event_types: ['member.*'] })
        .expect(201);
      const id = made.body.data.id as string;
      await t.http().post(`/api/orgs/${org}/webhooks/${id}/test`).set(admin.auth).expect(202);
      const shown = await eventually(
        async () =>
          (await t.http().get(`/api/orgs/${org}/webhooks/${id}`).set(admin.auth)).body.data as {
            enabled: boolean;
            disabled_reason: string | null;
          },
        (data) => !data.enabled,
      );
      expect(shown.disabled_reason).toMatch(/^disabled by fleethub: 3 failed attempts in a row/);

      const problems: string[] = [];
      const context = await browser.newContext({ viewport: VIEWPORT });
      const page = await watchedPage(context, problems);
      await signIn(page, url, admin);
      await page.getByRole('link', { name: 'Webhooks' }).click();
      const row = page.getByRole('row', { name: new RegExp(failing.url('/failing')) });
      await row.getByRole('cell', { name: shown.disabled_reason! }).waitFor();
      await row.getByRole('cell', { name: 'every member event' }).waitFor();
      await row.getByRole('link', { name: failing.url('/failing') }).click();
      // At least the three failures that disabled it (a test event is retried even to a disabled webhook).
      await page
        .getByRole('status')
        .filter({ hasText: /^\d+ attempts/ })
        .waitFor();
      expect(await page.getByRole('cell', { name: 'failed (HTTP 500)' }).count()).toBeGreaterThanOrEqual(3);
      expect(await page.getByRole('cell', { name: 'down for maintenance' }).count()).toBeGreaterThanOrEqual(
        3,
      );
      await page.getByRole('button', { name: 'Enable' }).waitFor();
      expect(await seriousViolations(page)).toEqual([]);
      expect(problems).toEqual([]);
      await context.close();
    } finally {
      await failing.close();
    }
  });
});
