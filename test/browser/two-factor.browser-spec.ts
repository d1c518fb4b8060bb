import type { Browser, BrowserContext, Page } from 'playwright-core';
import { totpCode } from '../../src/auth/totp';
import { launchChromium, screenshot } from '../support/chromium';
import { PASSWORD, productsShown, seriousViolations, watchedPage } from '../support/console-browser';
import type { TestUser } from '../support/fixtures';
import { listenOnLoopback } from '../support/listening-app';
import { createTestApp, type TestApp } from '../support/test-app';

const STEP_MS = 30_000;

/** Waits out the last 2 s of a 30-second step, so that a code typed now is still within the server's ±1 step. */
async function freshStep(): Promise<void> {
  if (Date.now() % STEP_MS > STEP_MS - 2_000) {
    await new Promise((resolve) => setTimeout(resolve, STEP_MS - (Date.now() % STEP_MS) + 50));
  }
}

describe('two-factor sign-in in the console (Chromium)', () => {
  let t: TestApp;
  let url: string;
  let browser: Browser;
  let ada: TestUser;
  let bob: TestUser;

  beforeAll(async () => {
    t = await createTestApp({ FLEETHUB_RATE_LIMIT_LOGIN_PER_MIN: '1000' });
    ({ url } = await listenOnLoopback(t));
    ada = await t.fixtures.user({ name: 'Ada Twofactor', password: PASSWORD });
    await t.fixtures.org(ada, 'two-factor');
    await t.fixtures.product(ada, 'two-factor', 'gateway');
    bob = await t.fixtures.user({ name: 'Bob Nofactor', password: PASSWORD });
    await t.fixtures.addMember('two-factor', bob, 'manage');
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  // One browser page through the three steps (each a test of its own, so that each has the whole time budget).
  const problems: string[] = [];
  let context: BrowserContext;
  let page: Page;
  let secret: string;
  let backupCode: string;
  const label = 'Code from your authenticator app (or a backup code)';

  it('enrol from the account page: QR code, a first code, ten backup codes shown once', async () => {
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await watchedPage(context, problems);
    await page.goto(url);
    await page.getByLabel('Email').fill(ada.user.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await productsShown(page);

    await page.goto(`${url}/account`);
    const section = page.getByRole('region', { name: 'Two-factor sign-in' });
    await section.getByText('Off: a password alone signs in').waitFor();
    await section.getByRole('button', { name: 'Set up two-factor sign-in' }).click();
    const qr = section.getByRole('img', { name: 'QR code for your authenticator app' });
    await qr.waitFor();
    // The QR code is drawn (an SVG made by the server, as an image the CSP allows).
    expect(
      await qr.evaluate((img) => {
        const image = img as unknown as { complete: boolean; naturalWidth: number };
        return image.complete && image.naturalWidth > 0;
      }),
    ).toBe(true);
    secret = (await section.locator('.totp-secret').textContent())!.trim();
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'two-factor-enrol');

    // A wrong code is refused in words; the right one turns it on and shows ten backup codes once.
    await section.getByLabel(label).fill('000000' === totpCode(secret) ? '111111' : '000000');
    await section.getByRole('button', { name: 'Turn on' }).click();
    await section.getByRole('alert').getByText('The code is invalid or was already used.').waitFor();
    await freshStep();
    await section.getByLabel(label).fill(totpCode(secret));
    await section.getByRole('button', { name: 'Turn on' }).click();
    const codes = section.getByRole('region', { name: 'Backup codes' }).locator('li');
    await codes.first().waitFor();
    expect(await codes.count()).toBe(10);
    backupCode = (await codes.first().textContent())!.trim();
    await section.getByText(/On since .*10 backup codes left\./).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await section.getByRole('button', { name: 'Done' }).click();
  });

  it('signed out, a password alone is not enough: the page asks for a code, and a backup code works once', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Email').fill(ada.user.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').getByText('This account uses two-factor sign-in').waitFor();
    const codeField = page.getByLabel('Two-factor code');
    expect(await codeField.evaluate((el) => el.ownerDocument.activeElement === el)).toBe(true);
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'two-factor-sign-in');
    await freshStep();
    await codeField.fill(totpCode(secret, Date.now() + STEP_MS)); // the next step's: the current one was used
    await page.getByRole('button', { name: 'Sign in' }).click();
    await productsShown(page);

    // A backup code works once, here too.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Email').fill(ada.user.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByLabel('Two-factor code').fill(backupCode);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await productsShown(page);
    await page.goto(`${url}/account`);
    await page.getByText(/On since .*9 backup codes left\./).waitFor();
  });

  it("the admin requires two-factor sign-in of the organization's members and ends a member's sign-ins", async () => {
    await page.goto(`${url}/orgs/two-factor/members`);
    const policy = page.getByRole('region', { name: 'Sign-in policy' });
    await policy.getByLabel('Members must have two-factor sign-in on').check();
    await policy.getByRole('button', { name: 'Save policy' }).click();
    await policy.getByText('Sign-in policy saved').waitFor();
    const bobRow = page.getByRole('row', { name: new RegExp(bob.user.email) });
    await bobRow.getByText('off (refused: the policy requires it)').waitFor();
    await page
      .getByRole('row', { name: new RegExp(ada.user.email) })
      .getByRole('cell', { name: 'on', exact: true })
      .waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    await screenshot(page, 'org-policy');
    const refused = await t.http().get('/api/orgs/two-factor/products').set(bob.auth).expect(403);
    expect(refused.body.errors.detail).toContain('requires two-factor sign-in');

    // The admin ends Bob's sign-ins (after a confirmation): his token no longer works anywhere.
    page.once('dialog', (dialog) => void dialog.accept());
    // The list reloads after the change, its last request being the members' two-factor states.
    const reloaded = page.waitForResponse((response) => response.url().endsWith('/policies/members'));
    await page.getByRole('button', { name: `End sign-ins of ${bob.user.email}` }).click();
    await page
      .getByText(`Sign-ins of ${bob.user.email} ended: 0 session(s) ended, 1 token(s) revoked.`)
      .waitFor();
    await t.http().get('/api/users/me').set(bob.auth).expect(401);
    await reloaded; // a navigation before it would abort the list's reload

    // The account page lists this browser session (which it cannot end from here) and where tokens were used.
    await page.goto(`${url}/account`);
    const sessions = page.getByRole('region', { name: 'Browser sessions' });
    await sessions.getByText('(this session)').waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    expect(problems).toEqual([]);
    await context.close();
  });
});
