/**
 * The device telemetry benchmark (issue 18, point 6), a script of its own: `bash bench/run.sh telemetry [options]`.
 *
 * 1. Ingest: N simulated devices (the gateway's own simulator, in this process) attach `logging` and send R log lines
 *    a second each for S seconds. Published: lines sent and stored (none may be lost below the rate limit), the
 *    server's CPU, PostgreSQL's rows inserted and transactions committed a second.
 * 2. Query: M more lines spread over the retention window's daily partitions (bulk SQL), then one client reads a
 *    device's newest 100 lines back to back through the API; p50/p99.
 *
 * Options: `--devices=N` (10000), `--seconds=S` (60), `--rate=R` (1), `--stored-lines=M` (10000000),
 * `--query-runs=Q` (500), `--out=FILE` (the results as JSON; default: stdout only). `npm run bench` runs it and
 * publishes the results in docs/benchmarks.md (bench/standalone.ts).
 * Database: BENCH_DATABASE_URL, else the embedded cluster in .bench-data (database fleethub_bench_telemetry),
 * emptied first.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import os from 'node:os';
import { Client } from 'pg';
import { generateUserToken, hashToken } from '../src/auth/token-codec';
import { Simulator } from '../src/cli/simulator';
import { BENCH_DATA, BUILD_DIR, sleep } from './paths';
import { procStat, request, type Started, startProcess, stopProcess } from './processes';
import { migrate, startDatabase } from './seed';
import { longOptions, numberOption } from './options';

const args = longOptions();
const num = (name: string, fallback: number) => numberOption(args, name, fallback);
const DEVICES = num('devices', 10_000);
const SECONDS = num('seconds', 60);
const RATE = num('rate', 1);
const STORED = num('stored-lines', 10_000_000);
const QUERY_RUNS = num('query-runs', 500);
const log = (line: string) => process.stderr.write(`${line}\n`);

/** What the script prints (and writes with `--out`). */
export interface TelemetryResults {
  generated_by: string;
  date: string;
  machine: { cores: number; load_average_at_end: number[] };
  ingest: {
    devices: number;
    connected: number;
    seconds: number;
    lines_per_device_per_s: number;
    lines_sent: number;
    lines_stored: number;
    lines_lost: number;
    server_cpu_percent_of_one_core: number;
    pg_rows_inserted_per_s: number;
    pg_commits_per_s: number;
  };
  query: { stored_lines: number; lines_per_device: number; runs: number; p50_ms: number; p99_ms: number };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))];
}

async function pgCounters(db: Client): Promise<{ inserted: number; commits: number }> {
  const { rows } = await db.query<{ inserted: string; commits: string }>(
    `SELECT tup_inserted AS inserted, xact_commit AS commits FROM pg_stat_database WHERE datname = current_database()`,
  );
  return { inserted: Number(rows[0].inserted), commits: Number(rows[0].commits) };
}

