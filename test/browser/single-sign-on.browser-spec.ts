import { createServer } from 'node:net';
import type { Browser } from 'playwright-core';
import { launchChromium, screenshot } from '../support/chromium';
import { productsShown, seriousViolations } from '../support/console-browser';
import type { TestUser } from '../support/fixtures';
import { TestIdentityProvider } from '../support/oidc-provider';
import { createTestApp, type TestApp } from '../support/test-app';

const CLIENT_ID = 'fleethub';
const CLIENT_SECRET = 'browser-test-client-secret';

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('single sign-on in the console (Chromium, against a real OpenID Connect provider)', () => {
  let idp: TestIdentityProvider;
  let t: TestApp;
  let url: string;
  let browser: Browser;
  let ada: TestUser;

  beforeAll(async () => {
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    idp = new TestIdentityProvider(CLIENT_ID, CLIENT_SECRET, `${url}/auth/oidc/callback`);
    await idp.start();
    t = await createTestApp({
      FLEETHUB_PUBLIC_URL: url,
      FLEETHUB_OIDC_ISSUER: idp.issuerUrl,
      FLEETHUB_OIDC_CLIENT_ID: CLIENT_ID,
      FLEETHUB_OIDC_CLIENT_SECRET: CLIENT_SECRET,
      FLEETHUB_OIDC_NAME: 'Example IdP',
    });
    await t.app.listen(port, '127.0.0.1');
    ada = await t.fixtures.user({ name: 'Ada Federated' });
    await t.fixtures.org(ada, 'federated');
    await t.fixtures.product(ada, 'federated', 'gateway');
    idp.accounts.set('ada-at-idp', { email: ada.user.email, email_verified: true, name: 'Ada' });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await idp?.stop();
  });

  it("signs in through the provider's pages and lands in the console, signed in", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    page.setDefaultTimeout(15_000);
    // Only fleethub's own pages are judged (the provider's development pages are the provider's business).
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(error.message));
    page.on('console', (message) => {
      // A 4xx the console answers in words (GET /api/session before signing in is a 401) is not a fault.
      const answered = /status of 4\d\d/.test(message.text());
      if (message.type() === 'error' && page.url().startsWith(url) && !answered)
        problems.push(message.text());
    });
    await page.goto(url);
    const button = page.getByRole('link', { name: 'Sign in with Example IdP' });
    await button.waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'single-sign-on');
    await button.click();

    // The provider's login and consent pages.
    await page.locator('input[name="login"]').fill('ada-at-idp');
    await page.locator('input[name="password"]').fill('any password');
    await page.locator('button[type="submit"]').first().click();
    await page.locator('button[type="submit"]').first().click(); // consent

    await productsShown(page);
    await page.getByText('Ada Federated').waitFor();
    expect(problems).toEqual([]);
    await context.close();
  });
});
