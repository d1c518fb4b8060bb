/* eslint-disable -- plain Node.js (CommonJS) harness, outside the TypeScript build; the repository's type-aware rules target the TypeScript sources. */
'use strict';
/**
 * CPU profile of the built server under one scenario's load (for investigating a missed goal):
 *   node bench/profile.js [--quick] [--duration=5] <path>    e.g. /api/users/me
 * Uses the seeded bench database (run the bench once first), starts `node --cpu-prof dist/src/main.js`, drives it
 * with autocannon (16 connections), stops it and prints the top functions by self time and the top packages.
 * The .cpuprofile stays in .bench-data/profiles/ (open it in Chrome DevTools).
 */
const { spawn } = require('node:child_process');
const { readdirSync, readFileSync } = require('node:fs');
const { mkdir } = require('node:fs/promises');
const { join } = require('node:path');
const autocannon = require('autocannon');
const { Client } = require('pg');
const { startDatabase } = require('./seed');
const { distDir } = require('./build');

const ROOT = join(__dirname, '..');
const argv = process.argv.slice(2);
const quick = argv.includes('--quick');
const duration = Number(argv.find((a) => a.startsWith('--duration='))?.split('=')[1] ?? 5);
const path = argv.find((a) => a.startsWith('/')) ?? '/api/users/me';

async function main() {
  const database = await startDatabase(quick ? 'quick' : 'full', (m) => process.stderr.write(`${m}\n`));
  const db = new Client({ connectionString: database.url });
  await db.connect();
  const { rows } = await db.query(`SELECT info FROM bench_seed LIMIT 1`);
  await db.end();
  const token = rows[0].info.token;
  const dir = join(ROOT, '.bench-data', 'profiles');
  await mkdir(dir, { recursive: true });
  const before = new Set(readdirSync(dir));
  const child = spawn(
    process.execPath,
    ['--cpu-prof', `--cpu-prof-dir=${dir}`, join(distDir(), 'src/main.js')],
    {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL: database.url,
        PORT: '0',
        LOG_LEVEL: 'warn',
        FLEETHUB_DATA_DIR: join(ROOT, '.bench-data/server'),
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const url = await new Promise((resolve) => {
    let out = '';
    child.stdout.on('data', (c) => {
      out += c;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]);
    });
  });
  const result = await autocannon({
    url: url + path,
    connections: 16,
    duration,
    headers: { authorization: `Bearer ${token}` },
  });
  process.stderr.write(
    `${path}: ${Math.round(result.requests.average)} req/s, p99 ${result.latency.p99} ms, non2xx ${result.non2xx}\n`,
  );
  await new Promise((r) => {
    child.once('exit', r);
    child.kill('SIGINT');
  });
  await database.stop();
  const file = readdirSync(dir).find((f) => !before.has(f) && f.endsWith('.cpuprofile'));
  const profile = JSON.parse(readFileSync(join(dir, file), 'utf8'));
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map();
  const dt = profile.timeDeltas;
  for (let i = 0; i < profile.samples.length; i++) {
    self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + (dt[i] ?? 0));
  }
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const fn = new Map();
  const pkg = new Map();
  for (const [id, us] of self) {
    const { callFrame: cf } = byId.get(id);
    const where = cf.url.replace(/^file:\/\//, '').replace(ROOT + '/', '');
    const key = `${cf.functionName || '(anonymous)'} ${where}:${cf.lineNumber + 1}`;
    fn.set(key, (fn.get(key) ?? 0) + us);
    const p =
      /node_modules\/((@[^/]+\/)?[^/]+)/.exec(where)?.[1] ??
      (where.startsWith('dist/')
        ? 'fleethub (dist)'
        : where.startsWith('node:')
          ? 'node core'
          : cf.functionName.startsWith('(')
            ? cf.functionName
            : 'other/native');
    pkg.set(p, (pkg.get(p) ?? 0) + us);
  }
  const top = (m, n) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, v]) => `${((100 * v) / total).toFixed(1).padStart(5)} %  ${k}`);
  console.log(
    `profile: ${join(dir, file)}\n\nTop packages by self time:\n${top(pkg, 15).join('\n')}\n\nTop functions by self time:\n${top(fn, 30).join('\n')}`,
  );
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
