import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import type { Browser, Page } from 'playwright-core';
import { Simulator } from '../../src/cli/simulator';
import { ConnectionSampler } from '../../src/overview/connection-sampler';
import { DeviceReportsService } from '../../src/telemetry/device-reports.service';
import { ca, verificationCert } from '../support/cert-builder';
import { launchChromium, screenshot } from '../support/chromium';
import { PASSWORD, seriousViolations, signIn, watchedPage } from '../support/console-browser';
import { eventually } from '../support/eventually';
import type { TestUser } from '../support/fixtures';
import { listenOnLoopback } from '../support/listening-app';
import { createTestApp, type TestApp } from '../support/test-app';

const VIEWPORT = { width: 1280, height: 900 };
const endpointId = () => randomBytes(32).toString('hex');
const digits = (text: string | null) => Number((text ?? '').replace(/\D/g, ''));

/** The focused element's name as a person hears it: its aria-label, its label's text, or its own text. */
const FOCUSED_NAME = `(() => {
  const element = document.activeElement;
  if (!element) return '';
  const label = element.id ? document.querySelector('label[for="' + element.id + '"]') : null;
  return element.getAttribute('aria-label') ?? label?.textContent ?? element.textContent ?? '';
})()`;

/** Presses Tab until the focused element has this accessible name (keyboard only); fails after 60 presses. */
async function tabTo(page: Page, name: string | RegExp): Promise<void> {
  for (let i = 0; i < 60; i++) {
    await page.keyboard.press('Tab');
    const focused = await page.evaluate<string>(FOCUSED_NAME);
    if (typeof name === 'string' ? focused.trim() === name : name.test(focused)) return;
  }
  throw new Error(`nothing named ${String(name)} could be reached with Tab`);
}

