import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import { Simulator } from '../../src/cli/simulator';
import { launchChromium, screenshot } from '../support/chromium';
import { eventually } from '../support/eventually';
import type { TestUser, UploadedFirmware } from '../support/fixtures';
import type { FwupKeyPair } from '../support/fw-builder';
import { createTestApp, type TestApp } from '../support/test-app';

const AXE_SOURCE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
const PASSWORD = 'deployments test password';
const VIEWPORT = { width: 1280, height: 900 };

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

/** axe-core's serious and critical violations on the page as it is now (axe runs through CDP, not a page script). */
async function seriousViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run(): Promise<{ violations: AxeViolation[] }> } }).axe;
    return (await axe.run()).violations;
  });
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

/** A page that records what the browser refused or failed: CSP violations, failed requests, script errors. */
async function watchedPage(context: BrowserContext, problems: string[]): Promise<Page> {
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  page.on('console', (message) => {
    // A 4xx the page answers in words (a refused field) is Chromium's console error, not a fault.
    if (message.type() === 'error' && !/status of 4\d\d/.test(message.text())) problems.push(message.text());
  });
  page.on('pageerror', (error) => problems.push(error.message));
  // An event stream the page closes on leaving is reported as aborted: not a failure.
  page.on('requestfailed', (request) => {
    if (!request.url().endsWith('/events')) problems.push(`failed: ${request.url()}`);
  });
  return page;
}

