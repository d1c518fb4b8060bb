/**
 * The scenarios that are scripts of their own (each starts its own server and database): the mTLS device socket
 * (`mtls.ts`, issue #17) and device telemetry (`telemetry.ts`, issue #18). `npm run bench` runs them as child
 * processes, before its own database starts, and publishes what they print: goals and a section each.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MtlsResults } from './mtls';
import { BUILD_DIR, ROOT } from './paths';
import { children } from './processes';
import type { SocketRun, Goal } from './sockets';
import type { TelemetryResults } from './telemetry';
import { median } from './report';

export type { MtlsResults } from './mtls';
export type { TelemetryResults } from './telemetry';

/** A scenario's published results, or why there are none. */
export interface Standalone<T> {
  /** The options it ran with (as on its command line). */
  args: string[];
  results: T | null;
  error: string | null;
}

/**
 * Runs `bench/<script>.js` (the same build) with `args` and `--out=<file>`; its progress goes to `log`. Resolves
 * with what it wrote, or the error (a failed scenario is reported, not fatal to the other scenarios).
 */
export async function runStandalone<T>(
  script: 'mtls' | 'telemetry',
  args: string[],
  log: (line: string) => void,
): Promise<Standalone<T>> {
  const dir = await mkdtemp(join(tmpdir(), `fleethub-bench-${script}-`));
  const out = join(dir, 'results.json');
  try {
    const code = await new Promise<number | null>((resolve, reject) => {
      const child = spawn(
        process.execPath,
        [join(BUILD_DIR, 'bench', `${script}.js`), ...args, `--out=${out}`],
        {
          cwd: ROOT,
          env: process.env,
          stdio: ['ignore', 'ignore', 'pipe'],
        },
      );
      children.add(child);
      let pending = '';
      child.stderr.on('data', (chunk: Buffer) => {
        pending += chunk.toString();
        const lines = pending.split('\n');
        pending = lines.pop() ?? '';
        for (const line of lines) if (line.trim() !== '') log(`  ${script}: ${line}`);
      });
      child.once('error', reject);
      child.once('exit', (exitCode) => {
        children.delete(child);
        if (pending.trim() !== '') log(`  ${script}: ${pending}`);
        resolve(exitCode);
      });
    });
    if (code !== 0) return { args, results: null, error: `bench/${script}.ts exited with ${code}` };
    return { args, results: JSON.parse(await readFile(out, 'utf8')) as T, error: null };
  } catch (err) {
    return { args, results: null, error: (err instanceof Error ? err.message : String(err)).slice(0, 500) };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const n = (x: number | null | undefined) => (typeof x === 'number' ? x.toLocaleString('en') : '–');
const secondsOf = (ms: number | null | undefined) =>
  ms === null || ms === undefined ? 'not all within the time limit' : `${(ms / 1000).toFixed(1)} s`;

/** Issue #17, point 6. */
export function mtlsGoals(run: Standalone<MtlsResults> | null | undefined): Goal[] {
  if (!run) return [];
  const r = run.results;
  if (!r) {
    const failed = `not measured: ${run.error ?? 'no result'}`;
    return [
      { goal: 'mTLS device connections at once: all joined, none failed', met: false, detail: failed },
      { goal: 'JITP of new devices at once: each created exactly once', met: false, detail: failed },
    ];
  }
  const phase = (p: MtlsResults['connect'] | MtlsResults['storm'], n: number) =>
    `${p.joined.toLocaleString('en')}/${n.toLocaleString('en')} joined in ${secondsOf(p.all_joined_ms)}, ` +
    `${p.failed_attempts.toLocaleString('en')} failed connection attempts (retried)`;
  return [
    {
      goal: `${n(r.devices)} mTLS device connections at once to one process (ECDSA P-256 handshakes): all joined, none failed`,
      met:
        r.connect.joined === r.devices && r.connect.all_joined_ms !== null && r.connect.failed_attempts === 0,
      detail: `${phase(r.connect, r.devices)}; ${r.connect.server_kib_per_device ?? '–'} KiB RSS per connection`,
    },
    {
      goal: `${n(r.storm_devices)}-device mTLS reconnect storm: all joined, none failed`,
      met:
        r.storm.joined === r.storm_devices && r.storm.all_joined_ms !== null && r.storm.failed_attempts === 0,
      detail: phase(r.storm, r.storm_devices),
    },
    {
      goal: `JITP of ${n(r.jitp_devices)} new devices at once: each created exactly once`,
      met: r.jitp.each_exactly_once && r.jitp.joined === r.jitp_devices,
      detail:
        `${n(r.jitp.joined)} joined in ${secondsOf(r.jitp.all_joined_ms)}; ${n(r.jitp.devices)} devices, ` +
        `${n(r.jitp.certificates)} certificates, ${n(r.jitp.registrations)} \`device.register\` audit entries`,
    },
  ];
}

/** Issue #18, point 6. */
export function telemetryGoals(run: Standalone<TelemetryResults> | null | undefined, quick: boolean): Goal[] {
  if (!run) return [];
  const r = run.results;
  if (!r) {
    const failed = `not measured: ${run.error ?? 'no result'}`;
    return [
      { goal: 'device logs: no line lost below the rate limit', met: false, detail: failed },
      { goal: 'device log query p99 under 50 ms', met: false, detail: failed },
    ];
  }
  const { ingest, query } = r;
  const scale = quick ? ' (quick: not the size of the goal)' : '';
  return [
    {
      goal: `${n(ingest.devices)} connected devices sending ${ingest.lines_per_device_per_s} log line a second each for ${ingest.seconds} s: no line lost below the rate limit${scale}`,
      met: ingest.connected === ingest.devices && ingest.lines_lost === 0 && ingest.lines_sent > 0,
      detail:
        `${n(ingest.connected)} connected; ${n(ingest.lines_sent)} lines sent, ${n(ingest.lines_stored)} stored, ` +
        `${n(ingest.lines_lost)} lost`,
    },
    {
      goal: `device log ingest: server CPU and PostgreSQL write rate (published)`,
      met: null,
      detail:
        `server ${ingest.server_cpu_percent_of_one_core} % of one core; PostgreSQL ${n(ingest.pg_rows_inserted_per_s)} ` +
        `rows inserted and ${n(ingest.pg_commits_per_s)} commits a second`,
    },
    {
      goal: `device log query (a device's newest 100 lines) p99 under 50 ms with ${n(query.stored_lines)} stored lines over 3 days of partitions${scale}`,
      met: query.p99_ms < 50,
      detail: `p50 ${query.p50_ms} ms, p99 ${query.p99_ms} ms over ${n(query.runs)} requests (one client)`,
    },
  ];
}

/** The mTLS section, with the shared-secret figures of the same report beside it. */
export function renderMtls(run: Standalone<MtlsResults>, sockets: SocketRun[], lines: string[]): void {
  lines.push('## mTLS device socket');
  lines.push('');
  lines.push(
    `\`bench/mtls.ts\` (\`${['bash bench/run.sh mtls', ...run.args].join(' ')}\`): one server process with its mTLS ` +
      'listener, a CA registered with proof of possession and a JITP template; fleethub simulator devices in the ' +
      'client processes of `bench/sockets.ts`, each with its own ECDSA P-256 key and certificate signed by that CA (the ' +
      'same certificate at every connection). JITP: devices that do not exist connect at once. Connect: the devices, ' +
      'provisioned by a first connection (not measured), connect at once. Storm: all closed by the clients; once the ' +
      'server has recorded them disconnected, they reconnect at once.',
  );
  lines.push('');
  const r = run.results;
  if (!r) {
    lines.push(`Not measured: \`${(run.error ?? 'no result').replace(/`/g, "'")}\``);
    lines.push('');
    return;
  }
  // The shared-secret figures of the device-socket runs in the same report (medians of the runs that measured).
  const shared = sockets.flatMap((s) => (s.results ? [s.results] : []));
  const connects = shared.flatMap((s) => (s.connect ? [s.connect] : []));
  const storms = shared.flatMap((s) => (s.reconnect_storm ? [s.reconnect_storm] : []));
  const med = (values: (number | null | undefined)[]) =>
    median(values.filter((v): v is number => typeof v === 'number'));
  const sharedJoined = med(connects.map((c) => c.all_joined_ms));
  const sharedStorm = med(storms.map((c) => c.all_joined_ms));
  lines.push('| Figure | mTLS | shared secret (device sockets above, median of the runs) |');
  lines.push('| --- | ---: | ---: |');
  lines.push(
    `| connect at once: devices | ${n(r.devices)} | ${n(shared[0]?.devices)} |`,
    `| … all joined in | ${secondsOf(r.connect.all_joined_ms)} | ${sharedJoined === null ? '–' : secondsOf(sharedJoined)} |`,
    `| … joined | ${n(r.connect.joined)} | ${n(med(connects.map((c) => c.joined)))} |`,
    `| … failed connection attempts (retried) | ${n(r.connect.failed_attempts)} | ${n(med(connects.map((c) => c.failed_attempts)))} |`,
    `| server RSS per connection | ${r.connect.server_kib_per_device ?? '–'} KiB | ${med(connects.map((c) => c.server_kib_per_device)) ?? '–'} KiB |`,
    `| … V8 heap used per connection | ${r.connect.server_heap_kib_per_device ?? '–'} KiB | ${med(connects.map((c) => c.server_heap_kib_per_device)) ?? '–'} KiB |`,
    `| reconnect storm: devices | ${n(r.storm_devices)} | ${n(shared[0]?.storm_devices)} |`,
    `| … all joined in | ${secondsOf(r.storm.all_joined_ms)} | ${sharedStorm === null ? '–' : secondsOf(sharedStorm)} |`,
    `| … failed connection attempts (retried) | ${n(r.storm.failed_attempts)} | ${n(med(storms.map((c) => c.failed_attempts)))} |`,
    `| JITP: new devices at once | ${n(r.jitp_devices)} | – |`,
    `| … all joined in | ${secondsOf(r.jitp.all_joined_ms)} | – |`,
    `| … devices / certificates / \`device.register\` entries created | ${n(r.jitp.devices)} / ${n(r.jitp.certificates)} / ${n(r.jitp.registrations)} | – |`,
  );
  lines.push('');
  const samples = [...r.connect.client_error_samples, ...r.storm.client_error_samples].slice(0, 3);
  if (samples.length > 0) {
    lines.push(
      `Client errors seen (samples): ${samples.map((s) => `\`${s.replace(/`/g, "'")}\``).join('; ')}.`,
    );
    lines.push('');
  }
  if (r.server_metrics.length > 0) {
    lines.push("The server's certificate counters at the end:");
    lines.push('');
    lines.push('```');
    lines.push(...r.server_metrics);
    lines.push('```');
    lines.push('');
  }
}

