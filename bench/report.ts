import type autocannon from 'autocannon';
/** docs/benchmarks.md from the harness's report object (every number comes from the run). */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type ConsoleResults, renderConsole } from './console-report';
import { type DeploymentResults, renderDeployments } from './deployments';
import { type DownloadResults, renderDownloads } from './downloads';
import type { LoadWindow } from './machine-load';
import { describeSpread, type Goal, type SocketRun, socketFigures, type Spread } from './sockets';
import {
  type MtlsResults,
  renderMtls,
  renderTelemetry,
  type Standalone,
  type TelemetryResults,
} from './standalone';

/** One autocannon run against one server. */
export interface Measurement {
  requests_per_s: number;
  requests_total: number;
  latency_ms: { p50: number; p90: number; p99: number; max: number; mean: number };
  errors: number;
  non_2xx: number;
  /** The server process's CPU time over the run (100 = one core). */
  server_cpu_percent: number;
  /** What else the machine did during the run. */
  machine?: LoadWindow;
}

/** autocannon's result as the report shows it; `cpu`: the server's CPU share meanwhile. */
export function summarise(result: autocannon.Result, cpu: number): Measurement {
  return {
    requests_per_s: Math.round(result.requests.average),
    requests_total: result.requests.total,
    latency_ms: {
      p50: result.latency.p50,
      p90: result.latency.p90,
      p99: result.latency.p99,
      max: result.latency.max,
      mean: Number(result.latency.average.toFixed(2)),
    },
    errors: result.errors + result.timeouts,
    non_2xx: result.non2xx,
    server_cpu_percent: cpu,
  };
}

/** The answers checked before measuring. */
export interface Check {
  fleethub_status: number;
  rows?: number;
  total_entries?: number;
  exact_total?: number;
  total_is_exact?: boolean;
  floor_status?: number;
  same_body_as_floor?: boolean;
  framework_floor_status?: number;
  same_body_as_framework_floor?: boolean;
}

export interface ScenarioResult {
  name: string;
  title: string;
  method: string;
  path: string;
  hot: boolean;
  check: Check | null;
  load_average_before: number;
  fleethub: Measurement;
  fleethub_one_client?: Measurement;
  floor?: Measurement;
  ratio_to_floor?: number;
  /** bench/framework-floor.ts (NestJS + Express answering the same body with fleethub's cache and limiter). */
  framework_floor?: Measurement;
  /** The median of the rounds' throughput ratios (`framework_floor` and `fleethub` are that round's). */
  ratio_to_framework_floor?: number;
  /** The median of the rounds' CPU-per-request ratios (framework floor's ÷ fleethub's). */
  cpu_ratio_to_framework_floor?: number;
  /** fleethub and the framework floor measured in turn, round after round (the machine's load drifts). */
  framework_rounds?: FrameworkRound[];
  created_rows_removed?: number;
}

/** One round of fleethub, then the framework floor, right after it. */
export interface FrameworkRound {
  fleethub_rps: number;
  framework_floor_rps: number;
  fleethub_cpu_ms: number | null;
  framework_floor_cpu_ms: number | null;
  ratio: number;
  cpu_ratio: number | null;
}

/** The median of some numbers (the lower middle one of an even count), or null. */
export function median(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)];
}

export interface UploadRun {
  status: number;
  error: string | null;
  size_mib: number;
  seconds: number;
  mib_per_s: number;
  rss_before_mib: number;
  rss_peak_mib: number;
  rss_after_mib: number;
  rss_growth_mib: number;
}

