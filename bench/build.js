/* eslint-disable -- plain Node.js (CommonJS) harness, outside the TypeScript build; the repository's type-aware rules target the TypeScript sources. */
'use strict';
/**
 * The server the harness runs: `tsc -p tsconfig.build.json` (the same build as `npm run build`) into
 * node_modules/.cache/fleethub-bench/dist, so that a concurrent `npm run build` (which starts with `rm -rf dist`)
 * cannot pull the server out from under a run. Under node_modules because ESLint, Prettier, Jest and tsc all skip
 * it there (a build under .bench-data/ would be linted by `eslint .`), and modules still resolve from the
 * checkout's node_modules. BENCH_DIST=<dir> skips the build and runs that directory's src/main.js instead
 * (e.g. BENCH_DIST=dist after `npm run build`).
 */
const { execFile } = require('node:child_process');
const { existsSync } = require('node:fs');
const { rm } = require('node:fs/promises');
const { join, resolve } = require('node:path');

const ROOT = join(__dirname, '..');
const DEFAULT_DIST = join(ROOT, 'node_modules', '.cache', 'fleethub-bench', 'dist');
/** Where the harness's build is (or BENCH_DIST). */
const distDir = () => (process.env.BENCH_DIST ? resolve(ROOT, process.env.BENCH_DIST) : DEFAULT_DIST);

async function buildServer(log) {
  if (process.env.BENCH_DIST) {
    log(`server build: using BENCH_DIST=${process.env.BENCH_DIST}`);
    return resolve(ROOT, process.env.BENCH_DIST);
  }
  const out = DEFAULT_DIST;
  await rm(out, { recursive: true, force: true });
  const started = Date.now();
  await new Promise((resolve, reject) =>
    execFile(
      process.execPath,
      [
        join(ROOT, 'node_modules/typescript/bin/tsc'),
        '-p',
        'tsconfig.build.json',
        '--outDir',
        out,
        '--sourceMap',
        'false',
      ],
      { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (!err) return resolve();
        // Type errors still emit JavaScript (someone may be mid-edit): run it, but say so.
        if (existsSync(join(out, 'src/main.js'))) {
          log(
            `server build: tsc reported errors (JavaScript emitted anyway):\n${`${stdout}${stderr}`.slice(0, 2000)}`,
          );
          return resolve();
        }
        reject(new Error(`build failed (tsc -p tsconfig.build.json):\n${stdout}${stderr}`));
      },
    ),
  );
  log(
    `server build: tsc -p tsconfig.build.json → node_modules/.cache/fleethub-bench/dist in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
  return out;
}

module.exports = { buildServer, distDir };