/** The device telemetry section. */
export function renderTelemetry(run: Standalone<TelemetryResults>, lines: string[]): void {
  lines.push('## Device telemetry (logs)');
  lines.push('');
  lines.push(
    `\`bench/telemetry.ts\` (\`${['bash bench/run.sh telemetry', ...run.args].join(' ')}\`): simulated devices ` +
      "(fleethub's simulator, NH1 shared secret) attach the `logging` extension and send log lines at a fixed rate; " +
      'every line sent is counted by the devices and every line stored by PostgreSQL. Then more lines are written ' +
      "straight into the daily partitions (spread over the last 3 days), and one client reads devices' newest 100 " +
      'lines back to back through `GET .../devices/{identifier}/logs?limit=100`.',
  );
  lines.push('');
  const r = run.results;
  if (!r) {
    lines.push(`Not measured: \`${(run.error ?? 'no result').replace(/`/g, "'")}\``);
    lines.push('');
    return;
  }
  const { ingest, query } = r;
  lines.push('| Figure | value |');
  lines.push('| --- | ---: |');
  lines.push(
    `| devices connected (of ${n(ingest.devices)}) | ${n(ingest.connected)} |`,
    `| rate and time | ${ingest.lines_per_device_per_s} line/s each for ${ingest.seconds} s |`,
    `| lines sent / stored / lost | ${n(ingest.lines_sent)} / ${n(ingest.lines_stored)} / **${n(ingest.lines_lost)}** |`,
    `| server CPU (100 % = one core) | ${ingest.server_cpu_percent_of_one_core} % |`,
    `| PostgreSQL rows inserted a second | ${n(ingest.pg_rows_inserted_per_s)} |`,
    `| PostgreSQL commits a second | ${n(ingest.pg_commits_per_s)} |`,
    `| stored lines for the query | ${n(query.stored_lines)} (~${n(query.lines_per_device)} per device) |`,
    `| newest 100 lines of a device: p50 / p99 (${n(query.runs)} requests, one client) | ${query.p50_ms} / **${query.p99_ms}** ms |`,
  );
  lines.push('');
  lines.push(`Measured ${r.date}, load average at the end ${r.machine.load_average_at_end.join(' / ')}.`);
  lines.push('');
}