export interface Report {
  generated_by: string;
  mode: 'quick' | 'full';
  date: string;
  /** The per-token API limit both servers ran with (high enough never to refuse). */
  rate_limit_api_per_min: number;
  seed: { devices: number; iroh_endpoints: number; members: number; seeded_at: string; seed_seconds: number };
  settings: { connections: number; duration_s: number; warmup_s: number; pipelining: number };
  machine: {
    cpu: string;
    cores: number;
    memory_gib: number;
    node: string;
    postgresql: string;
    postgresql_settings: Record<string, string>;
    database: string;
    os: string;
    load_average_at_end: number[];
  };
  scenarios: ScenarioResult[];
  upload: (UploadRun & { warmup: UploadRun }) | null;
  /** Issue #16's concurrent downloads; null: not run (--no-downloads, --only). */
  downloads?: DownloadResults | null;
  goals: Goal[];
  /** null: not run (--no-sockets, --only). */
  device_sockets: { runs: SocketRun[] } | null;
  /** Issue #15's rollout and membership scenarios; null: not run (--no-deployments, --only). */
  deployments?: DeploymentResults | null;
  /** Issue #17's mTLS device socket (bench/mtls.ts); null or absent: not run. */
  mtls?: Standalone<MtlsResults> | null;
  /** Issue #18's device logs (bench/telemetry.ts); null or absent: not run. */
  telemetry?: Standalone<TelemetryResults> | null;
  /**
   * Issue 30.6's console numbers, published by `npm run bench:console` (bench/console.ts) with their own date and
   * mode; `npm run bench` keeps them as they are.
   */
  console?: ConsoleResults | null;
  duration_s: number;
  /** `--merge`: these sections are the earlier run's of `date`, not this run's. */
  merged_from?: MergedFrom;
}

/**
 * `--merge`: the sections kept from earlier runs. `dates` gives each section's own run (a section kept through
 * several merges keeps the date it was measured); `date` is the newest of them (reports before `dates` existed
 * had only it).
 */
export interface MergedFrom {
  date: string;
  sections: string[];
  dates?: Record<string, string>;
}

/** When `section` of `report` was measured (its own date, or the one kept from an earlier run by --merge). */
export function measuredAt(report: Report, section: string): string {
  const merged = report.merged_from;
  if (!merged?.sections.includes(section)) return report.date;
  return merged.dates?.[section] ?? merged.date;
}

const fmt = (n: number | string | null | undefined) => (n === undefined || n === null ? '–' : String(n));

/** A measurement's server CPU time per request in ms (user + system over the run ÷ requests answered). */
export function cpuMsPerRequest(m: Measurement): number | null {
  return m.requests_per_s > 0 ? Number(((10 * m.server_cpu_percent) / m.requests_per_s).toFixed(3)) : null;
}

/**
 * Issue 31.3: the scenarios measured against the framework floor too (`users_me`): fleethub's throughput against
 * the bare floor's (the whole stack's cost) and against the framework floor's (what fleethub adds to NestJS and
 * Express), with each server's CPU time per request.
 */
