import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/**
 * The build this harness was compiled into (tsc's outDir: a folder of the run under node_modules/.cache, or
 * dist/): the server the harness runs is the one compiled with it, `<BUILD_DIR>/src/main.js`.
 */
export const BUILD_DIR = join(__dirname, '..');

/** The checkout: the first folder above the build holding a package.json. */
function checkout(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json in or above ${from}`);
  }
}

/**
 * run.sh names the checkout it runs in (BENCH_ROOT): the build folder's real path can be another checkout's when
 * node_modules is a link to it (git worktrees sharing one node_modules).
 */
export const ROOT = process.env.BENCH_ROOT || checkout(BUILD_DIR);
/** The embedded database, the server's data folder, scratch files and CPU profiles. */
export const BENCH_DATA = join(ROOT, '.bench-data');

/** What `npm run start:prod` gives `node` before the entry point: the server runs here as it runs in production. */
export const PRODUCTION_NODE_FLAGS = (
  JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }
).scripts['start:prod']
  .split(/\s+/)
  .slice(1, -1);

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