describe('the console: CA certificates, iroh endpoints and the fleet overview in Chromium', () => {
  let t: TestApp;
  let url: string;
  let browser: Browser;
  let admin: TestUser;
  let viewer: TestUser;
  let org: string;
  let simulator: Simulator;

  beforeAll(async () => {
    t = await createTestApp({ FLEETHUB_RATE_LIMIT_API_PER_MIN: '0' });
    ({ url } = await listenOnLoopback(t));
    admin = await t.fixtures.user({ name: 'Ada Admin', password: PASSWORD });
    viewer = await t.fixtures.user({ name: 'Vic Viewer', password: PASSWORD });
    org = await t.fixtures.org(admin, 'org-pages');
    await t.fixtures.addMember(org, viewer, 'view');
    await t.fixtures.product(admin, org, 'gateway');
    await t.fixtures.devices(
      admin,
      org,
      'gateway',
      Array.from({ length: 7 }, (_, i) => `gw-${i + 1}`),
    );
    const secret = await t
      .http()
      .post(`/api/orgs/${org}/products/gateway/shared_secrets`)
      .set(admin.auth)
      .send({})
      .expect(201);
    simulator = new Simulator({
      url,
      key: secret.body.data.key,
      secret: secret.body.data.secret,
      devices: 3,
      prefix: 'sim-',
      firmware: { version: '1.4.2' },
    });
    simulator.start(0);
    const sim = simulator;
    await eventually(
      () => sim.connected,
      (n) => n === 3,
    );
    // Two devices report health alarms.
    const rows = await t.db.query<{ id: string; org_id: string; identifier: string }[]>(
      `SELECT id, org_id, identifier FROM devices WHERE identifier IN ('gw-1', 'gw-2') ORDER BY identifier`,
    );
    const reports = t.app.get(DeviceReportsService);
    for (const row of rows) {
      reports.healthReport(
        { deviceId: row.id, orgId: row.org_id, identifier: row.identifier },
        { value: { alarms: { 'Elixir.DiskFull': 'disk is full' }, metrics: { disk_used_percentage: 97 } } },
      );
    }
    await reports.flush();
    await t.app.get(ConnectionSampler).sample();
    browser = await launchChromium();
  }, 60_000);
  afterAll(async () => {
    await simulator?.stop();
    await browser?.close();
    await t?.close();
  });

  const caList = async () =>
    (await t.http().get(`/api/orgs/${org}/ca_certificates`).set(admin.auth).expect(200)).body.data as {
      serial: string;
      description: string | null;
      jitp: { product_name: string; tags: string[] } | null;
    }[];

  it('keeps the first page small: uPlot is a chunk of its own, the first page under 250 KB gzipped', async () => {
    const index = await t.http().get('/').expect(200);
    const scripts = [...index.text.matchAll(/(?:src|href)="(\/assets\/[^"]+\.js)"/g)].map((m) => m[1]);
    expect(scripts.length).toBeGreaterThan(0);
    let gzipped = 0;
    for (const script of scripts) {
      const asset = await t.http().get(script).buffer(true).expect(200);
      const body = Buffer.isBuffer(asset.body) ? asset.body : Buffer.from(asset.text);
      // uPlot's code (its plot's overlay class, say), not merely its lazy chunk's name in the entry's import map.
      expect(body.toString('utf8')).not.toContain('"u-over"');
      gzipped += gzipSync(body).length;
    }
    process.stdout.write(`first page: ${scripts.length} script(s), ${gzipped} bytes of JavaScript gzipped\n`);
    expect(gzipped).toBeLessThan(250 * 1024);
  });

  it('registers a CA certificate through the guided steps (running the commands it shows), lists and deletes it', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'fleethub-ca-'));
    try {
      const problems: string[] = [];
      const context = await browser.newContext({ viewport: VIEWPORT });
      const page = await watchedPage(context, problems);
      await signIn(page, url, admin);
      await page.getByRole('link', { name: 'CA certificates' }).click();
      await page.getByRole('heading', { name: 'CA certificates', level: 1 }).waitFor();
      await page.getByText('No CA certificate registered yet.').waitFor();
      expect(await seriousViolations(page)).toEqual([]);

      // Step 1: the token. Step 2: the commands, run as shown (a CA first, then the verification certificate).
      await page.getByRole('button', { name: 'Get a verification token' }).click();
      const token = await page.getByLabel('Verification token').inputValue();
      expect(token).toMatch(/^1\.\d+\.\d+\.[\w-]{43}$/);
      const makeCa = await page.getByLabel('Commands that make a CA').textContent({ timeout: 5000 });
      const makeProof = await page
        .getByLabel('Commands that make the verification certificate')
        .textContent();
      expect(makeProof).toContain(`URI:urn:nerveshub:verify:${token}`);
      execFileSync('bash', ['-euc', `${makeCa}\n${makeProof}`], { cwd: dir, stdio: 'pipe' });

      // A proof from another CA is refused, and the page says why in words.
      const stranger = await ca({ cn: 'Stranger CA' });
      const wrongProof = await verificationCert(stranger, token);
      await page
        .getByLabel('CA certificate', { exact: true })
        .fill(await readFile(join(dir, 'ca.pem'), 'utf8'));
      await page.getByLabel('Verification certificate', { exact: true }).fill(wrongProof.pem);
      await page.getByRole('button', { name: 'Register CA certificate' }).click();
      await page
        .getByRole('alert')
        .filter({ hasText: 'Verification certificate is not signed by the CA certificate.' })
        .waitFor();

      // Step 3: the files chosen (the CA) and pasted (the verification certificate), with JITP.
      await page.getByLabel('Or choose the file of the ca certificate').setInputFiles(join(dir, 'ca.pem'));
      await eventually(
        () => page.getByLabel('CA certificate', { exact: true }).inputValue(),
        (text) => text.startsWith('-----BEGIN CERTIFICATE-----'),
      );
      await page
        .getByLabel('Verification certificate', { exact: true })
        .fill(await readFile(join(dir, 'verification.pem'), 'utf8'));
      await page.getByLabel('Description (optional)').fill('Factory line 2');
      await page.getByLabel('Create devices on their first connection (JITP)').check();
      await page.getByLabel('Product', { exact: true }).selectOption('gateway');
      await page.getByLabel('Tags of the new devices (comma-separated, optional)').fill('factory, line-2');
      expect(await seriousViolations(page)).toEqual([]);
      await screenshot(page, 'console-ca-certificates-register');
      await page.getByRole('button', { name: 'Register CA certificate' }).click();
      await page
        .getByRole('status')
        .filter({ hasText: /CA certificate \d+ registered\./ })
        .waitFor();

      const [registered] = await caList();
      expect(registered).toMatchObject({
        description: 'Factory line 2',
        jitp: { product_name: 'gateway', tags: ['factory', 'line-2'] },
      });
      const row = page.getByRole('row', { name: new RegExp(registered.serial) });
      await row.getByRole('cell', { name: 'Factory line 2' }).waitFor();
      await row.getByRole('cell', { name: 'into gateway, tagged factory, line-2' }).waitFor();
      expect(await seriousViolations(page)).toEqual([]);
      await screenshot(page, 'console-ca-certificates');

      page.once('dialog', (dialog) => void dialog.accept());
      await page.getByRole('button', { name: `Delete CA certificate ${registered.serial}` }).click();
      await page
        .getByRole('status')
        .filter({ hasText: `CA certificate ${registered.serial} deleted.` })
        .waitFor();
      expect(await caList()).toEqual([]);
      expect(problems).toEqual([]);
      await context.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('registers a CA certificate with the keyboard alone', async () => {
    const problems: string[] = [];
    const context = await browser.newContext({ viewport: VIEWPORT });
    const page = await watchedPage(context, problems);
    await signIn(page, url, admin);
    // The products page has answered (leaving it earlier would cut its request short).
    await page.getByRole('link', { name: 'gateway' }).waitFor();
    await page.goto(`${url}/orgs/${org}/certificates`);
    await page.getByRole('heading', { name: 'Register a CA certificate' }).waitFor();
    await tabTo(page, 'Get a verification token');
    await page.keyboard.press('Enter');
    const token = await page.getByLabel('Verification token').inputValue();
    const authority = await ca({ cn: 'Keyboard CA' });
    const proof = await verificationCert(authority, token);
    await tabTo(page, 'CA certificate');
    await page.keyboard.insertText(authority.pem);
    await tabTo(page, 'Verification certificate');
    await page.keyboard.insertText(proof.pem);
    await tabTo(page, 'Description (optional)');
    await page.keyboard.type('typed, not clicked');
    await tabTo(page, 'Register CA certificate');
    await page.keyboard.press('Enter');
    await page
      .getByRole('status')
      .filter({ hasText: `CA certificate ${authority.serial} registered.` })
      .waitFor();
    expect((await caList()).map((c) => c.serial)).toEqual([authority.serial]);
    expect(problems).toEqual([]);
    await context.close();
  });

  it('iroh endpoints: registered, searched, filtered, paged by the server and removed', async () => {
    // 30 endpoints the organization holds, made through the API; one registered from the page for a member.
    const made = Array.from({ length: 30 }, endpointId);
    for (const identifier of made) {
      await t.http().post(`/api/orgs/${org}/iroh_endpoints`).set(admin.auth).send({ identifier }).expect(201);
    }
    const problems: string[] = [];
    const context = await browser.newContext({ viewport: VIEWPORT });
    const page = await watchedPage(context, problems);
    await signIn(page, url, admin);
    await page.getByRole('link', { name: 'Iroh endpoints' }).click();
    await page.getByRole('heading', { name: 'Iroh endpoints' }).waitFor();
    const count = page.getByRole('status').filter({ hasText: /endpoints?/ });
    await count.filter({ hasText: /, page 1 of 2$/ }).waitFor();
    expect(await page.locator('table.endpoints tbody tr').count()).toBe(25);
    expect(await seriousViolations(page)).toEqual([]);

    const mine = endpointId();
    await page.getByLabel('Endpoint id', { exact: true }).fill(mine.toUpperCase());
    await page.getByLabel('Instance (optional)').fill('laptop');
    await page.getByLabel('Belongs to').selectOption(viewer.user.email);
    await page.getByRole('button', { name: 'Register endpoint' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: `Endpoint ${mine.slice(0, 12)}… registered.` })
      .waitFor();
    // The simulated devices reported theirs too: the page shows the API's total.
    const total = (await t.http().get(`/api/orgs/${org}/iroh_endpoints?page=1`).set(admin.auth).expect(200))
      .body.pagination.total_entries as number;
    expect(total).toBeGreaterThanOrEqual(31);
    await count.filter({ hasText: new RegExp(`^${total} endpoints, page 1 of 2$`) }).waitFor();
    // The same key again: the server's refusal, in words.
    await page.getByLabel('Endpoint id', { exact: true }).fill(mine);
    await page.getByRole('button', { name: 'Register endpoint' }).click();
    await page.getByRole('alert').filter({ hasText: 'That endpoint id is already registered.' }).waitFor();

    await page.getByRole('button', { name: 'Next page' }).click();
    await page.waitForURL(/page=2/);
    await count.filter({ hasText: /, page 2 of 2$/ }).waitFor();

    // Search by prefix (in the URL), then by the holder's name, then by kind of holder.
    await page.getByLabel('Endpoint id prefix, device or member').fill(made[7].slice(0, 10));
    await page.getByRole('button', { name: 'Search' }).click();
    await count.filter({ hasText: /^1 endpoint$/ }).waitFor();
    expect(new URL(page.url()).searchParams.get('search')).toBe(made[7].slice(0, 10));
    expect(new URL(page.url()).searchParams.get('page')).toBeNull();
    await page.getByRole('rowheader', { name: made[7] }).waitFor();
    await page.getByLabel('Endpoint id prefix, device or member').fill('Vic');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.getByRole('rowheader', { name: mine }).waitFor();
    await page.getByRole('cell', { name: 'Member Vic Viewer' }).waitFor();
    await page.getByRole('button', { name: 'Clear' }).click();
    await page.getByLabel('Held by').selectOption('user');
    await count.filter({ hasText: /^1 endpoint$/ }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'console-iroh-endpoints');

    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: `Remove endpoint ${mine}` }).click();
    await page
      .getByRole('status')
      .filter({ hasText: `Endpoint ${mine.slice(0, 12)}… removed.` })
      .waitFor();
    await count.filter({ hasText: /^0 endpoints$/ }).waitFor();
    await page.getByText('Nothing matches that.').waitFor();
    await t.http().get(`/api/orgs/${org}/iroh_endpoints/${mine}`).set(admin.auth).expect(404);
    expect(problems).toEqual([]);
    await context.close();
  });

  it("the overview is the product's home page: its numbers are the API's, the chart loaded with it", async () => {
    const problems: string[] = [];
    const context = await browser.newContext({ viewport: VIEWPORT });
    const page = await watchedPage(context, problems);
    const scripts: string[] = [];
    page.on('request', (request) => {
      if (request.resourceType() === 'script') scripts.push(new URL(request.url()).pathname);
    });
    await signIn(page, url, admin);
    await page.getByRole('link', { name: 'gateway' }).waitFor();
    expect(scripts.some((s) => s.includes('connected-chart'))).toBe(false);
    await page.getByRole('link', { name: 'gateway' }).click();
    await page.waitForURL(`${url}/orgs/${org}/products/gateway`);
    await page.getByRole('heading', { name: 'Connected over time' }).waitFor();
    const api = (await t.http().get(`/api/orgs/${org}/products/gateway/overview`).set(admin.auth).expect(200))
      .body.data;
    expect(api.devices).toEqual({ total: 10, connected: 3, disconnected: 0, not_seen: 7 });

    const tile = (name: string) => page.locator('.tiles > div').filter({ hasText: name }).locator('dd a');
    expect(digits(await tile('Connected now').textContent())).toBe(api.devices.connected);
    expect(digits(await tile('Disconnected').textContent())).toBe(api.devices.disconnected);
    expect(digits(await tile('Never connected').textContent())).toBe(api.devices.not_seen);
    expect(digits(await tile('With health alarms').textContent())).toBe(api.health_alarms.devices);
    expect(api.health_alarms.devices).toBe(2);
    const version = page.getByRole('row', { name: /1\.4\.2/ });
    expect(digits(await version.getByRole('cell').first().textContent())).toBe(3);
    expect(api.firmware.versions).toEqual([{ version: '1.4.2', devices: 3 }]);
    await page.getByText('No version reported yet: 7 devices.').waitFor();
    await page.getByRole('link', { name: 'gw-1' }).waitFor();
    await page.getByText('No deployment group has an update in flight.').waitFor();

    // The time series: drawn by uPlot (loaded now), described in words and given as a table.
    expect(api.connected_history.points.length).toBeGreaterThanOrEqual(1);
    await page.locator('.chart canvas').first().waitFor();
    expect(scripts.some((s) => s.includes('connected-chart'))).toBe(true);
    const caption = await page.locator('figcaption').textContent();
    expect(caption).toContain('Connected devices over the last 24 hours: 3 of 10');
    await page.getByText(/^The numbers \(\d+ points?\)$/).click();
    await page.getByRole('table', { name: 'Connected devices over the last 24 hours' }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'console-overview');

    await page.getByLabel('Range').selectOption('1');
    await page.waitForURL(/\?hours=1$/);
    await page.locator('figcaption').filter({ hasText: 'over the last hour' }).waitFor();
    // A tile is a link to the devices it counts.
    await tile('With health alarms').click();
    await page.waitForURL(/devices\?alarm_status=with$/);
    await page
      .getByRole('status')
      .filter({ hasText: /^2 devices$/ })
      .waitFor();
    expect(problems).toEqual([]);
    await context.close();
  });

  it('the overview follows the fleet live: a device joining moves the connected count without a reload', async () => {
    const problems: string[] = [];
    const context = await browser.newContext({ viewport: VIEWPORT });
    const page = await watchedPage(context, problems);
    await signIn(page, url, viewer);
    await page.goto(`${url}/orgs/${org}/products/gateway`);
    const tile = (name: string) => page.locator('.tiles > div').filter({ hasText: name }).locator('dd a');
    await page.locator('.live-badge').filter({ hasText: 'Live' }).waitFor();
    const before = (
      await t.http().get(`/api/orgs/${org}/products/gateway/overview`).set(admin.auth).expect(200)
    ).body.data.devices as { total: number; connected: number };
    expect(digits(await tile('Connected now').textContent())).toBe(before.connected);
    // A mark in the page: still there afterwards, so nothing reloaded it.
    await page.evaluate('window.__notReloaded = true');
    const overviewReads: string[] = [];
    page.on('request', (request) => {
      if (request.url().includes('/overview')) overviewReads.push(request.url());
    });

    const secret = await t
      .http()
      .post(`/api/orgs/${org}/products/gateway/shared_secrets`)
      .set(admin.auth)
      .send({})
      .expect(201);
    const joining = new Simulator({
      url,
      key: secret.body.data.key,
      secret: secret.body.data.secret,
      devices: 1,
      prefix: 'joining-',
      firmware: { version: '1.5.0' },
    });
    try {
      joining.start(0);
      await tile('Connected now')
        .filter({ hasText: new RegExp(`^${before.connected + 1}$`) })
        .waitFor();
      await page
        .locator('.tiles > div')
        .filter({ hasText: 'Connected now' })
        .getByText(`of ${before.total + 1}`, { exact: false })
        .waitFor();
      // Its firmware joins the distribution, from the same event.
      await page.getByRole('row', { name: /1\.5\.0/ }).waitFor();
    } finally {
      await joining.stop();
    }
    await tile('Connected now')
      .filter({ hasText: new RegExp(`^${before.connected}$`) })
      .waitFor();
    expect(digits(await tile('Disconnected').textContent())).toBe(1);
    expect(await page.evaluate('window.__notReloaded')).toBe(true);
    // The counters came with the events: the page read the overview again only if the devices with alarms changed
    // (a simulated device may report one), to name them.
    const alarms = (
      await t.http().get(`/api/orgs/${org}/products/gateway/overview`).set(admin.auth).expect(200)
    ).body.data.health_alarms.devices as number;
    if (alarms === 2) expect(overviewReads).toEqual([]);
    expect(problems).toEqual([]);
    await context.close();
  });

  it('a view member sees these pages without a manage action, and the server refuses one anyway', async () => {
    const token = (
      await t.http().get(`/api/orgs/${org}/ca_certificates/verification_token`).set(admin.auth).expect(200)
    ).body.data.verification_token as string;
    const authority = await ca({ cn: 'Viewer-visible CA' });
    const proof = await verificationCert(authority, token);
    await t
      .http()
      .post(`/api/orgs/${org}/ca_certificates`)
      .set(admin.auth)
      .send({ cert: authority.b64, verification_cert: proof.b64 })
      .expect(201);
    const endpoint = endpointId();
    await t
      .http()
      .post(`/api/orgs/${org}/iroh_endpoints`)
      .set(admin.auth)
      .send({ identifier: endpoint })
      .expect(201);

    const problems: string[] = [];
    const context = await browser.newContext({ viewport: VIEWPORT });
    const page = await watchedPage(context, problems);
    await signIn(page, url, viewer);
    await page.getByRole('link', { name: 'CA certificates' }).click();
    await page.getByRole('rowheader', { name: authority.serial }).waitFor();
    expect(await page.getByRole('button', { name: /Delete/ }).count()).toBe(0);
    expect(await page.getByRole('heading', { name: 'Register a CA certificate' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: /verification token/ }).count()).toBe(0);
    expect(await seriousViolations(page)).toEqual([]);

    await page.getByRole('link', { name: 'Iroh endpoints' }).click();
    await page.getByRole('rowheader', { name: endpoint }).waitFor();
    expect(await page.getByRole('button', { name: /Remove|Register/ }).count()).toBe(0);
    expect(await page.getByLabel('Endpoint id', { exact: true }).count()).toBe(0);
    expect(await seriousViolations(page)).toEqual([]);

    await page.goto(`${url}/orgs/${org}/products/gateway`);
    await page.getByRole('heading', { name: 'Firmware versions' }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);

    const refused = await page.evaluate(
      async ([caPath, endpointPath]) => {
        const session = (await (await fetch('/api/session')).json()) as { data: { csrf_token: string } };
        const headers = { 'X-CSRF-Token': session.data.csrf_token };
        return [
          (await fetch(caPath, { method: 'DELETE', headers })).status,
          (await fetch(endpointPath, { method: 'DELETE', headers })).status,
        ];
      },
      [`/api/orgs/${org}/ca_certificates/${authority.serial}`, `/api/orgs/${org}/iroh_endpoints/${endpoint}`],
    );
    expect(refused).toEqual([403, 403]);
    expect(problems).toEqual([]);
    await context.close();
  });
});