export function renderFrameworkFloor(scenarios: ScenarioResult[], lines: string[]): void {
  const measured = scenarios.filter((s) => s.framework_floor);
  if (measured.length === 0) return;
  lines.push('### What fleethub adds to NestJS + Express');
  lines.push('');
  lines.push(
    "The framework floor (`bench/framework-floor.ts`) is a NestJS application on fleethub's Express adapter that " +
      "answers `GET /api/users/me` with the same body from fleethub's own token service, token cache and rate limiter, " +
      'and nothing else (no guard, logging, metrics, request id or security headers). fleethub ÷ framework floor is ' +
      "what fleethub's own per-request work costs (goal ≥ 0.9, by throughput and by CPU time per request: a server " +
      'starved by other processes during its measurement loses throughput, not CPU per request); fleethub ÷ bare ' +
      'floor adds the cost of NestJS and Express themselves, which the design card fixes (reported). Server CPU per ' +
      "request = the server's CPU time ÷ requests answered." +
      (measured.some((s) => (s.framework_rounds?.length ?? 1) > 1)
        ? " The two are measured in turn, round after round (the machine's load drifts within a minute); each " +
          "ratio is the median of the rounds' ratios, and the table's requests per second are those of the round " +
          'with the median throughput ratio.'
        : ''),
  );
  lines.push('');
  lines.push(
    '| Scenario | fleethub req/s | framework floor req/s | bare floor req/s | fleethub ÷ framework floor | fleethub ÷ bare floor | CPU per request: fleethub / framework floor / bare floor |',
  );
  lines.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const s of measured) {
    const cpu = [s.fleethub, s.framework_floor, s.floor].map((m) =>
      m ? `${fmt(cpuMsPerRequest(m))} ms` : '–',
    );
    lines.push(
      `| \`${s.name}\` | ${s.fleethub.requests_per_s} | ${s.framework_floor!.requests_per_s} | ${fmt(s.floor?.requests_per_s)} | ` +
        `**${fmt(s.ratio_to_framework_floor)}** | ${fmt(s.ratio_to_floor)} | ${cpu.join(' / ')} |`,
    );
  }
  lines.push('');
  for (const s of measured.filter((m) => m.framework_rounds && m.framework_rounds.length > 1)) {
    lines.push(
      `\`${s.name}\`, round by round (fleethub, then the framework floor): median throughput ratio ` +
        `**${fmt(s.ratio_to_framework_floor)}**, median CPU-per-request ratio **${fmt(s.cpu_ratio_to_framework_floor)}**.`,
    );
    lines.push('');
    lines.push(
      '| Round | fleethub req/s | framework floor req/s | throughput ratio | CPU per request: fleethub / framework floor | CPU ratio |',
    );
    lines.push('| ---: | ---: | ---: | ---: | ---: | ---: |');
    s.framework_rounds!.forEach((r, i) =>
      lines.push(
        `| ${i + 1} | ${r.fleethub_rps} | ${r.framework_floor_rps} | ${fmt(r.ratio)} | ` +
          `${fmt(r.fleethub_cpu_ms)} ms / ${fmt(r.framework_floor_cpu_ms)} ms | ${fmt(r.cpu_ratio)} |`,
      ),
    );
    lines.push('');
  }
}

function earlierRuns(merged: MergedFrom): string {
  const byDate = new Map<string, string[]>();
  for (const section of merged.sections) {
    const date = merged.dates?.[section] ?? merged.date;
    byDate.set(date, [...(byDate.get(date) ?? []), section]);
  }
  return [...byDate]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([date, sections]) => `${sections.join(', ')}: from the run of ${date}`)
    .join('; ');
}

export const PUBLISHED_CHECKS_HEADING =
  '## Reliability checks\n\nPublished by their own scripts (not `npm run bench`), kept here when the harness rewrites this file.';

/**
 * The sections other scripts publish in docs/benchmarks.md (`<!-- check:NAME -->` … `<!-- /check:NAME -->`, e.g.
 * the rolling restart through HAProxy): the harness rewrites the file from its report and keeps them as they are,
 * after its own.
 */
export function withPublishedChecks(rendered: string, current: string): string {
  const blocks = current.match(/<!-- (check:[\w:-]+) -->[\s\S]*?<!-- \/\1 -->/g) ?? [];
  if (blocks.length === 0) return rendered;
  return `${rendered.trimEnd()}\n\n${PUBLISHED_CHECKS_HEADING}\n\n${blocks.join('\n\n')}\n`;
}

/** The last written report (bench/benchmarks.json), or null when there is none. */
export async function readPublished(root: string): Promise<Report | null> {
  const path = join(root, 'bench/benchmarks.json');
  return existsSync(path) ? (JSON.parse(await readFile(path, 'utf8')) as Report) : null;
}

