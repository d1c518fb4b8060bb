import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Simulator } from '../../src/cli/simulator';
import { buildFw } from '../support/fw-builder';
import type { Browser } from 'playwright-core';
import { launchChromium, screenshot } from '../support/chromium';
import { PASSWORD, seriousViolations, signIn, watchedPage } from '../support/console-browser';
import type { TestUser } from '../support/fixtures';
import { listenOnLoopback } from '../support/listening-app';
import { createTestApp, type TestApp } from '../support/test-app';

describe('the operator console in Chromium', () => {
  let t: TestApp;
  let url: string;
  let browser: Browser;
  let admin: TestUser;
  let viewer: TestUser;
  let org: string;

  beforeAll(async () => {
    t = await createTestApp();
    ({ url } = await listenOnLoopback(t));
    admin = await t.fixtures.user({ name: 'Ada Admin', password: PASSWORD });
    viewer = await t.fixtures.user({ name: 'Vic Viewer', password: PASSWORD });
    org = await t.fixtures.org(admin, 'console-org');
    await t.fixtures.addMember(org, viewer, 'view');
    await t.fixtures.product(admin, org, 'gateway');
    for (let i = 1; i <= 60; i++) {
      const identifier = `gw-${String(i).padStart(4, '0')}`;
      await t.fixtures.device(admin, org, 'gateway', identifier, { tags: i % 3 === 0 ? 'beta,lab' : 'prod' });
    }
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it('serves itself with a strict CSP and hashed, immutable assets', async () => {
    const index = await t.http().get('/orgs/anything/products').expect(200);
    expect(index.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(index.headers['cache-control']).toBe('no-cache');
    const csp = index.headers['content-security-policy'];
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toMatch(/unsafe-inline|unsafe-eval/);
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(index.text)?.[1];
    expect(script).toMatch(/^\/assets\/[\w-]+-[\w-]{8,}\.js$/);
    const asset = await t.http().get(script!).expect(200);
    expect(asset.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    await t.http().get('/assets/no-such-file.js').expect(404);
    await t.http().get('/api/no-such-route').expect(404);
  });

  it('signs in, creates a product, changes its settings and extensions, and signs out for good', async () => {
    const problems: string[] = [];
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await watchedPage(context, problems);

    await page.goto(url);
    await page.getByRole('heading', { name: 'Sign in to fleethub' }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'console-sign-in');
    await page.getByLabel('Email').fill(admin.user.email);
    await page.getByLabel('Password').fill('wrong password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: 'Wrong email or password.' }).waitFor();

    await signIn(page, url, admin);
    await page.waitForURL(`${url}/orgs/${org}/products`);
    await page.getByRole('link', { name: 'gateway' }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);

    await page.getByLabel('Name').fill('console-made');
    await page.getByRole('button', { name: 'Create product' }).click();
    await page.waitForURL(`${url}/orgs/${org}/products/console-made/settings`);
    await page.getByRole('heading', { name: 'console-made' }).waitFor();
    await page.getByLabel('Accept unsigned AtomVM firmware').check();
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page.getByRole('status').filter({ hasText: 'Settings saved.' }).waitFor();
    await page.getByLabel(/^Health/).check();
    await page.getByLabel(/^Logs/).check();
    await page.getByRole('button', { name: 'Save extensions' }).click();
    await page.getByRole('status').filter({ hasText: 'Extensions saved.' }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'console-product');

    const product = await t.http().get(`/api/orgs/${org}/products/console-made`).set(admin.auth).expect(200);
    expect(product.body.data.allow_unsigned_atomvm_firmware).toBe(true);
    const extensions = await t
      .http()
      .get(`/api/orgs/${org}/products/console-made/extensions`)
      .set(admin.auth)
      .expect(200);
    expect(extensions.body.data).toMatchObject({ health: true, logging: true, geo: false });

    // A reload keeps the session and the page (the URL is the page).
    await page.reload();
    await page.getByRole('heading', { name: 'console-made' }).waitFor();

    const cookies = await context.cookies();
    const session = cookies.find((c) => c.name === 'fleethub_session');
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByRole('heading', { name: 'Sign in to fleethub' }).waitFor();
    await t.http().get('/api/session').set('Cookie', `fleethub_session=${session!.value}`).expect(401);
    expect(problems).toEqual([]);
    await context.close();
  });

  it('devices: server-side pages, filters kept in the URL, a device found and edited', async () => {
    const problems: string[] = [];
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await watchedPage(context, problems);
    await signIn(page, url, admin);
    await page.getByRole('link', { name: 'gateway' }).click();
    await page.waitForURL(`${url}/orgs/${org}/products/gateway`);
    await page.getByRole('link', { name: 'Devices', exact: true }).click();
    await page.waitForURL(`${url}/orgs/${org}/products/gateway/devices`);
    await page.getByRole('status').filter({ hasText: '60 devices, page 1 of 2' }).waitFor();
    expect(await page.locator('table.devices tbody tr').count()).toBe(50);
    await page.getByRole('button', { name: 'Next page' }).click();
    await page.getByRole('status').filter({ hasText: 'page 2 of 2' }).waitFor();
    expect(await page.locator('table.devices tbody tr').count()).toBe(10);
    expect(await seriousViolations(page)).toEqual([]);

    await page.getByLabel('Tags (all of, comma-separated)').fill('beta');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await page
      .getByRole('status')
      .filter({ hasText: /^20 devices$/ })
      .waitFor();
    expect(new URL(page.url()).searchParams.get('tags')).toBe('beta');
    await page.getByRole('button', { name: 'Identifier' }).click(); // already ascending: now descending
    await page.waitForURL(/dir=desc/);
    // A locator, not a string for waitForFunction: polling a string means eval, which the console's CSP refuses.
    await page.locator('table.devices tbody tr:first-child th', { hasText: /^gw-0060$/ }).waitFor();
    await screenshot(page, 'console-devices');

    // The URL is the list: opened anew (shared), it shows the same devices.
    const shared = page.url();
    const other = await watchedPage(context, problems);
    await other.goto(shared);
    await other
      .getByRole('status')
      .filter({ hasText: /^20 devices$/ })
      .waitFor();
    await expect(other.getByLabel('Tags (all of, comma-separated)').inputValue()).resolves.toBe('beta');
    await other.close();

    // Opened signed out, the page's list is asked for with the session and refused; signed in there, the page
    // reads its list again, and does not show that refusal.
    const signedOut = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const late = await watchedPage(signedOut, problems);
    await late.goto(`${url}/orgs/${org}/products/gateway/devices`);
    await late.getByLabel('Email').fill(admin.user.email);
    await late.getByLabel('Password').fill(PASSWORD);
    await late.getByRole('button', { name: 'Sign in' }).click();
    await late.getByRole('status').filter({ hasText: '60 devices, page 1 of 2' }).waitFor();
    expect(await late.getByRole('alert').count()).toBe(0);
    await signedOut.close();

    await page.getByRole('button', { name: 'Clear' }).click();
    await page.getByLabel('Identifier contains').fill('gw-0042');
    await page.keyboard.press('Enter');
    await page
      .getByRole('status')
      .filter({ hasText: /^1 device$/ })
      .waitFor();
    await page.getByRole('link', { name: 'gw-0042' }).click();
    await page.getByRole('heading', { name: 'gw-0042' }).waitFor();
    await page.getByLabel('Description').fill('on the roof');
    await page.getByRole('button', { name: 'Save device' }).click();
    await page.getByRole('status').filter({ hasText: 'Device saved.' }).waitFor();
    await page.getByLabel('logging').uncheck();
    await page.getByRole('button', { name: 'Save extensions' }).click();
    await page.getByRole('status').filter({ hasText: 'Extensions saved.' }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'console-device');
    const device = await t.http().get(`/api/devices/gw-0042`).set(admin.auth).expect(200);
    expect(device.body.data.description).toBe('on the roof');
    const optOuts = await t
      .http()
      .get(`/api/orgs/${org}/products/gateway/devices/gw-0042/extensions`)
      .set(admin.auth)
      .expect(200);
    expect(optOuts.body.data.logging).toBe(false);
    expect(problems).toEqual([]);
    await context.close();
  });

  it('members, signing keys and the audit log: what an admin sees and does', async () => {
    const problems: string[] = [];
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await watchedPage(context, problems);
    await signIn(page, url, admin);
    await page.getByRole('link', { name: 'Members' }).click();
    await page.getByRole('heading', { name: 'Members' }).waitFor();
    await page.getByRole('row', { name: new RegExp(viewer.user.email) }).waitFor();
    await page.getByLabel('Email').fill('newcomer@example.com');
    await page.getByLabel('Role', { exact: true }).selectOption('manage');
    await page.getByRole('button', { name: 'Invite' }).click();
    await page.getByRole('status').filter({ hasText: 'Invitation sent to newcomer@example.com.' }).waitFor();
    await page.getByRole('button', { name: 'Revoke the invitation of newcomer@example.com' }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'console-members');

    await page.getByRole('link', { name: 'Signing keys' }).click();
    await page.getByRole('heading', { name: 'Signing keys' }).waitFor();
    const key = Buffer.alloc(32, 7).toString('base64');
    await page.getByLabel('Name').fill('release');
    await page.getByLabel('Public key (fwup-key.pub)').fill(key);
    await page.getByRole('button', { name: 'Add key' }).click();
    await page.getByRole('cell', { name: key }).waitFor();
    await page.getByLabel('Name').fill('bad');
    await page.getByLabel('Public key (fwup-key.pub)').fill('not a key');
    await page.getByRole('button', { name: 'Add key' }).click();
    await page.getByRole('alert').waitFor();
    expect(await seriousViolations(page)).toEqual([]);

    await page.getByRole('link', { name: 'Audit log' }).click();
    await page.getByRole('heading', { name: 'Audit log' }).waitFor();
    await page.getByRole('rowheader', { name: 'signing_key.create' }).first().waitFor();
    const href = (await page.getByRole('link', { name: 'Export as CSV' }).getAttribute('href'))!;
    // Fetched by the page: the session cookie is the credential, as for the link itself.
    const csv = await page.evaluate(async (link) => {
      const res = await fetch(link);
      return { status: res.status, type: res.headers.get('content-type'), text: await res.text() };
    }, href);
    expect(csv.status).toBe(200);
    expect(csv.type).toContain('text/csv');
    expect(csv.text).toContain('signing_key.create');
    expect(await seriousViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
    await context.close();
  });

  it('firmware: a refused file is explained in words, a signed one is uploaded, listed and deleted', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'fleethub-console-'));
    try {
      const key = await t.fixtures.signingKey(org, 'fw-key');
      const signed = await buildFw(join(dir, 'gateway.fw'), {
        signWith: key.privateKey,
        meta: { product: 'gateway', version: '2.4.6' },
      });
      const junk = join(dir, 'notes.fw');
      await writeFile(junk, 'this is not a firmware file');
      const problems: string[] = [];
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      const page = await watchedPage(context, problems);
      await signIn(page, url, admin);
      await page.goto(`${url}/orgs/${org}/products/gateway/firmware`);
      await page.getByText('No firmware uploaded yet.').waitFor();

      await page.getByLabel(/^Firmware file/).setInputFiles(junk);
      await page.getByRole('button', { name: 'Upload' }).click();
      const refusal = await page.getByRole('alert').textContent();
      expect(refusal).toMatch(/^Firmware /); // the field named, in words
      expect(await page.getByRole('row').count()).toBe(0);

      await page.getByLabel(/^Firmware file/).setInputFiles(signed.path);
      await page.getByRole('button', { name: 'Upload' }).click();
      await page.getByRole('status').filter({ hasText: 'Firmware 2.4.6 uploaded.' }).waitFor();
      await page.getByRole('rowheader', { name: '2.4.6' }).waitFor();
      expect(await seriousViolations(page)).toEqual([]);
      await screenshot(page, 'console-firmware');
      const listed = await t
        .http()
        .get(`/api/orgs/${org}/products/gateway/firmwares`)
        .set(admin.auth)
        .expect(200);
      expect(listed.body.data.map((f: { version: string }) => f.version)).toEqual(['2.4.6']);

      page.once('dialog', (dialog) => void dialog.accept());
      await page.getByRole('button', { name: 'Delete firmware 2.4.6' }).click();
      await page.getByRole('status').filter({ hasText: 'Firmware 2.4.6 deleted.' }).waitFor();
      await t
        .http()
        .get(`/api/orgs/${org}/products/gateway/firmwares`)
        .set(admin.auth)
        .expect(200, { data: [] });
      expect(problems).toEqual([]);
      await context.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('support scripts: created, edited, and sent to a connected (simulated) device, its output shown', async () => {
    const secret = await t
      .http()
      .post(`/api/orgs/${org}/products/gateway/shared_secrets`)
      .set(admin.auth)
      .send({})
      .expect(201);
    const simulator = new Simulator({
      url,
      key: secret.body.data.key,
      secret: secret.body.data.secret,
      devices: 1,
      prefix: 'console-sim-',
      firmware: { version: '3.2.1' },
    });
    simulator.start(0);
    try {
      const problems: string[] = [];
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      const page = await watchedPage(context, problems);
      await signIn(page, url, admin);
      await page.goto(`${url}/orgs/${org}/products/gateway/scripts`);
      await page.getByRole('group', { name: 'New script' }).waitFor();
      await page.getByLabel('Name').fill('whoami');
      await page.getByLabel('Elixir code').fill('IO.puts("hello")');
      await page.getByRole('button', { name: 'Create script' }).click();
      await page.getByRole('status').filter({ hasText: 'Script whoami created.' }).waitFor();
      await page.getByRole('button', { name: 'Edit whoami' }).click();
      await page
        .getByLabel('Elixir code')
        .fill('IO.puts(Nerves.Runtime.serial_number())\nNerves.Runtime.KV.get("nerves_fw_version")');
      await page.getByRole('button', { name: 'Save script' }).click();
      await page.getByRole('status').filter({ hasText: 'Script whoami saved.' }).waitFor();

      await page.getByLabel('Device identifier').fill('console-sim-0001');
      await page.getByLabel('Script', { exact: true }).selectOption({ label: 'whoami' });
      for (let attempt = 0; ; attempt++) {
        await page.getByRole('button', { name: 'Send script' }).click();
        const answered = page.getByRole('region', { name: 'Script output' });
        const refused = page.getByRole('alert');
        await answered.or(refused).first().waitFor();
        if ((await answered.count()) > 0 || attempt === 20) break;
        await page.waitForTimeout(250); // the simulated device is still connecting
      }
      await expect(page.locator('pre.output').textContent()).resolves.toBe('console-sim-0001\n\n"3.2.1"');
      expect(await seriousViolations(page)).toEqual([]);
      await screenshot(page, 'console-scripts');
      await context.close();
      expect(problems).toEqual([]);
    } finally {
      await simulator.stop();
    }
  });

  it('account page: a token is created and shown once, works, and is revoked', async () => {
    const problems: string[] = [];
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await watchedPage(context, problems);
    await signIn(page, url, admin);
    await page.getByRole('link', { name: 'Account' }).click();
    await page.getByRole('heading', { name: 'Personal access tokens' }).waitFor();
    await page.getByLabel('Note').fill('from the console');
    await page.getByLabel('Scope').selectOption('read');
    await page.getByRole('button', { name: 'Create token' }).click();
    const shown = await page.getByRole('region', { name: 'New token' }).locator('output').textContent();
    expect(shown).toMatch(/^nhu_[0-9A-Za-z]+$/);
    await t.http().get('/api/users/me').set('Authorization', `Bearer ${shown!}`).expect(200);
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'console-account');
    await page.getByRole('button', { name: 'Done' }).click();
    await page.getByText(shown!).waitFor({ state: 'detached' });
    await expect(page.getByText(shown!).count()).resolves.toBe(0);
    await page.getByRole('button', { name: 'Revoke token from the console' }).click();
    await page.getByRole('status').filter({ hasText: 'revoked' }).waitFor();
    await t.http().get('/api/users/me').set('Authorization', `Bearer ${shown!}`).expect(401);
    expect(problems).toEqual([]);
    await context.close();
  });

  it("the device page offers every action of the member's role: a manager's, then none to a viewer", async () => {
    await t.fixtures.product(admin, org, 'store');
    const firmware = await t.fixtures.firmware(admin, org, 'gateway', { version: '3.0.0' });
    // gw-0050 in the deployment penalty box, as a rollout would leave it.
    await t.db.query(
      `UPDATE devices SET updates_blocked_until = now() + interval '1 hour', update_attempts = ARRAY[now()]
        WHERE identifier = 'gw-0050'`,
    );
    const shown = async (product: string, identifier: string) =>
      (
        await t
          .http()
          .get(`/api/orgs/${org}/products/${product}/devices/${identifier}`)
          .set(admin.auth)
          .expect(200)
      ).body.data as { updates_enabled: boolean; updates_blocked_until: string | null; tags: string };

    const problems: string[] = [];
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await watchedPage(context, problems);
    await signIn(page, url, admin);
    await page.goto(`${url}/orgs/${org}/products/gateway/devices/gw-0050`);
    await page.getByRole('heading', { name: 'gw-0050' }).waitFor();
    for (const name of [
      'Reboot',
      'Reconnect',
      'Turn automatic updates off',
      'Clear penalty box',
      'Delete device',
    ]) {
      await page.getByRole('button', { name, exact: true }).waitFor();
    }
    await page.getByRole('button', { name: 'Push update' }).waitFor();
    await page.getByRole('button', { name: 'Save device' }).waitFor();
    await page.getByRole('button', { name: 'Move…' }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);

    // Out of the penalty box: no block, automatic updates on (the button goes with the block).
    await page.getByRole('button', { name: 'Clear penalty box' }).click();
    await page.getByRole('status').filter({ hasText: 'Penalty box cleared' }).waitFor();
    await page.getByRole('button', { name: 'Clear penalty box' }).waitFor({ state: 'detached' });
    expect(await shown('gateway', 'gw-0050')).toMatchObject({
      updates_enabled: true,
      updates_blocked_until: null,
    });
    // Automatic updates off, and on again.
    await page.getByRole('button', { name: 'Turn automatic updates off' }).click();
    await page.getByRole('status').filter({ hasText: 'Automatic updates turned off.' }).waitFor();
    expect((await shown('gateway', 'gw-0050')).updates_enabled).toBe(false);
    await page.getByRole('button', { name: 'Turn automatic updates on' }).click();
    await page.getByRole('status').filter({ hasText: 'Automatic updates turned on.' }).waitFor();
    expect((await shown('gateway', 'gw-0050')).updates_enabled).toBe(true);
    // An upgrade, requested from the page.
    await page.getByLabel('Firmware', { exact: true }).selectOption(firmware.uuid);
    await page.getByRole('button', { name: 'Push update' }).click();
    await page.getByRole('status').filter({ hasText: 'Update requested.' }).waitFor();
    const [pending] = await t.db.query<{ n: string }[]>(
      `SELECT count(*) AS n FROM pending_updates pu JOIN devices d ON d.id = pu.device_id
        WHERE d.identifier = 'gw-0050'`,
    );
    expect(Number(pending.n)).toBe(1);
    // Tags edited.
    await page.getByLabel('Tags (comma-separated)').fill('moved, roof');
    await page.getByRole('button', { name: 'Save device' }).click();
    await page.getByRole('status').filter({ hasText: 'Device saved.' }).waitFor();
    expect((await shown('gateway', 'gw-0050')).tags).toBe('moved,roof');

    // Moved to another product, after a confirmation; the page follows it to its new address.
    await page.getByLabel('Product', { exact: true }).selectOption('store');
    await page.getByRole('button', { name: 'Move…' }).click();
    const dialog = page.getByRole('dialog', { name: 'Move gw-0050' });
    await dialog.getByText('leaves its deployment group').waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await dialog.getByRole('button', { name: 'Move the device' }).click();
    await page.waitForURL(`${url}/orgs/${org}/products/store/devices/gw-0050`);
    await dialog.waitFor({ state: 'hidden' }); // it closes as the page follows the device
    await page.getByRole('heading', { level: 1, name: 'gw-0050', exact: true }).waitFor();
    await shown('store', 'gw-0050');
    await t.http().get(`/api/orgs/${org}/products/gateway/devices/gw-0050`).set(admin.auth).expect(404);

    // Deleted, after the browser's confirmation: back to the list, the device gone.
    page.once('dialog', (question) => void question.accept());
    await page.getByRole('button', { name: 'Delete device' }).click();
    await page.waitForURL(`${url}/orgs/${org}/products/store/devices`);
    await t.http().get(`/api/orgs/${org}/products/store/devices/gw-0050`).set(admin.auth).expect(404);
    expect(problems).toEqual([]);
    await context.close();

    // A view member: the same page, no action.
    const viewing = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const viewerPage = await watchedPage(viewing, problems);
    await signIn(viewerPage, url, viewer);
    await viewerPage.goto(`${url}/orgs/${org}/products/gateway/devices/gw-0051`);
    await viewerPage.getByRole('heading', { name: 'gw-0051' }).waitFor();
    await viewerPage.getByRole('heading', { name: 'Firmware update' }).waitFor();
    expect(
      await viewerPage
        .getByRole('button', {
          name: /Reboot|Reconnect|automatic updates|penalty box|Delete|Move|Push update|Save/,
        })
        .count(),
    ).toBe(0);
    expect(await viewerPage.getByLabel('Tags (comma-separated)').isDisabled()).toBe(true);
    expect(await seriousViolations(viewerPage)).toEqual([]);
    expect(problems).toEqual([]);
    await viewing.close();
  }, 180_000);

  it('a view member is offered no change, and the server refuses one from its session anyway', async () => {
    const problems: string[] = [];
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await watchedPage(context, problems);
    await signIn(page, url, viewer);
    await page.waitForURL(`${url}/orgs/${org}/products`);
    await page.getByRole('link', { name: 'gateway' }).waitFor();
    expect(await page.getByRole('button', { name: 'Create product' }).count()).toBe(0);
    expect(await page.getByRole('link', { name: 'Audit log' }).count()).toBe(0);
    await page.getByRole('link', { name: 'gateway' }).click();
    await page.getByRole('heading', { name: 'gateway' }).waitFor();
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByRole('group', { name: 'Device extensions' }).waitFor();
    expect(await page.getByRole('button', { name: /^Save/ }).count()).toBe(0);
    expect(await page.getByLabel(/^Health/).isDisabled()).toBe(true);
    expect(await seriousViolations(page)).toEqual([]);

    const extensionsUrl = `/api/orgs/${org}/products/gateway/extensions`;
    const refused = await page.evaluate(async (target) => {
      const session = (await (await fetch('/api/session')).json()) as { data: { csrf_token: string } };
      const res = await fetch(target, {
        method: 'PATCH',
        headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': session.data.csrf_token },
        body: JSON.stringify({ health: true }),
      });
      return res.status;
    }, extensionsUrl);
    expect(refused).toBe(403);
    expect(problems).toEqual([]);
    await context.close();
  });

  it('is usable with the keyboard alone: sign in and reach a product', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await watchedPage(context, []);
    await page.goto(url);
    await page.getByLabel('Email').focus();
    await page.keyboard.type(admin.user.email);
    await page.keyboard.press('Tab');
    await page.keyboard.type(PASSWORD);
    await page.keyboard.press('Enter');
    await page.getByRole('link', { name: 'gateway' }).waitFor();
    await page.getByRole('link', { name: 'gateway' }).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'gateway' }).waitFor();
    await context.close();
  });
});
