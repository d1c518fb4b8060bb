/**
 * One path's cost on one server, for investigating a goal (uses the seeded bench database: run the bench once first):
 *   npm run bench:profile -- [--quick] [--floor | --framework-floor] [--no-cpu-prof] [--runs=3]
 *                            [--requests=N | --duration=5] [--connections=16] [--warm-path=P] <path>   e.g. /api/users/me
 * Starts the built server (or, with --floor, the floor; with --framework-floor, the framework floor, which answers
 * /api/users/me only) with the harness's settings, warms it up for a second, then
 * (with --warm-path, first P for `--warm-seconds` (5) unmeasured: a server that has answered other routes first)
 * drives it with autocannon `runs` times and prints for each run the requests per second and the server's CPU time
 * per request (user and system, from /proc), then the medians. Under `--cpu-prof` (the default; --no-cpu-prof for
 * clean numbers: the profiler itself costs CPU) it also prints the top packages and functions by self time; the
 * .cpuprofile stays in .bench-data/profiles/ (open it in Chrome DevTools).
 *
 * `--callgrind [--requests=N] [--idle-seconds=S]`: instructions instead of seconds. The server runs under valgrind's
 * callgrind with instrumentation off until it is warm (`--warm-requests`, 20,000 by default, at native speed), then
 * counts every instruction its threads execute (its JIT-compiled code, V8's collector and compiler threads, libuv's)
 * in two windows: `S` seconds with no request (what its timers cost while it waits), then exactly `N` requests.
 * Instructions per request = (load window − idle per second × load window's seconds) ÷ N. Unlike CPU seconds on
 * this VM, whose speed moves by more than 30 % within minutes (steal), the count repeats within a few per cent
 * whatever else the machine does, so two servers' counts compare without interleaving runs (bench/README.md).
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { appendFileSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import autocannon from 'autocannon';
import { Client } from 'pg';
import { BENCH_DATA, BUILD_DIR, PRODUCTION_NODE_FLAGS, ROOT } from './paths';
import { procStat } from './processes';
import { type SeedInfo, startDatabase } from './seed';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface CpuProfile {
  nodes: ProfileNode[];
  /** µs on the monotonic clock (process.hrtime's). */
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

const argv = process.argv.slice(2);
const flag = (name: string) => argv.includes(`--${name}`);
const option = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
const floor = flag('floor');
const frameworkFloor = flag('framework-floor');
const serverName = floor ? 'floor' : frameworkFloor ? 'framework floor' : 'fleethub';
const callgrind = flag('callgrind');
const cpuProf = !flag('no-cpu-prof') && !callgrind;
const runs = Number(option('runs') ?? 1);
const requests = option('requests') === undefined ? undefined : Number(option('requests'));
const duration = Number(option('duration') ?? 5);
const connections = Number(option('connections') ?? 16);
const path = argv.find((a) => a.startsWith('/')) ?? '/api/users/me';
const warmPath = option('warm-path');
const warmSeconds = Number(option('warm-seconds') ?? 5);
const RATE_LIMIT_API_PER_MIN = '10000000';

const runCommand = promisify(execFile);
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)];

