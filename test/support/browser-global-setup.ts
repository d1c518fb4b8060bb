import { ensureChromium } from './chromium';
import globalSetup from './global-setup';

/** The browser project's global setup: Chromium first (apt-get as root when missing), then the shared database. */
export default async function browserGlobalSetup(): Promise<void> {
  ensureChromium();
  await globalSetup();
}
