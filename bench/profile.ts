/**
 * CPU profile of the built server under one path's load (for investigating a missed goal):
 *   npm run bench:profile -- [--quick] [--duration=5] [--connections=16] <path>    e.g. /api/users/me
 * Uses the seeded bench database (run the bench once first), starts `node --cpu-prof <build>/src/main.js` with the
 * harness's settings, drives it with autocannon, stops it and prints the server's CPU time per request, the top
 * packages and the top functions by self time. The .cpuprofile stays in .bench-data/profiles/ (open it in Chrome
 * DevTools).
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { Client } from 'pg';
import { BENCH_DATA, BUILD_DIR, ROOT } from './paths';
import { procStat } from './processes';
import { type SeedInfo, startDatabase } from './seed';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const argv = process.argv.slice(2);
const option = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
const quick = argv.includes('--quick');
const duration = Number(option('duration') ?? 5);
const connections = Number(option('connections') ?? 16);
const path = argv.find((a) => a.startsWith('/')) ?? '/api/users/me';

async function main(): Promise<void> {
  const database = await startDatabase(quick ? 'quick' : 'full', (m) => process.stderr.write(`${m}\n`));
  const db = new Client({ connectionString: database.url });
  await db.connect();
  const { rows } = await db.query<{ info: SeedInfo }>(`SELECT info FROM bench_seed LIMIT 1`);
  await db.end();
  const token = rows[0].info.token;
  const dir = join(BENCH_DATA, 'profiles');
  await mkdir(dir, { recursive: true });
  const before = new Set(readdirSync(dir));
  const child = spawn(
    process.execPath,
    ['--cpu-prof', `--cpu-prof-dir=${dir}`, join(BUILD_DIR, 'src/main.js')],
    {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL: database.url,
        PORT: '0',
        LOG_LEVEL: 'warn',
        FLEETHUB_DATA_DIR: join(BENCH_DATA, 'server'),
        FLEETHUB_RATE_LIMIT_API_PER_MIN: '10000000',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const url = await new Promise<string>((resolve) => {
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]);
    });
  });
  const cpu0 = procStat(child.pid).cpuSeconds;
  const result = await autocannon({
    url: url + path,
    connections,
    duration,
    headers: { authorization: `Bearer ${token}` },
  });
  const cpu1 = procStat(child.pid).cpuSeconds;
  process.stderr.write(
    `${path}: ${Math.round(result.requests.average)} req/s, p99 ${result.latency.p99} ms, non2xx ${result.non2xx}; ` +
      `server CPU ${((1000 * (cpu1 - cpu0)) / result.requests.total).toFixed(3)} ms per request (under --cpu-prof)\n`,
  );
  await new Promise((resolve) => {
    child.once('exit', resolve);
    child.kill('SIGINT');
  });
  await database.stop();
  const file = readdirSync(dir).find((f) => !before.has(f) && f.endsWith('.cpuprofile'));
  if (!file) throw new Error(`no new .cpuprofile in ${dir}`);
  const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const fn = new Map<string, number>();
  const pkg = new Map<string, number>();
  for (const [id, us] of self) {
    const { callFrame: cf } = byId.get(id)!;
    const where = cf.url.replace(/^file:\/\//, '').replace(`${ROOT}/`, '');
    const key = `${cf.functionName || '(anonymous)'} ${where}:${cf.lineNumber + 1}`;
    fn.set(key, (fn.get(key) ?? 0) + us);
    const owner =
      /node_modules\/((@[^/]+\/)?[^/]+)/.exec(
        where.replace(/^.*node_modules\/\.cache\/[^/]+\/[^/]+\//, ''),
      )?.[1] ??
      (where.includes('/src/') || where.startsWith('dist/')
        ? 'fleethub'
        : where.startsWith('node:')
          ? 'node core'
          : cf.functionName.startsWith('(')
            ? cf.functionName
            : 'other/native');
    pkg.set(owner, (pkg.get(owner) ?? 0) + us);
  }
  const top = (m: Map<string, number>, n: number) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, v]) => `${((100 * v) / total).toFixed(1).padStart(5)} %  ${k}`);
  process.stdout.write(
    `profile: ${join(dir, file)}\n\nTop packages by self time:\n${top(pkg, 15).join('\n')}\n\n` +
      `Top functions by self time:\n${top(fn, 30).join('\n')}\n`,
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