async function main(): Promise<void> {
  const database = await startDatabase(flag('quick') ? 'quick' : 'full', (m) =>
    process.stderr.write(`${m}\n`),
  );
  const db = new Client({ connectionString: database.url });
  await db.connect();
  const { rows } = await db.query<{ info: SeedInfo }>(`SELECT info FROM bench_seed LIMIT 1`);
  await db.end();
  const token = rows[0].info.token;
  const dir = join(BENCH_DATA, 'profiles');
  await mkdir(dir, { recursive: true });
  const before = new Set(readdirSync(dir));
  const script = join(
    BUILD_DIR,
    floor ? 'bench/floor-server.js' : frameworkFloor ? 'bench/framework-floor.js' : 'src/main.js',
  );
  const nodeArgs = [
    // fleethub and the framework floor run with `npm run start:prod`'s flags, as `npm run bench` runs them.
    ...(floor ? [] : PRODUCTION_NODE_FLAGS),
    ...(process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter(Boolean),
    ...(cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${dir}`] : []),
    script,
  ];
  const child = spawn(
    callgrind ? 'valgrind' : process.execPath,
    callgrind
      ? [
          '--tool=callgrind',
          '--instr-atstart=no',
          // V8 writes and rewrites machine code in its heap: valgrind must see every change to it.
          '--smc-check=all-non-file',
          `--callgrind-out-file=${join(dir, 'callgrind.out.%p')}`,
          process.execPath,
          ...nodeArgs,
        ]
      : nodeArgs,
    {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL: database.url,
        PORT: '0',
        LOG_LEVEL: 'warn',
        FLEETHUB_DATA_DIR: join(BENCH_DATA, 'server'),
        FLEETHUB_RATE_LIMIT_API_PER_MIN: RATE_LIMIT_API_PER_MIN,
        FLOOR_RATE_LIMIT_API_PER_MIN: RATE_LIMIT_API_PER_MIN,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const url = await new Promise<string>((resolve) => {
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      // BENCH_SERVER_LOG=FILE keeps the server's standard output (e.g. with BENCH_SERVER_NODE_ARGS=--trace-gc).
      if (process.env.BENCH_SERVER_LOG) appendFileSync(process.env.BENCH_SERVER_LOG, c);
      out += c.toString();
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]);
    });
  });
  const load = (seconds: number, amount?: number, on = path) =>
    autocannon({
      url: url + on,
      connections,
      ...(amount === undefined ? { duration: seconds } : { amount }),
      headers: { authorization: `Bearer ${token}` },
    });
  if (warmPath !== undefined) await load(warmSeconds, undefined, warmPath);
  if (callgrind) {
    await load(0, Number(option('warm-requests') ?? 20_000));
    await countInstructions(child.pid!, dir, (amount) => load(0, amount));
    await stop(child);
    await database.stop();
    return;
  }
  await load(1);
  const loadStarted = monotonicMicros();
  const measured: { rps: number; userMs: number; systemMs: number; requests: number }[] = [];
  for (let run = 1; run <= runs; run++) {
    const cpu0 = procStat(child.pid);
    const result = await load(duration, requests);
    const cpu1 = procStat(child.pid);
    const n = result.requests.total;
    const m = {
      rps: Math.round(result.requests.average),
      requests: n,
      userMs: (1000 * (cpu1.userSeconds - cpu0.userSeconds)) / n,
      systemMs: (1000 * (cpu1.systemSeconds - cpu0.systemSeconds)) / n,
    };
    measured.push(m);
    process.stderr.write(
      `run ${run}: ${serverName} ${path}: ${m.rps} req/s, p99 ${result.latency.p99} ms, ` +
        `non2xx ${result.non2xx}; CPU per request ${(m.userMs + m.systemMs).toFixed(3)} ms ` +
        `(user ${m.userMs.toFixed(3)}, system ${m.systemMs.toFixed(3)})${cpuProf ? ' under --cpu-prof' : ''}\n`,
    );
  }
  const loadEnded = monotonicMicros();
  const user = median(measured.map((m) => m.userMs));
  const system = median(measured.map((m) => m.systemMs));
  process.stdout.write(
    `${serverName} ${path}: median of ${runs}: ${median(measured.map((m) => m.rps))} req/s, ` +
      `CPU per request ${median(measured.map((m) => m.userMs + m.systemMs)).toFixed(3)} ms ` +
      `(user ${user.toFixed(3)}, system ${system.toFixed(3)}); load average ${loadAverage()}\n`,
  );
  await stop(child);
  await database.stop();
  const requestsMeasured = measured.reduce((sum, m) => sum + m.requests, 0);
  if (cpuProf) printProfile(dir, before, loadStarted, loadEnded, requestsMeasured);
}

function stop(child: ChildProcess): Promise<unknown> {
  return new Promise((resolve) => {
    child.once('exit', resolve);
    child.kill('SIGINT');
  });
}

/** Runs `callgrind_control` on the server; resolves once it has done what it was asked. */
async function callgrindControl(pid: number, ...args: string[]): Promise<void> {
  await runCommand('callgrind_control', [...args, String(pid)]);
}

/**
 * The instructions counted in a callgrind dump (its `summary:` or `totals:` line: the first event is Ir), and those
 * of V8's optimizing compilers (TurboFan, Maglev) among them, per function from `callgrind_annotate`.
 */
async function instructionsIn(file: string): Promise<{ all: number; compiler: number }> {
  const m = /^(?:summary|totals): (\d+)/m.exec(readFileSync(file, 'utf8'));
  if (!m) throw new Error(`no instruction total in ${file}`);
  const { stdout: annotated } = await runCommand(
    'callgrind_annotate',
    ['--inclusive=no', '--threshold=100', file],
    {
      maxBuffer: 256 * 1024 * 1024,
    },
  );
  let compiler = 0;
  for (const line of annotated.split('\n')) {
    const row = /^\s*([\d,]+) \([^)]*\)\s+(.*)$/.exec(line);
    if (row && /v8::internal::(compiler|maglev)::/.test(row[2]))
      compiler += Number(row[1].replaceAll(',', ''));
  }
  return { all: Number(m[1]), compiler };
}

async function countInstructions(
  pid: number,
  dir: string,
  load: (amount: number) => Promise<autocannon.Result>,
): Promise<void> {
  const amount = requests ?? 5_000;
  const idleSeconds = Number(option('idle-seconds') ?? 10);
  const dumps = () => new Set(readdirSync(dir).filter((f) => f.startsWith(`callgrind.out.${pid}`)));
  const newDump = (before: Set<string>) => {
    const file = [...dumps()].find((f) => !before.has(f));
    if (!file) throw new Error(`callgrind wrote no dump in ${dir}`);
    return join(dir, file);
  };
  await callgrindControl(pid, '--instr=on');
  await callgrindControl(pid, '--zero');
  const idleStarted = performance.now();
  await new Promise((resolve) => setTimeout(resolve, idleSeconds * 1000));
  let before = dumps();
  await callgrindControl(pid, '--dump=idle');
  const idleMs = performance.now() - idleStarted;
  const idle = (await instructionsIn(newDump(before))).all;
  const loadStarted = performance.now();
  const result = await load(amount);
  before = dumps();
  await callgrindControl(pid, '--dump=load');
  const loadMs = performance.now() - loadStarted;
  const loaded = await instructionsIn(newDump(before));
  const answered = result.requests.total;
  const background = (idle / idleMs) * loadMs;
  const perRequest = (loaded.all - background) / answered;
  const count = (n: number) => Math.round(n).toLocaleString('en');
  // Natively, a server this warm optimizes a function or two a second (`--trace-opt`); under valgrind, 50 times
  // slower, its compilers keep running through the window: their share is shown apart, and left out of the
  // figure that compares servers.
  process.stdout.write(
    `${serverName} ${path} under callgrind: ${answered} requests (non2xx ${result.non2xx}) in ` +
      `${(loadMs / 1000).toFixed(1)} s; ${count(loaded.all / 1e6)} M instructions, of which the idle rate ` +
      `(${count(idle / idleMs / 1e3)} M/s over ${(idleMs / 1000).toFixed(1)} s) ${count(background / 1e6)} M; ` +
      `${count(perRequest)} instructions per request, of which V8's optimizing compilers ` +
      `${count(loaded.compiler / answered)}; without them: ${count(perRequest - loaded.compiler / answered)}\n`,
  );
}

const monotonicMicros = () => Number(process.hrtime.bigint() / 1000n);

function loadAverage(): string {
  return readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
}

/** Only the samples taken while the measured load ran: not the start, the warm-up or the shutdown. */
function printProfile(
  dir: string,
  before: Set<string>,
  from: number,
  to: number,
  requestsMeasured: number,
): void {
  const file = readdirSync(dir).find((f) => !before.has(f) && f.endsWith('.cpuprofile'));
  if (!file) throw new Error(`no new .cpuprofile in ${dir}`);
  const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  let at = profile.startTime;
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas[i] ?? 0;
    if (at >= from && at <= to) self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  });
  const total = [...self.values()].reduce((a, b) => a + b, 0);
  const fn = new Map<string, number>();
  const pkg = new Map<string, number>();
  for (const [id, us] of self) {
    const { callFrame: cf } = byId.get(id)!;
    // The build the run made lives under node_modules/.cache/fleethub-bench/run-<pid>/: its files are fleethub's.
    const where = cf.url
      .replace(/^file:\/\//, '')
      .replace(`${ROOT}/`, '')
      .replace(/^node_modules\/\.cache\/fleethub-bench\/[^/]+\//, 'build/');
    const key = `${cf.functionName || '(anonymous)'} ${where}:${cf.lineNumber + 1}`;
    fn.set(key, (fn.get(key) ?? 0) + us);
    const owner =
      /node_modules\/((@[^/]+\/)?[^/]+)/.exec(where)?.[1] ??
      (where.startsWith('build/') || where.startsWith('dist/')
        ? 'fleethub'
        : where.startsWith('node:')
          ? 'node core'
          : cf.functionName.startsWith('(')
            ? cf.functionName
            : 'other/native');
    pkg.set(owner, (pkg.get(owner) ?? 0) + us);
  }
  // BENCH_PROFILE_JSON=FILE: self time per function in µs per request, for diffing two servers' profiles.
  if (process.env.BENCH_PROFILE_JSON) {
    const perRequest = Object.fromEntries([...fn].map(([k, us]) => [k, us / requestsMeasured]));
    writeFileSync(process.env.BENCH_PROFILE_JSON, JSON.stringify({ requestsMeasured, perRequest }, null, 1));
  }
  const top = (m: Map<string, number>, n: number) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, v]) => `${((100 * v) / total).toFixed(1).padStart(5)} %  ${k}`);
  process.stdout.write(
    `profile: ${join(dir, file)} (load from ${from} to ${to} µs)\n\nTop packages by self time:\n${top(pkg, 15).join('\n')}\n\n` +
      `Top functions by self time:\n${top(fn, 40).join('\n')}\n`,
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