export function renderMarkdown(r: Report): string {
  const m = r.machine;
  const lines: string[] = [];
  lines.push('# Benchmarks');
  lines.push('');
  lines.push(
    '<!-- Generated by `npm run bench` (bench/bench.ts); do not edit by hand. Raw numbers: bench/benchmarks.json. -->',
  );
  lines.push('');
  lines.push(
    `Mode **${r.mode}**: ${r.seed.devices.toLocaleString('en')} devices in one product and ` +
      `${r.seed.iroh_endpoints.toLocaleString('en')} iroh endpoints in one organization (${r.seed.members.toLocaleString('en')} named members). ` +
      `autocannon, ${r.settings.connections} connections, ${r.settings.duration_s} s per scenario after ${r.settings.warmup_s} s of warm-up, ` +
      'no pipelining; fleethub (the built server, `node dist/src/main.js`, `LOG_LEVEL=warn`) and the floor ' +
      "(`bench/floor-server.ts`: bare `node:http` + `pg`, the least a correct server does for the same answer, with fleethub's own statements) measured back to back per scenario " +
      'against the same database; for `GET /api/users/me` also the framework floor (`bench/framework-floor.ts`: ' +
      "NestJS on the same Express adapter with fleethub's token cache and rate limiter, nothing else).",
  );
  lines.push('');
  lines.push('## Machine');
  lines.push('');
  lines.push('| | |');
  lines.push('| --- | --- |');
  lines.push(`| Date | ${r.date} |`);
  if (r.merged_from) {
    lines.push(`| Earlier runs | ${earlierRuns(r.merged_from)} (this run measured the rest; \`--merge\`) |`);
  }
  lines.push(`| Mode | ${r.mode} |`);
  lines.push(`| CPU | ${m.cpu} |`);
  lines.push(`| Cores | ${m.cores} |`);
  lines.push(`| Memory | ${m.memory_gib} GiB |`);
  lines.push(`| OS | ${m.os} |`);
  lines.push(`| Node.js | ${m.node} |`);
  lines.push(`| PostgreSQL | ${m.postgresql} (${m.database}) |`);
  lines.push(
    `| PostgreSQL settings | ${Object.entries(m.postgresql_settings)
      .map(([k, v]) => `${k}=${v}`)
      .join(', ')} |`,
  );
  lines.push(`| Load average at end (1/5/15 min) | ${m.load_average_at_end.join(' / ')} |`);
  lines.push(
    `| Per-token API rate limit | ${r.rate_limit_api_per_min.toLocaleString('en')}/min on every server (never reached): fleethub and the framework floor count each request in memory (the same RateLimiter) and write the counts once a second in one batched upsert; the floor counts in memory |`,
  );
  lines.push('');
  lines.push(
    'Client, server, floor and PostgreSQL share the same cores (and other work may run on the machine), so absolute ' +
      'numbers are indicative; the ratio to the floor, measured under the same conditions, is the comparison that matters.',
  );
  lines.push('');
  lines.push('## Results');
  lines.push('');
  lines.push(
    "| Scenario | Server | req/s | p50 ms | p99 ms | max ms | errors / non-2xx | server CPU | ratio to floor | load avg | other processes' CPU |",
  );
  lines.push('| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const s of r.scenarios) {
    const row = (label: string, x: Measurement, ratio: string) =>
      `| ${label === 'fleethub' ? `\`${s.name}\`: ${s.title}` : ''} | ${label} | ${x.requests_per_s} | ${x.latency_ms.p50} | ${x.latency_ms.p99} | ` +
      `${x.latency_ms.max} | ${x.errors} / ${x.non_2xx} | ${x.server_cpu_percent} % | ${ratio} | ${x.machine ? `${x.machine.load_average_1m.start} → ${x.machine.load_average_1m.end}` : label === 'fleethub' ? fmt(s.load_average_before) : ''} | ${x.machine ? `${x.machine.cpu_percent.other} %${x.machine.cpu_percent.steal > 0 ? ` (steal ${x.machine.cpu_percent.steal} %)` : ''}` : '–'} |`;
    lines.push(row('fleethub', s.fleethub, s.ratio_to_floor !== undefined ? `**${s.ratio_to_floor}**` : '–'));
    if (s.fleethub_one_client) lines.push(row('fleethub, 1 client', s.fleethub_one_client, ''));
    if (s.floor) lines.push(row('floor', s.floor, ''));
    if (s.framework_floor) {
      lines.push(
        row('framework floor', s.framework_floor, `**${fmt(s.ratio_to_framework_floor)}** (fleethub ÷ this)`),
      );
    }
  }
  lines.push('');
  lines.push(
    '"server CPU" is the server process\'s CPU time over the run (100 % = one core; PostgreSQL and the client are not included). ' +
      '"load avg" is the machine\'s 1-minute load average at the start and the end of the measurement (2 cores: above 2 means ' +
      'work waited for a core). "other processes\' CPU" is the share of all cores\' time that processes other than the ' +
      "benchmark's (servers, client, PostgreSQL) used during the measurement, with the hypervisor's steal when there was any: " +
      'when it is high, both servers were measured on a busy machine, and the absolute numbers (more than the ratio) are depressed. ' +
      '"1 client" rows: the same requests sent back to back by one connection, the latency a single caller sees; the iroh search goal is judged on them (docs/decisions.md).',
  );
  lines.push('');
  renderFrameworkFloor(r.scenarios, lines);
  const checked = r.scenarios.filter((s) => s.check);
  if (checked.length) {
    const yesNo = (same: boolean | undefined) => (same === undefined ? '–' : same ? 'yes' : 'NO');
    lines.push('### Response checks (before measuring)');
    lines.push('');
    lines.push(
      '| Scenario | rows | total_entries | exact count (SQL) | same body as floor | same body as framework floor |',
    );
    lines.push('| --- | ---: | ---: | ---: | --- | --- |');
    for (const s of checked) {
      const c = s.check!;
      lines.push(
        `| \`${s.name}\` | ${fmt(c.rows)} | ${fmt(c.total_entries)} | ${fmt(c.exact_total)}${c.total_is_exact === false ? ' ✗' : ''} | ` +
          `${yesNo(c.same_body_as_floor)} | ${yesNo(c.same_body_as_framework_floor)} |`,
      );
    }
    lines.push('');
  }
  if (r.upload) {
    const u = r.upload;
    lines.push('## Firmware upload');
    lines.push('');
    lines.push('| size | status | time | throughput | server RSS before | peak during | after | growth |');
    lines.push('| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
    lines.push(
      `| ${u.size_mib} MiB | ${u.status} | ${u.seconds} s | ${u.mib_per_s} MiB/s | ${u.rss_before_mib} MiB | ${u.rss_peak_mib} MiB | ` +
        `${u.rss_after_mib} MiB | ${u.rss_growth_mib >= 0 ? '+' : ''}${u.rss_growth_mib} MiB |`,
    );
    if (u.warmup) {
      const w = u.warmup;
      lines.push(
        `| ${w.size_mib} MiB (warm-up, first upload) | ${w.status} | ${w.seconds} s | ${w.mib_per_s} MiB/s | ${w.rss_before_mib} MiB | ` +
          `${w.rss_peak_mib} MiB | ${w.rss_after_mib} MiB | ${w.rss_growth_mib >= 0 ? '+' : ''}${w.rss_growth_mib} MiB |`,
      );
    }
    if (u.error) lines.push('', `Upload error: \`${u.error.replace(/`/g, "'")}\``);
    lines.push('');
    lines.push(
      'RSS of the server process sampled every 10 ms from /proc during each upload (one request at a time). A small ' +
        'warm-up upload runs first (its first-use cost is shown on the second line); the goal is judged on the big one, ' +
        'against the RSS just before it.',
    );
    lines.push('');
  }
  if (r.downloads) renderDownloads(r.downloads, lines);
  lines.push('## Goals');
  lines.push('');
  lines.push('| Goal | Status | Measured |');
  lines.push('| --- | --- | --- |');
  for (const g of r.goals)
    lines.push(`| ${g.goal} | ${g.met === null ? 'info' : g.met ? '**met**' : '**missed**'} | ${g.detail} |`);
  lines.push('');
  if (r.mode !== 'full') {
    lines.push(
      `> Quick mode: seeded with ${r.seed.devices.toLocaleString('en')} rows, not the 1,000,000 the goals are stated for. Run \`npm run bench\` for the real numbers.`,
    );
    lines.push('');
  }
  if (r.device_sockets) renderSockets(r.device_sockets.runs, lines);
  if (r.mtls) renderMtls(r.mtls, r.device_sockets?.runs ?? [], lines);
  if (r.deployments) renderDeployments(r.deployments, lines);
  if (r.telemetry) renderTelemetry(r.telemetry, lines);
  if (r.console) renderConsole(r.console, lines);
  lines.push('## How to run');
  lines.push('');
  lines.push('```sh');
  lines.push(
    'npm run bench              # full: 1,000,000 rows, ~10 s per scenario (first run seeds for ~3 minutes)',
  );
  lines.push('npm run bench -- --quick   # 100,000 rows, ~3 s per scenario, under 2 minutes');
  lines.push(
    '# options: --only=devices_page1,iroh_search_member,upload,sockets,rollout,membership  --duration=5  --no-floor',
  );
  lines.push(
    '#          --no-upload  --no-sockets  --no-deployments  --rollout-devices=N  --rollout-concurrent=N',
  );
  lines.push(
    '#          --socket-devices=N  --socket-storm=N  --socket-upgrades=N  --socket-runs=N  --upload-mib=N  --no-write  --keep-db',
    '#          --merge (with --only: the other sections are kept from the last written run, and named so)',
  );
  lines.push('#          --only=downloads  --no-downloads  --download-count=N  --download-mib=N');
  lines.push(
    '#          --only=mtls,telemetry  --no-mtls  --no-telemetry  --mtls-devices=N  --mtls-jitp=N  --telemetry-devices=N',
  );
  lines.push(
    '#          --telemetry-seconds=S  --telemetry-stored-lines=M  (not with BENCH_DATABASE_URL: they empty their database)',
  );
  lines.push(
    "#          (bench/README.md: details and findings; BENCH_SERVER_NODE_ARGS=... adds flags to the server's node)",
  );
  lines.push(
    '# BENCH_DATABASE_URL=postgres://... uses that database instead of the embedded one in .bench-data/',
  );
  lines.push(
    'npm run bench:console      # the console in Chromium at 1,000,000 devices (section "Console"; -- --quick: 100,000, no write)',
  );
  lines.push(
    'npm run check:rolling-restart:haproxy   # the rolling restart below (apt-get install -y haproxy; ~2.5 minutes)',
  );
  lines.push('```');
  lines.push('');
  lines.push(
    'The seed (generate_series, secondary indexes dropped during the load and rebuilt after) is kept in ' +
      '`.bench-data/postgres` and reused while its marker (seed version, size) matches. Rows the scenarios create ' +
      '(iroh endpoints, the uploaded firmware) are removed afterwards.',
  );
  lines.push('');
  return `${lines.join('\n')}\n`;
}

