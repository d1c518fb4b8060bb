import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';

const DEBIAN_CHROMIUM = '/usr/bin/chromium';
const CHROMIUM = process.env.FLEETHUB_CHROMIUM ?? DEBIAN_CHROMIUM;
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

/**
 * Debian's Chromium for the browser tests (`npm test` runs them): installed with apt-get when it is missing and
 * the tests run as root (the browser project's global setup calls this once, before any worker starts), else left
 * for launchChromium to say what is missing.
 */
export function ensureChromium(): void {
  if (existsSync(CHROMIUM) || process.getuid?.() !== 0 || CHROMIUM !== DEBIAN_CHROMIUM) return;
  process.stderr.write("browser tests: installing Debian's Chromium (apt-get install -y chromium)\n");
  spawnSync(
    'sh',
    ['-c', 'apt-get install -y chromium || { apt-get update && apt-get install -y chromium; }'],
    { stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } },
  );
}

/** Debian's Chromium, headless, as the browser tests run it. */
export function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `the browser tests need Chromium at ${CHROMIUM}: \`apt-get install -y chromium\` as root ` +
        '(npm test does it itself when run as root), or FLEETHUB_CHROMIUM=<path to a Chromium>',
    );
  }
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_FLAGS });
}

/** Where a browser test's screenshots go: test-results/, or FLEETHUB_SCREENSHOTS (the README's, docs/console). */
export async function screenshot(page: Page, name: string): Promise<void> {
  const dir = process.env.FLEETHUB_SCREENSHOTS ?? join(__dirname, '..', '..', 'test-results');
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, `${name}.png`), await page.screenshot({ fullPage: true }));
}
