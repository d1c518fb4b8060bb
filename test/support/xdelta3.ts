import { spawnSync } from 'node:child_process';

/**
 * Debian's xdelta3, which the fwup delta tests build and decode deltas with: installed with apt-get when it is
 * missing and the tests run as root (as .ci/run and the browser tests' Chromium), else an error that says what to
 * install.
 */
export function ensureXdelta3(): void {
  const present = () => spawnSync('xdelta3', ['-V'], { stdio: 'ignore' }).status === 0;
  if (present()) return;
  if (process.getuid?.() === 0) {
    process.stderr.write("delta tests: installing Debian's xdelta3 (apt-get install -y xdelta3)\n");
    spawnSync(
      'sh',
      ['-c', 'apt-get install -y xdelta3 || { apt-get update && apt-get install -y xdelta3; }'],
      {
        stdio: ['ignore', 'ignore', 'inherit'],
        env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      },
    );
    if (present()) return;
  }
  throw new Error(
    'the fwup delta tests need xdelta3: `apt-get install -y xdelta3` as root (npm test does it as root)',
  );
}
