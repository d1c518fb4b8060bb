import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../support/chromium';
import type { TestUser } from '../support/fixtures';
import { listenOnLoopback } from '../support/listening-app';
import { createTestApp, type TestApp } from '../support/test-app';

const PASSWORD = 'correct horse battery staple';

interface Started {
  token: string;
  url: string;
  confirmation_code: string;
}

describe('the CLI sign-in page in Chromium', () => {
  let t: TestApp;
  let url: string;
  let ada: TestUser;
  let browser: Browser;
  beforeAll(async () => {
    t = await createTestApp({ FLEETHUB_RATE_LIMIT_LOGIN_PER_MIN: '1000' });
    ({ url } = await listenOnLoopback(t));
    ada = await t.fixtures.user({ password: PASSWORD });
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  const start = async (): Promise<Started> =>
    (await t.http().post('/api/auth/cli_session').send({ note: 'browser test' }).expect(200)).body
      .data as Started;
  const poll = (token: string) => t.http().get(`/api/auth/cli_session/${token}`);

  /** A page that records console errors (CSP violations among them) and failed requests. */
  async function openPage(path: string): Promise<{ page: Page; problems: string[] }> {
    const page = await browser.newPage();
    page.setDefaultTimeout(15_000);
    const problems: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text());
    });
    page.on('requestfailed', (r) => problems.push(`failed: ${r.url()}`));
    await page.goto(`${url}${path}`);
    return { page, problems };
  }

  it('typing the code, email and password and approving signs the CLI in; mistakes are announced', async () => {
    const session = await start();
    const { page, problems } = await openPage(new URL(session.url).pathname);
    await page.getByRole('heading', { level: 1, name: 'Approve a command-line sign-in' }).waitFor();
    // The page is styled by its hashed stylesheet (the CSP allows it): the button is blue, not the default.
    const background = await page
      .getByRole('button', { name: 'Approve sign-in' })
      .evaluate((el) => el.ownerDocument.defaultView!.getComputedStyle(el).backgroundColor);
    expect(background).toBe('rgb(29, 78, 216)');

    // A wrong code: the error is an alert, the field is marked invalid, the email is kept.
    const wrong = session.confirmation_code === '111111' ? '222222' : '111111';
    await page.getByLabel('Confirmation code').fill(wrong);
    await page.getByLabel('Email').fill(ada.user.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Approve sign-in' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    expect(await alert.innerText()).toContain('does not match the one the command-line tool shows');
    expect(await page.getByLabel('Confirmation code').getAttribute('aria-invalid')).toBe('true');
    expect(await page.getByLabel('Email').inputValue()).toBe(ada.user.email);
    await poll(session.token).expect(200, { data: { status: 'waiting' } });

    await page.getByLabel('Confirmation code').fill(session.confirmation_code);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Approve sign-in' }).click();
    await page.getByRole('heading', { level: 1, name: 'Sign-in approved' }).waitFor();
    expect(await page.getByRole('status').innerText()).toContain('return to it');

    const ready = await poll(session.token).expect(200);
    expect(ready.body.data).toEqual({ status: 'ready', user_token: expect.stringMatching(/^nhu_/) });
    // Only the wrong code's 422 (the page's status): no CSP violation, no failed request.
    expect(problems).toEqual([
      'Failed to load resource: the server responded with a status of 422 (Unprocessable Entity)',
    ]);
    await page.close();
  });

  it('Deny needs no credentials; the link is then invalid', async () => {
    const session = await start();
    const { page, problems } = await openPage(`/auth/cli/${session.token}`);
    await page.getByRole('button', { name: 'Deny' }).click();
    await page.getByRole('heading', { level: 1, name: 'Sign-in denied' }).waitFor();
    await poll(session.token).expect(404);
    await page.goto(`${url}/auth/cli/${session.token}`);
    await page.getByRole('heading', { level: 1, name: 'This sign-in link is not valid' }).waitFor();
    expect(problems.filter((p) => !p.includes('404'))).toEqual([]);
    await page.close();
  });
});
