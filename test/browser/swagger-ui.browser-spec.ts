import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { launchChromium } from '../support/chromium';
import type { TestUser } from '../support/fixtures';
import { listenOnLoopback } from '../support/listening-app';
import { createTestApp, type TestApp } from '../support/test-app';

const SCREENSHOT = join(__dirname, '..', '..', 'test-results', 'swagger-ui.png');

describe('Swagger UI in Chromium', () => {
  let t: TestApp;
  let url: string;
  let user: TestUser;
  let browser: Browser;
  beforeAll(async () => {
    t = await createTestApp();
    ({ url } = await listenOnLoopback(t));
    user = await t.fixtures.user({ email: `swagger-${Date.now()}@example.com` });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it('authorizes with a token and runs "Try it out" on GET /api/users/me', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
    page.setDefaultTimeout(15_000);
    const failedRequests: string[] = [];
    page.on('requestfailed', (request) => failedRequests.push(request.url()));
    await page.goto(`${url}/api/docs`);
    await page.getByRole('heading', { name: /fleethub API/ }).waitFor();

    // Authorize: the bearer_auth dialog takes the token.
    await page.locator('.auth-wrapper button.authorize').click();
    const dialog = page.locator('.dialog-ux .modal-ux');
    // The dialog lists the bearer token and the browser session's cookie: the token's form.
    const bearer = dialog.locator('form').filter({ hasText: 'bearer_auth' });
    await bearer.locator('input').first().fill(user.token);
    await bearer.locator('.auth-btn-wrapper button.authorize').click();
    await bearer.locator('.auth-btn-wrapper button.btn-done').waitFor(); // "Logout" and "Close" once authorized
    await bearer.locator('.auth-btn-wrapper button.btn-done').click();
    await dialog.waitFor({ state: 'detached' });

    // Try it out → Execute on GET /api/users/me.
    const operation = page.locator('.opblock-get').filter({
      has: page.locator('.opblock-summary-path[data-path="/api/users/me"]'),
    });
    await operation.locator('.opblock-summary').first().click();
    await operation.getByRole('button', { name: 'Try it out' }).click();
    await operation.getByRole('button', { name: 'Execute' }).click();

    const live = operation.locator('.live-responses-table .response');
    await live.first().waitFor();
    expect((await live.locator('.response-col_status').first().innerText()).trim()).toBe('200');
    const body = await live.locator('.response-col_description pre').first().innerText();
    expect(JSON.parse(body)).toMatchObject({
      data: { email: user.user.email, username: user.user.username },
    });
    // The request Swagger UI showed carries the token it was given.
    expect(await operation.locator('.curl-command').innerText()).toContain(`Bearer ${user.token}`);

    await mkdir(join(SCREENSHOT, '..'), { recursive: true });
    await operation.scrollIntoViewIfNeeded();
    await page.screenshot({ path: SCREENSHOT, fullPage: false });
    expect(failedRequests).toEqual([]);
    await page.close();
  });
});