const n = (x: number | null | undefined) => (typeof x === 'number' ? x.toLocaleString('en') : fmt(x));
const seconds = (ms: number | null | undefined) =>
  ms === null || ms === undefined ? 'not all within the time limit' : `${(ms / 1000).toFixed(1)} s`;

/** A load window in a table cell. */
function loadCell(w: LoadWindow | undefined): string {
  if (!w) return '–';
  return (
    `load ${w.load_average_1m.start} → ${w.load_average_1m.end} (max ${w.load_average_1m.max}); ` +
    `CPU: others ${w.cpu_percent.other} %, steal ${w.cpu_percent.steal} %, benchmark ${w.cpu_percent.benchmark} %`
  );
}

/** The device-socket runs: one column per run, the median and range of each figure, the machine's load in each. */
function renderSockets(runs: SocketRun[], lines: string[]): void {
  lines.push('## Device sockets (gateway simulator)');
  lines.push('');
  const first = runs.find((run) => run.results)?.results;
  if (!first) {
    lines.push(
      `Not measured: every run failed: ${runs.map((run) => `\`${(run.error ?? 'no result').replace(/`/g, "'")}\``).join('; ')}`,
    );
    lines.push('');
    return;
  }
  lines.push(
    `Simulated NervesHubLink devices from \`src/cli/simulator.ts\` (NH1 product shared secret; the devices are ` +
      `registered beforehand in one INSERT, so registration on first connect is not measured; joined to \`device\`, \`console\` and \`extensions\`), in their own product, held by ${fmt(first.client_processes)} ` +
      `client processes (\`bench/sockets.ts\`); clients, server(s) and PostgreSQL on the same machine. ` +
      `**${runs.length} runs**, each on a fresh server process: these figures swing with what else the machine does ` +
      `(2 cores), so each is given per run and as the median and range, next to the machine's load during each run.`,
  );
  lines.push('');
  if (first.server_fd_limit) {
    const l = first.server_fd_limit;
    lines.push(
      `Every device socket is an open file of the server process. Its limit here is ${n(l.soft)} (soft) / ${n(l.hard)} (hard)` +
        `${l.soft_is_hard ? ', the soft limit raised to the hard one' : ' (the soft limit is NOT the hard one)'}; ` +
        `${n(first.fd_reserve)} are kept for the server's other descriptors, so one process here can hold at most ` +
        `${n(Math.max(0, l.soft - first.fd_reserve))} device sockets. ` +
        (first.capped_by_fd_limit
          ? `**N is capped by the machine's descriptor limit**: ${n(first.devices)} devices were measured instead of the ` +
            `${n(first.devices_requested)} asked for; the goal's per-connection figure is judged at that N.`
          : `N = ${n(first.devices)} (not capped).`),
    );
    lines.push('');
  }
  const figures = socketFigures(runs);
  const header = runs.map((run) => `run ${run.run}`);
  lines.push(`| Figure | ${header.join(' | ')} | median (range) |`);
  lines.push(`| --- | ${header.map(() => '---:').join(' | ')} | ---: |`);
  const row = (label: string, figure: Spread, cell: (v: number | null) => string, summary: string) =>
    lines.push(
      `| ${label} | ${figure.values.map((v) => (v === undefined ? 'failed' : cell(v))).join(' | ')} | ${summary} |`,
    );
  const plain = (v: number | null) => n(v);
  const secondsCell = (v: number | null) => (v === null ? '> limit' : `${(v / 1000).toFixed(1)} s`);
  const msCell = (v: number | null) => (v === null ? '–' : `${v} ms`);
  const kibCell = (v: number | null) => (v === null ? '–' : `${v} KiB`);
  row(
    `connect ${n(first.devices)} devices at once: all joined in`,
    figures.connect_all_joined_ms,
    secondsCell,
    `**${describeSpread(figures.connect_all_joined_ms, ' s', 1000)}**`,
  );
  row(
    `… joined (of ${n(first.devices)})`,
    figures.connect_joined,
    plain,
    describeSpread(figures.connect_joined),
  );
  row(
    '… failed connection attempts (retried)',
    figures.connect_failed_attempts,
    plain,
    describeSpread(figures.connect_failed_attempts),
  );
  row(
    '… listen-queue overflows',
    figures.connect_listen_queue_overflows,
    plain,
    describeSpread(figures.connect_listen_queue_overflows),
  );
  row(
    `server RSS per connection (after all joined + ${fmt(first.connect?.settle_ms)} ms − before, ÷ joined)`,
    figures.rss_kib_per_device,
    kibCell,
    `**${describeSpread(figures.rss_kib_per_device, ' KiB')}**`,
  );
  row(
    '… V8 heap used per connection',
    figures.heap_kib_per_device,
    kibCell,
    describeSpread(figures.heap_kib_per_device, ' KiB'),
  );
  row(
    `reconnect storm: all ${n(first.devices)} closed by the clients, then ${n(first.storm_devices)} reconnect at once: all joined in`,
    figures.storm_all_joined_ms,
    secondsCell,
    `**${describeSpread(figures.storm_all_joined_ms, ' s', 1000)}**`,
  );
  row(
    `… joined (of ${n(first.storm_devices)})`,
    figures.storm_joined,
    plain,
    describeSpread(figures.storm_joined),
  );
  row(
    '… failed connection attempts (retried)',
    figures.storm_failed_attempts,
    plain,
    describeSpread(figures.storm_failed_attempts),
  );
  row(
    '… listen-queue overflows',
    figures.storm_listen_queue_overflows,
    plain,
    describeSpread(figures.storm_listen_queue_overflows),
  );
  row(
    `upgrade → \`update\` frame, same instance (${first.upgrades} devices, one at a time): p50`,
    figures.upgrade_p50_ms,
    msCell,
    describeSpread(figures.upgrade_p50_ms, ' ms'),
  );
  row('… p99', figures.upgrade_p99_ms, msCell, `**${describeSpread(figures.upgrade_p99_ms, ' ms')}**`);
  row(
    'upgrade → `update` frame across instances (request to instance B, socket on A, PgDeviceBus): p50',
    figures.cross_p50_ms,
    msCell,
    describeSpread(figures.cross_p50_ms, ' ms'),
  );
  row('… p99', figures.cross_p99_ms, msCell, `**${describeSpread(figures.cross_p99_ms, ' ms')}**`);
  const loadRow = (label: string, window: (run: SocketRun) => LoadWindow | undefined) =>
    lines.push(`| ${label} | ${runs.map((run) => loadCell(window(run))).join(' | ')} | |`);
  loadRow('machine during the connect phase', (run) => run.results?.connect?.machine);
  loadRow('machine during the storm', (run) => run.results?.reconnect_storm?.machine);
  loadRow('machine during the whole run', (run) => run.machine);
  lines.push('');
  for (const run of runs) {
    const notes = [
      run.error && `failed: \`${run.error.replace(/`/g, "'")}\``,
      run.results?.connect?.not_joined &&
        `not joined after connecting: ${run.results.connect.not_joined.join(', ')}`,
      run.results?.reconnect_storm?.not_joined &&
        `not joined after the storm: ${run.results.reconnect_storm.not_joined.join(', ')}`,
      run.results?.reconnect_storm &&
        `the ${n(first.devices)} disconnections recorded in ${seconds(run.results.reconnect_storm.disconnect_recorded_ms)}`,
    ].filter(Boolean);
    if (notes.length) lines.push(`- Run ${run.run}: ${notes.join('; ')}.`);
  }
  lines.push('');
  lines.push(
    '"listen-queue overflows" is the kernel\'s `ListenOverflows` counter over the phase (machine-wide): handshakes ' +
      "dropped because the server's accept queue was full, which the clients' TCP retries after 1, 3, 7… s — the " +
      'long tail of a connect burst. "failed attempts" are connections that errored (reset, refused, non-101) and were retried. ' +
      '"load" is the 1-minute load average at the start and end of the phase and the highest in between (2 cores: above 2, ' +
      'work waited for a core); "CPU" splits all cores\' time over the phase: other processes on the machine (not the ' +
      "benchmark's servers, clients or PostgreSQL), steal (the hypervisor running other guests) and the benchmark itself. " +
      'A goal is met when most runs meet it.',
  );
  lines.push('');
}