async function signIn(page: Page, url: string, user: TestUser): Promise<void> {
  await page.goto(url);
  await page.getByLabel('Email').fill(user.user.email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
  // The products page, where sign-in leads, has loaded: leaving it now aborts no request.
  await page.getByRole('link', { name: 'fleet', exact: true }).waitFor();
}

/** The number a rollout count shows (`Devices`, `Updated`, ...). */
const count = async (page: Page, key: string) =>
  Number((await page.locator(`dd[data-count="${key}"]`).textContent())?.replace(/\D/g, ''));

/** Presses Tab until the focused element has this accessible label or text (keyboard only). */
async function tabTo(page: Page, name: RegExp, limit = 60): Promise<void> {
  for (let i = 0; i < limit; i++) {
    await page.keyboard.press('Tab');
    const element = page.locator(':focus');
    const id = await element.getAttribute('id');
    const label = id ? await page.locator(`label[for="${id}"]`).textContent() : null;
    const focused =
      label ?? (await element.getAttribute('aria-label')) ?? (await element.textContent()) ?? '';
    if (name.test(focused.trim())) return;
  }
  throw new Error(`nothing labelled ${String(name)} within ${limit} tabs`);
}

describe('deployment groups and bulk device actions in Chromium', () => {
  let t: TestApp;
  let url: string;
  let browser: Browser;
  let admin: TestUser;
  let viewer: TestUser;
  let org: string;
  let key: FwupKeyPair;
  let v1: UploadedFirmware;
  let v2: UploadedFirmware;
  let simulator: Simulator | null = null;
  const product = 'fleet';

  beforeAll(async () => {
    // Firmware links point at FLEETHUB_PUBLIC_URL: the simulated devices download from it. Pick the port first.
    const port = await new Promise<number>((resolve) => {
      const probe = createServer().listen(0, '127.0.0.1', () => {
        const { port: free } = probe.address() as AddressInfo;
        probe.close(() => resolve(free));
      });
    });
    url = `http://127.0.0.1:${port}`;
    t = await createTestApp({ FLEETHUB_PUBLIC_URL: url });
    await t.app.listen(port, '127.0.0.1');
    admin = await t.fixtures.user({ name: 'Ada Admin', password: PASSWORD });
    viewer = await t.fixtures.user({ name: 'Vic Viewer', password: PASSWORD });
    org = await t.fixtures.org(admin, 'rollout-org');
    await t.fixtures.addMember(org, viewer, 'view');
    await t.fixtures.product(admin, org, product);
    key = await t.fixtures.registeredKey(admin, org, 'release');
    v1 = await t.fixtures.firmware(admin, org, product, { version: '1.0.0', key });
    v2 = await t.fixtures.firmware(admin, org, product, { version: '2.0.0', key });
    for (let i = 1; i <= 30; i++) {
      await t.fixtures.device(admin, org, product, `tagme-${String(i).padStart(3, '0')}`, {
        tags: i % 2 === 0 ? 'even' : 'odd',
      });
    }
    const secret = await t
      .http()
      .post(`/api/orgs/${org}/products/${product}/shared_secrets`)
      .set(admin.auth)
      .send({})
      .expect(201);
    simulator = new Simulator({
      url,
      key: secret.body.data.key,
      secret: secret.body.data.secret,
      devices: 4,
      prefix: 'sim-',
      applyMs: 300,
      applyJitter: 0,
      firmware: { uuid: v1.uuid, version: '1.0.0', platform: 'rpi4', architecture: 'aarch64' },
    });
    simulator.start(0);
    const sim = simulator;
    await eventually(
      async () => sim.connected,
      (n) => n === 4,
    );
    browser = await launchChromium();
  });
  afterAll(async () => {
    await simulator?.stop();
    await browser?.close();
    await t?.close();
  });

  it('creates a group from the console and follows its rollout live; pauses and resumes it', async () => {
    const problems: string[] = [];
    const context = await browser.newContext({ viewport: VIEWPORT });
    const page = await watchedPage(context, problems);
    await signIn(page, url, admin);
    await page.goto(`${url}/orgs/${org}/products/${product}/devices`);
    await page.getByRole('link', { name: 'Deployment groups' }).click();
    await page.getByText('This product has no deployment groups yet.').waitFor();
    await page.getByRole('status').filter({ hasText: 'Live:' }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);

    await page.getByRole('link', { name: 'New deployment group' }).click();
    await page.getByRole('heading', { name: 'New deployment group' }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    // The server's refusals are shown beside their fields, in its words.
    await page.getByLabel('Name').fill('stable');
    await page.getByLabel('Updates at once').fill('0');
    await page.getByRole('button', { name: 'Create group' }).click();
    await page.getByRole('alert').filter({ hasText: 'The group was not saved.' }).waitFor();
    await expect(page.locator('#group-firmware-error').textContent()).resolves.toBe("can't be blank");
    await expect(page.locator('#group-concurrent_updates-error').textContent()).resolves.toBe(
      'must be greater than 0',
    );
    expect(await page.getByLabel('Updates at once').getAttribute('aria-invalid')).toBe('true');
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByLabel('Firmware', { exact: true }).selectOption(v2.uuid);
    await page.getByLabel('Updates at once').fill('2');
    await page.getByLabel('Version requirement').fill('~> banana');
    await page.getByRole('button', { name: 'Create group' }).click();
    await page.locator('#group-version-error').waitFor();
    await expect(page.locator('#group-version-error').textContent()).resolves.toBe(
      'must be valid Elixir version requirement string',
    );
    expect(await page.locator('.field-error').count()).toBe(1);
    await screenshot(page, 'console-deployment-form');

    // Devices stay in the group on 2.0.0 too.
    await page.getByLabel('Version requirement').fill('>= 1.0.0');
    await page.getByLabel(/^On: roll the firmware out/).check();
    await page.getByRole('button', { name: 'Create group' }).click();
    await page.waitForURL(`${url}/orgs/${org}/products/${product}/deployments/stable`);
    await page.getByRole('heading', { name: 'stable' }).waitFor();
    // The four simulated devices join, update two at a time and come back on 2.0.0: the counts move on their own.
    await page.getByRole('status').filter({ hasText: 'Live:' }).waitFor();
    await page.locator('dd[data-count="devices"]').filter({ hasText: /^4$/ }).waitFor();
    await page.locator('dd[data-count="updated"]').filter({ hasText: /^4$/ }).waitFor({ timeout: 30_000 });
    expect(await count(page, 'updating')).toBe(0);
    await page.getByRole('cell', { name: '2.0.0' }).first().waitFor();
    expect(await page.locator('table.devices tbody tr').count()).toBe(4);
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'console-deployment');

    // Release history.
    const releases = page.getByRole('table', { name: /^Releases of stable/ });
    await releases.getByRole('rowheader', { name: '1' }).waitFor();
    await expect(releases.getByRole('cell', { name: v2.uuid }).count()).resolves.toBe(1);

    await page.getByRole('button', { name: 'Pause rollout' }).click();
    await page.getByRole('status').filter({ hasText: 'Rollout paused.' }).waitFor();
    const paused = await t
      .http()
      .get(`/api/orgs/${org}/products/${product}/deployments/stable`)
      .set(admin.auth);
    expect(paused.body.data.state).toBe('off');
    await page.getByRole('button', { name: 'Turn on' }).click();
    await page.getByRole('status').filter({ hasText: 'Rollout resumed.' }).waitFor();

    // A group that paused itself says why (only the orchestrator writes these, after failed updates).
    await t.db.query(
      `UPDATE deployment_groups SET is_active = false, paused_at = now(),
              paused_reason = 'paused by fleethub: 50 updates of release 1 failed'
        WHERE name = 'stable'`,
    );
    await page.reload();
    await page
      .getByRole('note')
      .filter({ hasText: 'paused by fleethub: 50 updates of release 1 failed' })
      .waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByRole('button', { name: 'Resume rollout' }).click();
    await page.getByRole('status').filter({ hasText: 'Rollout resumed.' }).waitFor();
    expect(await page.getByRole('note').count()).toBe(0);
    const resumed = await t
      .http()
      .get(`/api/orgs/${org}/products/${product}/deployments/stable`)
      .set(admin.auth);
    expect(resumed.body.data).toMatchObject({ state: 'on', paused_reason: null });

    // Edit: the form holds the group's settings; a change is saved.
    await page.getByRole('link', { name: 'Edit group' }).click();
    await page.getByRole('heading', { name: 'Edit stable' }).waitFor();
    expect(await page.getByLabel('Updates at once').inputValue()).toBe('2');
    expect(await seriousViolations(page)).toEqual([]);
    await page.getByLabel('Updates at once').fill('3');
    await page.getByRole('button', { name: 'Save group' }).click();
    await page.waitForURL(`${url}/orgs/${org}/products/${product}/deployments/stable`);
    const edited = await t
      .http()
      .get(`/api/orgs/${org}/products/${product}/deployments/stable`)
      .set(admin.auth);
    expect(edited.body.data).toMatchObject({ concurrent_updates: 3, releases_count: 1 });

    // The list shows it with its counts.
    await page.getByRole('link', { name: 'Deployment groups' }).first().click();
    const row = page.getByRole('row', { name: /stable/ });
    await row.waitFor();
    await expect(row.textContent()).resolves.toMatch(/2\.0\.0.*On/);
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'console-deployments');
    expect(problems).toEqual([]);
    await context.close();
  });

  it('adds a tag to every device a filter matches, after a confirmation with the server count', async () => {
    const problems: string[] = [];
    const context = await browser.newContext({ viewport: VIEWPORT });
    const page = await watchedPage(context, problems);
    await signIn(page, url, admin);
    await page.goto(`${url}/orgs/${org}/products/${product}/devices?identifier=tagme&page_size=25`);
    await page.getByRole('status').filter({ hasText: '30 devices, page 1 of 2' }).waitFor();
    await page.getByLabel('Select every device on this page').check();
    await page.getByRole('button', { name: 'Select all 30 devices matching this filter' }).click();
    await page.getByText('All 30 devices matching this filter are selected.').waitFor();
    const bulk = page.getByRole('form', { name: 'Change the selected devices' });
    await bulk.getByLabel('Action').selectOption('add_tags');
    await bulk.getByLabel('Tags (comma-separated)').fill('wave-1');
    await bulk.getByRole('button', { name: 'Apply…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Add tags: 30 devices' });
    await dialog.waitFor();
    await expect(dialog.textContent()).resolves.toContain(
      'Add the tags wave-1 to all 30 devices matching this filter?',
    );
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'console-devices-bulk');
    await dialog.getByRole('button', { name: 'Change 30 devices' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: 'Tags added to 30 of 30 devices; the others had them already.' })
      .waitFor();
    // The list, read again, shows the tags.
    await page
      .getByRole('cell', { name: /wave-1/ })
      .first()
      .waitFor();
    expect(await page.getByRole('cell', { name: /wave-1/ }).count()).toBe(25);
    const tagged = await t
      .http()
      .get(`/api/orgs/${org}/products/${product}/devices?filters[tags]=wave-1&pagination[page_size]=1`)
      .set(admin.auth);
    expect(tagged.body.pagination.total_entries).toBe(30);

    // A few rows: the count is theirs, and Escape cancels.
    await page.getByLabel('Select tagme-001').check();
    await page.getByLabel('Select tagme-002').check();
    await bulk.getByLabel('Action').selectOption('disable_updates');
    await bulk.getByRole('button', { name: 'Apply…' }).click();
    await page.getByRole('dialog', { name: 'Turn automatic updates off: 2 devices' }).waitFor();
    await page.keyboard.press('Escape');
    // The dialog closes on the browser's next turn, not within the key press.
    await page.getByRole('dialog').waitFor({ state: 'hidden' });
    await expect(page.getByRole('dialog').count()).resolves.toBe(0);
    expect(problems).toEqual([]);
    await context.close();
  });

  it('a view member is offered no manage action on these pages, and the server refuses one anyway', async () => {
    const problems: string[] = [];
    const context = await browser.newContext({ viewport: VIEWPORT });
    const page = await watchedPage(context, problems);
    await signIn(page, url, viewer);
    await page.goto(`${url}/orgs/${org}/products/${product}/deployments`);
    await page.getByRole('link', { name: 'stable' }).waitFor();
    expect(await page.getByRole('link', { name: 'New deployment group' }).count()).toBe(0);
    expect(await seriousViolations(page)).toEqual([]);

    await page.getByRole('link', { name: 'stable' }).click();
    await page.locator('dd[data-count="devices"]').waitFor();
    for (const name of [/Pause/, /Resume/, /Turn on/, /Edit group/, /Delete group/]) {
      expect(await page.getByRole('button', { name }).count()).toBe(0);
      expect(await page.getByRole('link', { name }).count()).toBe(0);
    }
    expect(await seriousViolations(page)).toEqual([]);

    await page.goto(`${url}/orgs/${org}/products/${product}/new-deployment`);
    await page.getByText('Creating and changing deployment groups needs the manage role.').waitFor();
    expect(await page.getByRole('button', { name: 'Create group' }).count()).toBe(0);

    await page.goto(`${url}/orgs/${org}/products/${product}/devices`);
    await page
      .getByRole('status')
      .filter({ hasText: /devices/ })
      .first()
      .waitFor();
    expect(await page.getByRole('checkbox').count()).toBe(0);
    expect(await page.getByRole('form', { name: 'Change the selected devices' }).count()).toBe(0);
    expect(await seriousViolations(page)).toEqual([]);

    const refused = await page.evaluate(
      async ([groupUrl, bulkUrl]) => {
        const session = (await (await fetch('/api/session')).json()) as { data: { csrf_token: string } };
        const headers = { 'Content-Type': 'application/json', 'X-CSRF-Token': session.data.csrf_token };
        const pause = await fetch(groupUrl, {
          method: 'PATCH',
          headers,
          body: JSON.stringify({ state: 'off' }),
        });
        const tag = await fetch(bulkUrl, {
          method: 'POST',
          headers,
          body: JSON.stringify({ action: 'add_tags', filters: {}, tags: 'nope' }),
        });
        return [pause.status, tag.status];
      },
      [
        `/api/orgs/${org}/products/${product}/deployments/stable`,
        `/api/orgs/${org}/products/${product}/devices/bulk`,
      ],
    );
    expect(refused).toEqual([403, 403]);
    expect(problems).toEqual([]);
    await context.close();
  });

  it('creates a group with the keyboard alone', async () => {
    const problems: string[] = [];
    const context = await browser.newContext({ viewport: VIEWPORT });
    const page = await watchedPage(context, problems);
    await signIn(page, url, admin);
    await page.goto(`${url}/orgs/${org}/products/${product}/deployments`);
    await page.getByRole('link', { name: 'stable' }).waitFor();
    await tabTo(page, /^New deployment group$/);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'New deployment group' }).waitFor();
    await tabTo(page, /^Name$/);
    await page.keyboard.type('keyboard-made');
    await page.keyboard.press('Tab');
    // The firmware: the list's first choice after the prompt is the newest firmware (2.0.0).
    await page.keyboard.press('ArrowDown');
    expect(await page.getByLabel('Firmware', { exact: true }).inputValue()).toBe(v2.uuid);
    await tabTo(page, /^Tags$/);
    await page.keyboard.type('canary');
    await tabTo(page, /^Create group$/);
    await page.keyboard.press('Enter');
    await page.waitForURL(`${url}/orgs/${org}/products/${product}/deployments/keyboard-made`);
    const made = await t
      .http()
      .get(`/api/orgs/${org}/products/${product}/deployments/keyboard-made`)
      .set(admin.auth)
      .expect(200);
    expect(made.body.data).toMatchObject({
      state: 'off',
      firmware_uuid: v2.uuid,
      conditions: { tags: ['canary'], tag_operator: 'and', version: '' },
    });
    expect(v1.uuid).not.toBe(v2.uuid);
    expect(problems).toEqual([]);
    await context.close();
  });
});
