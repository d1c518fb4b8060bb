import { readFileSync } from 'node:fs';
import type { BrowserContext, Page } from 'playwright-core';
import type { TestUser } from './fixtures';

/** The console's browser tests: what they share (axe-core, a watched page, signing in). */

const AXE_SOURCE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
/** The password the browser tests give their users. */
export const PASSWORD = 'console test password';

interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

/** axe-core's serious and critical violations on the page as it is now (axe runs through CDP, not a page script). */
export async function seriousViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE_SOURCE);
  const violations = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run(): Promise<{ violations: AxeViolation[] }> } }).axe;
    return (await axe.run()).violations;
  });
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

/**
 * A page that records what the browser refused or failed: CSP violations (Chromium reports them as console
 * errors), failed requests, script errors. A live event stream closed by its page (the request aborted) is not a
 * failure.
 */
export async function watchedPage(context: BrowserContext, problems: string[]): Promise<Page> {
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  page.on('console', (message) => {
    // A 4xx the page answers in words (a wrong password, a refused key) is Chromium's console error, not a fault.
    if (message.type() === 'error' && !/status of 4\d\d/.test(message.text())) problems.push(message.text());
  });
  page.on('pageerror', (error) => problems.push(error.message));
  page.on('requestfailed', (request) => {
    if (/\/events(\?|$)/.test(request.url()) && request.failure()?.errorText === 'net::ERR_ABORTED') return;
    problems.push(`failed: ${request.url()}`);
  });
  return page;
}

export async function signIn(page: Page, url: string, user: TestUser): Promise<void> {
  await page.goto(url);
  await page.getByLabel('Email').fill(user.user.email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('button', { name: 'Sign out' }).waitFor();
  await productsShown(page);
}

/**
 * After sign-in the console opens the organization's products: waits until they are drawn (their request is
 * done), since a navigation right away would abort it (a failed request).
 */
export async function productsShown(page: Page): Promise<void> {
  await page.waitForURL(/\/orgs\/[^/]+\/products$/);
  await page.locator('main a[href*="/products/"]').first().waitFor();
}
