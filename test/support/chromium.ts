import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';

const CHROMIUM = process.env.FLEETHUB_CHROMIUM ?? '/usr/bin/chromium';
/** The flags that work on these machines (docs: shared toolchain notes): no sandbox as root, no network chatter. */
const CHROMIUM_FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Debian's Chromium, headless, as the browser tests run it. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_FLAGS });
}

/** Where a browser test's screenshots go: test-results/, or FLEETHUB_SCREENSHOTS (the README's, docs/console). */
export async function screenshot(page: Page, name: string): Promise<void> {
  const dir = process.env.FLEETHUB_SCREENSHOTS ?? join(__dirname, '..', '..', 'test-results');
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, `${name}.png`), await page.screenshot({ fullPage: true }));
}