async function main(): Promise<void> {
  const database = await startDatabase('telemetry', log);
  const db = new Client({ connectionString: database.url });
  let server: Started | undefined;
  let simulator: Simulator | undefined;
  try {
    await migrate(database.url);
    await db.connect();
    await db.query(`TRUNCATE users, orgs, gateway_instances, rate_limit_buckets, device_log_lines CASCADE`);
    const token = generateUserToken();
    const user = await db.query<{ id: string }>(
      `INSERT INTO users (email, username, name) VALUES ('bench@bench.example', 'bench', 'Bench') RETURNING id`,
    );
    await db.query(
      `INSERT INTO access_tokens (user_id, token_hash, note, scope) VALUES ($1, $2, 'bench', 'all')`,
      [user.rows[0].id, hashToken(token)],
    );
    const org = await db.query<{ id: string }>(`INSERT INTO orgs (name) VALUES ('bench-org') RETURNING id`);
    await db.query(`INSERT INTO org_memberships (org_id, user_id, role) VALUES ($1, $2, 'admin')`, [
      org.rows[0].id,
      user.rows[0].id,
    ]);
    await db.query(
      `INSERT INTO products (org_id, name, extensions) VALUES ($1, 'telemetry', '{"logging": true}')`,
      [org.rows[0].id],
    );

    server = await startProcess(
      'fleethub',
      'bash',
      [
        '-c',
        'ulimit -n $(ulimit -Hn); exec "$0" --max-old-space-size=1024 "$1"',
        process.execPath,
        join(BUILD_DIR, 'src/main.js'),
      ],
      {
        DATABASE_URL: database.url,
        PORT: '0',
        HOST: '127.0.0.1',
        LOG_LEVEL: 'warn',
        FLEETHUB_DATA_DIR: join(BENCH_DATA, 'server-telemetry'),
        FLEETHUB_RATE_LIMIT_API_PER_MIN: '10000000',
      },
      /fleethub listening on (http:\/\/[^\s]+)/,
    );
    const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const base = `${server.url}/api/orgs/bench-org/products/telemetry`;
    const secret = await request(`${base}/shared_secrets`, { method: 'POST', headers: auth, body: '{}' });
    if (secret.status !== 201) throw new Error(`shared secret: ${secret.status} ${secret.text}`);
    const { key, secret: value } = (secret.json as { data: { key: string; secret: string } }).data;

    // 1. Ingest.
    simulator = new Simulator({
      url: server.url,
      key,
      secret: value,
      devices: DEVICES,
      prefix: 'tele-',
      logsPerSecond: RATE,
    });
    const sim = simulator;
    sim.start(Math.min(30_000, DEVICES * 3));
    const connectDeadline = Date.now() + 120_000;
    while (sim.connected < DEVICES && Date.now() < connectDeadline) await sleep(250);
    const connected = sim.connected;
    log(`ingest: ${connected}/${DEVICES} connected; ${SECONDS} s at ${RATE} line(s)/s each`);
    const cpu0 = procStat(server.child.pid).cpuSeconds;
    const pg0 = await pgCounters(db);
    const t0 = Date.now();
    await sleep(SECONDS * 1000);
    const elapsed = (Date.now() - t0) / 1000;
    const cpu1 = procStat(server.child.pid).cpuSeconds;
    const pg1 = await pgCounters(db);
    await sim.stop();
    simulator = undefined;
    await sleep(1000); // the last batch (written 100 ms after its first line)
    // Every line of the run (the connect ramp included), so that none is counted on one side of a boundary only.
    const sent = sim.devices.reduce((n, d) => n + d.sent.logLines, 0);
    const stored = Number(
      (await db.query<{ n: string }>(`SELECT count(*) AS n FROM device_log_lines`)).rows[0].n,
    );
    const ingest = {
      devices: DEVICES,
      connected,
      seconds: Number(elapsed.toFixed(1)),
      lines_per_device_per_s: RATE,
      lines_sent: sent,
      lines_stored: stored,
      lines_lost: Math.max(0, sent - stored),
      server_cpu_percent_of_one_core: Number((((cpu1 - cpu0) / elapsed) * 100).toFixed(1)),
      pg_rows_inserted_per_s: Math.round((pg1.inserted - pg0.inserted) / elapsed),
      pg_commits_per_s: Math.round((pg1.commits - pg0.commits) / elapsed),
    };
    log(`ingest: ${JSON.stringify(ingest)}`);

    // 2. Query, over M lines in the retention window's partitions.
    const devices = await db.query<{ id: string; identifier: string }>(
      `SELECT id, identifier FROM devices ORDER BY id LIMIT $1`,
      [DEVICES],
    );
    const ids = devices.rows.map((d) => d.id);
    const t1 = Date.now();
    await db.query(`SET synchronous_commit = off`);
    const chunk = 1_000_000;
    for (let done = 0; done < STORED; done += chunk) {
      await db.query(
        `INSERT INTO device_log_lines (device_id, logged_at, level, message, meta)
         SELECT ($1::bigint[])[1 + g % cardinality($1::bigint[])],
                now() - (random() * interval '3 days'),
                (ARRAY['debug','info','warning','error'])[1 + g % 4], 'bench line ' || g, '{}'
           FROM generate_series($2::bigint, $3::bigint) g`,
        [ids, done, Math.min(STORED, done + chunk) - 1],
      );
    }
    await db.query(`ANALYZE device_log_lines`);
    log(`query: ${STORED} lines stored in ${((Date.now() - t1) / 1000).toFixed(1)} s`);
    const times: number[] = [];
    for (let i = 0; i < QUERY_RUNS; i++) {
      const device = devices.rows[(i * 7919) % devices.rows.length];
      const started = process.hrtime.bigint();
      const res = await request(`${base}/devices/${device.identifier}/logs?limit=100`, { headers: auth });
      times.push(Number(process.hrtime.bigint() - started) / 1e6);
      if (res.status !== 200) throw new Error(`logs: ${res.status} ${res.text.slice(0, 200)}`);
    }
    times.sort((a, b) => a - b);
    const query = {
      stored_lines: STORED + stored,
      lines_per_device: Math.round((STORED + stored) / ids.length),
      runs: QUERY_RUNS,
      p50_ms: Number(percentile(times, 50).toFixed(2)),
      p99_ms: Number(percentile(times, 99).toFixed(2)),
    };
    log(`query: ${JSON.stringify(query)}`);
    const report: TelemetryResults = {
      generated_by: 'bench/telemetry.ts',
      date: new Date().toISOString(),
      machine: {
        cores: os.cpus().length,
        load_average_at_end: os.loadavg().map((l) => Number(l.toFixed(2))),
      },
      ingest,
      query,
    };
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    const out = args.get('out');
    if (out) await writeFile(out, `${JSON.stringify(report, null, 2)}\n`);
  } finally {
    await simulator?.stop();
    if (server) await stopProcess(server.child);
    await db.end().catch(() => undefined);
    await database.stop();
  }
}

main().catch((err: unknown) => {
  log(err instanceof Error ? (err.stack ?? err.message) : String(err));
  process.exit(1);
});
