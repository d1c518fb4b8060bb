/**
 * The webhook benchmark (issue 32), a script of its own: `bash bench/run.sh webhooks [options]`.
 *
 * The issue's numbers: 10,000 events a second produced by a rollout, delivered to 10 endpoints with a p99
 * end-to-end latency under 2 s, the API's p99 unchanged meanwhile; one endpoint that never answers does not slow
 * the others.
 *
 * Setup: a database of its own (emptied), a fleethub allowed to deliver to 127.0.0.1 (`FLEETHUB_WEBHOOK_HTTP_HOSTS`,
 * `FLEETHUB_WEBHOOK_ALLOW_CIDRS`), and the receivers in a child process (bench/webhook-receivers.ts): `--endpoints`
 * healthy ones that verify every signature and record receive time − the event's timestamp, and one that accepts
 * connections and never answers. One webhook per receiver, created through the API, each wanting `update.*` of the
 * product: every event goes to every endpoint.
 *
 * The producer: a rollout's own statements, issued by this harness at the target rate, so that the events come from
 * the triggers of migration WebhookLiveEvents in the statements' transactions exactly as in production. A device of
 * the ring (`--devices`, default 5 s of events) steps through its update: the orchestrator's claim (a pending update
 * inserted: no event) and the gateway's `MARK_DELIVERED` (`update.started`), three of the gateway's coalesced
 * `RECORD_PROGRESS` reports (30, 60, 90 %: `update.progress` 25, 50, 75) and the completion's delete while the device
 * runs the firmware (`update.completed`), then again. Each tick (100 ms) steps the next devices of the ring, one
 * set-based statement per kind. Simulated devices cannot produce 10,000 events a second on 2 cores (a full rollout
 * of 10,000 devices is 50,000 update events over minutes, bench/rollout.ts), so the statements are issued here
 * directly; the gateway, sockets and orchestrator that would issue them in production are not in the measurement.
 * The events produced are counted in `webhook_events`, not assumed.
 *
 * Warm-up (`--warmup-seconds`, 5; 0 for none): the production at the target rate with the never-answering endpoint
 * disabled, its deliveries drained (at most `--drain-seconds`, the rest given up), nothing measured, so that the
 * first phase does not carry the server's warm-up (its compiled code, pools and connections) and the second not.
 * Phases: the API alone (`GET /api/users/me` at `--api-rate`, evenly spaced, bench/paced-load.ts) for
 * `--baseline-seconds`; then `--seconds` of production with the never-answering endpoint enabled, the API load
 * meanwhile, and the deliveries drained (at most `--drain-seconds`); then the same with it disabled. Per endpoint:
 * deliveries, p50/p99/max of receive − event time (every event of the phase, the drain included); delivered per
 * second during production; the server's CPU and RSS, PostgreSQL's CPU.
 *
 * Options: `--events-per-sec=N` (10000), `--seconds=S` (30), `--endpoints=N` (10), `--devices=N` (5 × rate),
 * `--api-rate=R` (100), `--baseline-seconds=S` (10), `--drain-seconds=S` (60), `--out=FILE` (the JSON),
 * `--publish` (the "Webhooks (issue 32)" section of docs/benchmarks.md; kept when `npm run bench` rewrites it),
 * `--publish-as=NAME` (a section of its own beside it, e.g. a run at a lower rate: `check:webhooks-NAME`),
 * `--producer-only` (the producer alone, nothing delivered: measureProducer).
 * Database: BENCH_DATABASE_URL, else the embedded cluster in .bench-data (database fleethub_bench_webhooks).
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { generateUserToken, hashToken } from '../src/auth/token-codec';
import { describeLoad, type LoadWindow, treeCpuSeconds, watchLoad } from './machine-load';
import { startPacedLoad } from './paced-load';
import { BENCH_DATA, BUILD_DIR, ROOT, sleep } from './paths';
import { procStat, request, type Started, startProcess, stopProcess } from './processes';
import { publishSection } from './publish';
import type { Measurement } from './report';
import { migrate, startDatabase } from './seed';
import type { EndpointStats } from './webhook-receivers';
import { Receivers } from './webhook-receivers-client';
import { longOptions, numberOption } from './options';

const args = longOptions();
const num = (name: string, fallback: number) => numberOption(args, name, fallback);
const RATE = num('events-per-sec', 10_000);
const SECONDS = num('seconds', 30);
const ENDPOINTS = num('endpoints', 10);
const DEVICES = num('devices', Math.max(100, RATE * 5));
const API_RATE = num('api-rate', 100);
const BASELINE_SECONDS = num('baseline-seconds', 10);
const DRAIN_SECONDS = num('drain-seconds', 60);
const WARMUP_SECONDS = num('warmup-seconds', 5);
const TICK_MS = 100;
/**
 * The server's webhook settings for throughput, unless the harness's environment gives its own: no rate limit per
 * endpoint (the server's default of 50 a second would cap the benchmark), 32 attempts in flight per endpoint, 512 in
 * all. Every other FLEETHUB_WEBHOOK_* of the environment passes through too (startProcess).
 */
const SERVER_WEBHOOK_ENV: Record<string, string> = {
  FLEETHUB_WEBHOOK_RATE_PER_SEC: '0',
  FLEETHUB_WEBHOOK_CONCURRENCY_PER_ENDPOINT: '32',
  FLEETHUB_WEBHOOK_CONCURRENCY: '512',
  ...Object.fromEntries(
    Object.entries(process.env).filter(
      (e): e is [string, string] => e[0].startsWith('FLEETHUB_WEBHOOK_') && e[1] !== undefined,
    ),
  ),
};
const P99_GOAL_MS = 2000;
const PRODUCT = 'webhooks';
const t0 = Date.now();
const log = (line: string) =>
  process.stderr.write(`[webhooks +${((Date.now() - t0) / 1000).toFixed(0)}s] ${line}\n`);

/** One phase of production (with or without the never-answering endpoint). */
export interface PhaseResults {
  never_answering_enabled: boolean;
  seconds: number;
  events_target_per_s: number;
  events_produced: number;
  events_produced_per_s: number;
  events_by_type: Record<string, number>;
  /** Deliveries to the healthy endpoints still pending when the drain ended (given up before the next phase). */
  undelivered_after_drain: number;
  /** Deliveries received by the healthy endpoints during production, a second (all endpoints together). */
  delivered_per_s: number;
  /** Seconds after production stopped until every healthy endpoint had every event; null: not within the drain. */
  drained_after_s: number | null;
  endpoints: EndpointStats[];
  /** The worst endpoint's p99 and max. */
  worst_p99_ms: number | null;
  worst_max_ms: number | null;
  never_answering_requests: number;
  api: Measurement | null;
  server: { cpu_percent_of_one_core: number; rss_mib_max: number; rss_mib_end: number };
  postgres_cpu_percent_of_one_core: number | null;
  receivers_cpu_percent_of_one_core: number;
  machine: LoadWindow;
}

export interface WebhookResults {
  generated_by: string;
  date: string;
  settings: {
    events_per_s: number;
    seconds: number;
    endpoints: number;
    devices: number;
    api_rate: number;
    /** Production before the measured phases, not measured (older results: none). */
    warmup_seconds?: number;
    /** FLEETHUB_WEBHOOK_* given to the server: the harness's defaults (SERVER_WEBHOOK_ENV) and its environment's. */
    server_webhook_env: Record<string, string>;
    producer: string;
  };
  machine: { cores: number; load_average_at_end: number[] };
  api_before: Measurement | null;
  with_never_answering: PhaseResults;
  without_never_answering: PhaseResults;
  goals: { name: string; met: boolean; detail: string }[];
}

// ---------------------------------------------------------------- the producer

/** The rollout's statements, as the orchestrator and the gateway issue them (src/firmware/pending-updates.repository.ts). */
const CLAIM = `INSERT INTO pending_updates (device_id, firmware_id) SELECT d, $2 FROM unnest($1::bigint[]) AS d
               ON CONFLICT (device_id) DO NOTHING`;
const MARK_DELIVERED = `UPDATE pending_updates p
      SET delivered_at = now(), status = NULL, progress = NULL, status_updated_at = now()
     FROM unnest($1::bigint[], $2::bigint[]) AS sent(device_id, firmware_id)
    WHERE p.device_id = sent.device_id AND p.firmware_id = sent.firmware_id`;
const RECORD_PROGRESS = `UPDATE pending_updates p
      SET status = reported.status, progress = COALESCE(reported.progress, p.progress), status_updated_at = now()
     FROM unnest($1::bigint[], $2::text[], $3::int[]) AS reported(device_id, status, progress)
    WHERE p.device_id = reported.device_id AND p.delivered_at IS NOT NULL`;
const COMPLETE = `DELETE FROM pending_updates WHERE device_id = ANY($1::bigint[]) AND firmware_id = $2`;
const PROGRESS_OF_STEP = [0, 30, 60, 90];

/** Where each device of the ring is in its update (0: none pending), and the next device to step. */
interface Ring {
  deviceIds: string[];
  step: Uint8Array;
  cursor: number;
}

/** Steps the ring's devices at `rate` events a second until stopped; each step is one event. */
function startProducer(db: Client, ring: Ring, firmwareId: string, rate: number) {
  const { deviceIds, step } = ring;
  let stepped = 0;
  let stopped = false;
  let behindTicks = 0;
  const started = Date.now();
  const loop = (async () => {
    while (!stopped) {
      const tickStarted = Date.now();
      const due = Math.floor(((tickStarted - started) / 1000) * rate) - stepped;
      const byStep: string[][] = [[], [], [], [], []];
      for (let k = 0; k < due; k++) {
        const i = ring.cursor;
        byStep[step[i]].push(deviceIds[i]);
        step[i] = (step[i] + 1) % 5;
        ring.cursor = (i + 1) % deviceIds.length;
      }
      stepped += Math.max(0, due);
      if (byStep[0].length > 0) {
        await db.query(CLAIM, [byStep[0], firmwareId]);
        await db.query(MARK_DELIVERED, [byStep[0], byStep[0].map(() => firmwareId)]);
      }
      for (const s of [1, 2, 3]) {
        if (byStep[s].length === 0) continue;
        await db.query(RECORD_PROGRESS, [
          byStep[s],
          byStep[s].map(() => 'downloading'),
          byStep[s].map(() => PROGRESS_OF_STEP[s]),
        ]);
      }
      if (byStep[4].length > 0) await db.query(COMPLETE, [byStep[4], firmwareId]);
      const spent = Date.now() - tickStarted;
      if (spent > TICK_MS) behindTicks += 1;
      await sleep(Math.max(0, TICK_MS - spent));
    }
  })();
  return {
    async stop(): Promise<{ behindTicks: number; stepped: number }> {
      stopped = true;
      await loop;
      return { behindTicks, stepped };
    },
  };
}

// ---------------------------------------------------------------- measurement

/** Deliveries of these webhooks still pending. */
async function pendingDeliveries(db: Client, webhookIds: string[]): Promise<number> {
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM webhook_deliveries WHERE state = 'pending' AND webhook_id = ANY($1::bigint[])`,
    [webhookIds],
  );
  return rows[0].n;
}

/**
 * Gives up the webhooks' pending deliveries (as their retry window would) while the server still sends them: in
 * batches of 5,000 rows taken with `FOR UPDATE SKIP LOCKED`, so that this never waits for a row the dispatcher holds
 * (its claim or its record of successes): the dispatcher may wait for a batch, never the reverse, so there is no
 * cycle. One `UPDATE` of every pending row deadlocked with the dispatcher's batched records (each locking rows in
 * its own order). No `ORDER BY id`: it walked the primary key through every delivered row for each batch; the
 * partial indexes of pending rows serve this as it is. Rows skipped because they were locked are taken by a later
 * batch; the number given up.
 */
async function giveUpBacklog(db: Client, webhookIds: string[]): Promise<number> {
  let total = 0;
  for (;;) {
    const batch = await db.query(
      `WITH doomed AS (
         SELECT id FROM webhook_deliveries
          WHERE state = 'pending' AND webhook_id = ANY($1::bigint[])
          LIMIT 5000
            FOR UPDATE SKIP LOCKED
       )
       UPDATE webhook_deliveries d SET state = 'failed', completed_at = now()
         FROM doomed WHERE d.id = doomed.id`,
      [webhookIds],
    );
    total += batch.rowCount ?? 0;
    if ((batch.rowCount ?? 0) > 0) continue;
    if ((await pendingDeliveries(db, webhookIds)) === 0) return total;
    await sleep(50);
  }
}

/** Production at the target rate with the never-answering endpoint disabled, drained; nothing measured. */
async function warmUp(c: Context, setNeverAnswering: (enabled: boolean) => Promise<void>): Promise<void> {
  if (WARMUP_SECONDS <= 0) return;
  log(`warm-up: ${WARMUP_SECONDS} s at ${RATE} events/s, not measured`);
  await setNeverAnswering(false);
  const producer = startProducer(c.producerDb, c.ring, c.firmwareId, RATE);
  await sleep(WARMUP_SECONDS * 1000);
  await producer.stop();
  const stopAt = Date.now();
  while (Date.now() - stopAt < DRAIN_SECONDS * 1000) {
    if ((await pendingDeliveries(c.db, c.healthyWebhookIds)) === 0) break;
    await sleep(250);
  }
  const left = await giveUpBacklog(c.db, c.healthyWebhookIds);
  log(
    `warm-up: drained in ${((Date.now() - stopAt) / 1000).toFixed(1)} s${left > 0 ? `, ${left} given up` : ''}`,
  );
  await setNeverAnswering(true);
}

async function maxEventId(db: Client): Promise<number> {
  const { rows } = await db.query<{ id: string | null }>(`SELECT max(id) AS id FROM webhook_events`);
  return Number(rows[0].id ?? 0);
}

/** PostgreSQL's postmaster (a backend's parent), when it runs on this machine. */
function postmasterOf(backend: number): number | null {
  try {
    const text = readFileSync(`/proc/${backend}/stat`, 'utf8');
    return Number(text.slice(text.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return null;
  }
}

const mib = (bytes: number) => Number((bytes / 1024 / 1024).toFixed(1));
const pct = (seconds: number, elapsed: number) => Number(((seconds / elapsed) * 100).toFixed(1));

interface Context {
  db: Client;
  producerDb: Client;
  server: Started;
  receivers: Receivers;
  postmaster: number | null;
  ring: Ring;
  healthyWebhookIds: string[];
  firmwareId: string;
  token: string;
}

async function runPhase(c: Context, neverAnsweringEnabled: boolean): Promise<PhaseResults> {
  const label = neverAnsweringEnabled ? 'with the never-answering endpoint' : 'without it';
  log(`phase ${label}: ${SECONDS} s at ${RATE} events/s to ${ENDPOINTS} endpoints`);
  const firstEvent = (await maxEventId(c.db)) + 1;
  // The events of this phase are those that occur from now on (their timestamp is their transaction's start).
  await c.receivers.collect(Date.now());
  const pid = c.server.child.pid;
  const cpu0 = procStat(pid).cpuSeconds;
  const pg0 = c.postmaster === null ? 0 : treeCpuSeconds([c.postmaster]);
  const rc0 = procStat(c.receivers.child.pid).cpuSeconds;
  const load = watchLoad(() => (c.postmaster === null ? [] : [c.postmaster]));
  let rssMax = 0;
  const rssSampler = setInterval(() => (rssMax = Math.max(rssMax, procStat(pid).rss)), 1000);
  const api = startPacedLoad(
    `${c.server.url}/api/users/me`,
    { authorization: `Bearer ${c.token}` },
    API_RATE,
    8,
  );
  const counts0 = await c.receivers.counts();
  const started = Date.now();
  const producer = startProducer(c.producerDb, c.ring, c.firmwareId, RATE);
  await sleep(SECONDS * 1000);
  const { behindTicks } = await producer.stop();
  const elapsed = (Date.now() - started) / 1000;
  const counts1 = await c.receivers.counts();
  const apiResult = await api.stop();
  const cpu1 = procStat(pid).cpuSeconds;
  const pg1 = c.postmaster === null ? 0 : treeCpuSeconds([c.postmaster]);
  const rc1 = procStat(c.receivers.child.pid).cpuSeconds;
  const machine = load.stop();
  const byType = await c.db.query<{ type: string; n: number }>(
    `SELECT type, count(*)::int AS n FROM webhook_events WHERE id >= $1 GROUP BY type ORDER BY type`,
    [firstEvent],
  );
  const eventsByType = Object.fromEntries(byType.rows.map((r) => [r.type, r.n]));
  const produced = byType.rows.reduce((sum, r) => sum + r.n, 0);
  if (behindTicks > 0) log(`producer: ${behindTicks} ticks took longer than ${TICK_MS} ms`);
  log(`produced ${produced} events in ${elapsed.toFixed(1)} s; ${describeLoad(machine)}`);

  // Drain: every healthy endpoint has every event of the phase.
  const stopAt = Date.now();
  let drainedAfter: number | null = null;
  for (;;) {
    const { received } = await c.receivers.counts();
    if (received.every((n) => n >= produced)) {
      drainedAfter = (Date.now() - stopAt) / 1000;
      break;
    }
    if (Date.now() - stopAt > DRAIN_SECONDS * 1000) {
      log(`drain: not complete after ${DRAIN_SECONDS} s (${received.join(', ')} of ${produced})`);
      break;
    }
    await sleep(250);
  }
  rssMax = Math.max(rssMax, procStat(pid).rss);
  clearInterval(rssSampler);
  const stats = await c.receivers.collect(Number.MAX_SAFE_INTEGER);
  // What the healthy endpoints did not get within the drain is given up here (as the retry window would), so that
  // the next phase starts without this one's backlog; the number is reported.
  const undelivered = await giveUpBacklog(c.db, c.healthyWebhookIds);
  const delivered = counts1.received.reduce((a, b) => a + b, 0) - counts0.received.reduce((a, b) => a + b, 0);
  const p99s = stats.endpoints.map((e) => e.latency_ms?.p99 ?? null).filter((v): v is number => v !== null);
  const maxes = stats.endpoints.map((e) => e.latency_ms?.max ?? null).filter((v): v is number => v !== null);
  const results: PhaseResults = {
    never_answering_enabled: neverAnsweringEnabled,
    seconds: Number(elapsed.toFixed(1)),
    events_target_per_s: RATE,
    events_produced: produced,
    events_produced_per_s: Math.round(produced / elapsed),
    events_by_type: eventsByType,
    undelivered_after_drain: undelivered,
    delivered_per_s: Math.round(delivered / elapsed),
    drained_after_s: drainedAfter === null ? null : Number(drainedAfter.toFixed(1)),
    endpoints: stats.endpoints,
    worst_p99_ms: p99s.length ? Math.max(...p99s) : null,
    worst_max_ms: maxes.length ? Math.max(...maxes) : null,
    never_answering_requests: stats.never_answering_requests,
    api: apiResult,
    server: {
      cpu_percent_of_one_core: pct(cpu1 - cpu0, elapsed),
      rss_mib_max: mib(rssMax),
      rss_mib_end: mib(procStat(pid).rss),
    },
    postgres_cpu_percent_of_one_core: c.postmaster === null ? null : pct(pg1 - pg0, elapsed),
    receivers_cpu_percent_of_one_core: pct(rc1 - rc0, elapsed),
    machine,
  };
  log(`phase ${label}: ${JSON.stringify({ ...results, endpoints: undefined })}`);
  return results;
}

/**
 * `--producer-only`: the producer without a server, so nothing is delivered: `--endpoints` webhooks (0: none) are
 * inserted directly, wanting every `update.*` event, and the producer runs `--seconds` at `--events-per-sec`. What
 * it reaches when the deliveries do not compete for PostgreSQL (with 0 webhooks the triggers find nobody to write
 * for: steps are counted, no event is written).
 */
async function measureProducer(
  db: Client,
  producerDb: Client,
  postmaster: number | null,
  orgId: string,
  deviceIds: string[],
  firmwareId: string,
): Promise<void> {
  await db.query(
    `INSERT INTO webhooks (org_id, url, event_types, product, secret_encrypted)
     SELECT $1, 'http://127.0.0.1:9/hook', ARRAY['update.*'], $2, '\\x00'::bytea FROM generate_series(1, $3::int)`,
    [orgId, PRODUCT, ENDPOINTS],
  );
  const ring: Ring = { deviceIds, step: new Uint8Array(deviceIds.length), cursor: 0 };
  const firstEvent = (await maxEventId(db)) + 1;
  const pg0 = postmaster === null ? 0 : treeCpuSeconds([postmaster]);
  log(`producer only: ${SECONDS} s at ${RATE} events/s, ${ENDPOINTS} webhooks, ${deviceIds.length} devices`);
  const started = Date.now();
  const producer = startProducer(producerDb, ring, firmwareId, RATE);
  await sleep(SECONDS * 1000);
  const { behindTicks, stepped } = await producer.stop();
  const elapsed = (Date.now() - started) / 1000;
  const pg1 = postmaster === null ? 0 : treeCpuSeconds([postmaster]);
  const { rows } = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM webhook_events WHERE id >= $1`,
    [firstEvent],
  );
  const result = {
    seconds: Number(elapsed.toFixed(1)),
    events_target_per_s: RATE,
    steps_per_s: Math.round(stepped / elapsed),
    events_produced_per_s: Math.round(rows[0].n / elapsed),
    ticks_over_100_ms: behindTicks,
    postgres_cpu_percent_of_one_core: postmaster === null ? null : pct(pg1 - pg0, elapsed),
  };
  log(`producer only: ${JSON.stringify(result)}`);
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
}

// ---------------------------------------------------------------- goals and report

function judge(before: Measurement | null, a: PhaseResults, b: PhaseResults): WebhookResults['goals'] {
  const goals: WebhookResults['goals'] = [];
  const produced = Math.min(a.events_produced_per_s, b.events_produced_per_s);
  goals.push({
    name: `${RATE.toLocaleString('en')} events a second produced`,
    met: produced >= RATE * 0.95,
    detail: `${a.events_produced_per_s.toLocaleString('en')} and ${b.events_produced_per_s.toLocaleString('en')} a second produced`,
  });
  const drained = a.drained_after_s !== null && b.drained_after_s !== null;
  const worst = Math.max(a.worst_p99_ms ?? Infinity, b.worst_p99_ms ?? Infinity);
  goals.push({
    name: `every event delivered to ${ENDPOINTS} endpoints, p99 end to end under ${P99_GOAL_MS} ms`,
    met: drained && worst < P99_GOAL_MS,
    detail:
      `worst endpoint p99 ${String(a.worst_p99_ms)} ms (with the never-answering endpoint), ${String(b.worst_p99_ms)} ms (without)` +
      (drained ? '' : `; not every event delivered within ${DRAIN_SECONDS} s of the end`),
  });
  // "Unchanged": within 1.5 × the p99 before, or 10 ms of it when that is more (a p99 of a few ms moves by more
  // than half on a shared machine whatever the server does).
  const apiBefore = before?.latency_ms.p99 ?? null;
  const apiDuring = Math.max(a.api?.latency_ms.p99 ?? Infinity, b.api?.latency_ms.p99 ?? Infinity);
  goals.push({
    name: "the API's p99 unchanged (within 1.5 × or 10 ms of the p99 before)",
    met: apiBefore !== null && apiDuring <= Math.max(apiBefore * 1.5, apiBefore + 10),
    detail: `GET /api/users/me p99 ${String(apiBefore)} ms before, ${String(a.api?.latency_ms.p99)} / ${String(b.api?.latency_ms.p99)} ms during`,
  });
  // "Does not slow the others": the healthy endpoints' worst p99 with it within 1.2 × or 100 ms of without it.
  const withIt = a.worst_p99_ms ?? Infinity;
  const without = b.worst_p99_ms ?? Infinity;
  goals.push({
    name: 'a never-answering endpoint does not slow the others (worst p99 with it within 1.2 × or 100 ms of without)',
    met: withIt <= Math.max(without * 1.2, without + 100),
    detail: `worst p99 ${String(a.worst_p99_ms)} ms with it, ${String(b.worst_p99_ms)} ms without; it received ${a.never_answering_requests} requests`,
  });
  return goals;
}

const n = (v: number | null | undefined) => (v === null || v === undefined ? '—' : v.toLocaleString('en'));

export function renderSection(r: WebhookResults, name?: string): string {
  const a = r.with_never_answering;
  const b = r.without_never_answering;
  const s = r.settings;
  const lines: string[] = [];
  lines.push(
    name === undefined
      ? `### Webhooks (issue 32)`
      : `### Webhooks (issue 32): ${n(s.events_per_s)} events a second (${name})`,
  );
  lines.push('');
  lines.push(
    `\`bash bench/run.sh webhooks --events-per-sec=${s.events_per_s} --seconds=${s.seconds} --endpoints=${s.endpoints}\` ` +
      `(${r.date.slice(0, 10)}, ${r.machine.cores} cores, load average at the end ${r.machine.load_average_at_end.join(' / ')}). ` +
      `${s.endpoints} receivers on 127.0.0.1 (a child process: every signature verified with the Standard Webhooks ` +
      `algorithm) and one that accepts connections and never answers, each a webhook wanting \`update.*\`: every ` +
      `event goes to every endpoint. Producer: ${s.producer} End to end: receive time − the event's \`timestamp\`. ` +
      `The API: \`GET /api/users/me\` at ${s.api_rate} requests a second, evenly spaced (\`bench/paced-load.ts\`). ` +
      (s.warmup_seconds
        ? `Before the phases, ${s.warmup_seconds} s of the same production with the never-answering endpoint ` +
          'disabled, drained and not measured (the server warm for both phases). '
        : '') +
      `Server settings: ${
        Object.keys(s.server_webhook_env).length === 0
          ? 'the defaults'
          : Object.entries(s.server_webhook_env)
              .map(([k, v]) => `\`${k}=${v}\``)
              .join(', ')
      } ` +
      '(FLEETHUB_WEBHOOK_CONCURRENCY_PER_ENDPOINT 4, FLEETHUB_WEBHOOK_CONCURRENCY 64, FLEETHUB_WEBHOOK_TIMEOUT_MS 10,000 unless given).',
  );
  lines.push('');
  lines.push('| | with the never-answering endpoint | without it |');
  lines.push('| --- | --- | --- |');
  const row = (name: string, f: (p: PhaseResults) => string) => lines.push(`| ${name} | ${f(a)} | ${f(b)} |`);
  row(
    'events produced a second (target)',
    (p) =>
      `${n(p.events_produced_per_s)} (${n(p.events_target_per_s)}), ${n(p.events_produced)} in ${p.seconds} s`,
  );
  row('events by type', (p) =>
    Object.entries(p.events_by_type)
      .map(([type, count]) => `${type} ${n(count)}`)
      .join(', '),
  );
  row('deliveries received a second during production (all endpoints)', (p) => n(p.delivered_per_s));
  row('every event at every endpoint after production stopped', (p) =>
    p.drained_after_s === null
      ? `not within ${DRAIN_SECONDS} s: ${n(p.undelivered_after_drain)} deliveries still pending (given up then; not in the latencies)`
      : `${p.drained_after_s} s`,
  );
  row('end to end p50 / p99 / max, per endpoint (ms)', (p) =>
    p.endpoints
      .map((e) => (e.latency_ms ? `${e.latency_ms.p50} / ${e.latency_ms.p99} / ${e.latency_ms.max}` : '—'))
      .join('; '),
  );
  row('worst endpoint p99 / max (ms)', (p) => `${n(p.worst_p99_ms)} / ${n(p.worst_max_ms)}`);
  row(
    'bad signatures; redeliveries',
    (p) =>
      `${p.endpoints.reduce((x, e) => x + e.bad_signatures, 0)}; ${p.endpoints.reduce((x, e) => x + e.received - e.unique - e.bad_signatures - e.earlier, 0)}`,
  );
  row('requests to the never-answering endpoint', (p) => n(p.never_answering_requests));
  row(
    'API p50 / p99 (ms), before: ' +
      `${n(r.api_before?.latency_ms.p50)} / ${n(r.api_before?.latency_ms.p99)}`,
    (p) => `${n(p.api?.latency_ms.p50)} / ${n(p.api?.latency_ms.p99)}`,
  );
  row(
    'server CPU (% of one core); RSS max (MiB)',
    (p) => `${p.server.cpu_percent_of_one_core}; ${p.server.rss_mib_max}`,
  );
  row(
    'PostgreSQL CPU; receivers CPU (% of one core)',
    (p) => `${p.postgres_cpu_percent_of_one_core ?? '—'}; ${p.receivers_cpu_percent_of_one_core}`,
  );
  row('machine during production', (p) => describeLoad(p.machine));
  lines.push('');
  lines.push('Goals:');
  lines.push('');
  for (const g of r.goals) lines.push(`- ${g.met ? '**met**' : '**missed**'}: ${g.name} (${g.detail})`);
  return lines.join('\n');
}

function publishName(value: string | undefined): string {
  if (value === undefined || !/^[a-z0-9-]+$/.test(value))
    throw new Error('--publish-as=NAME: lower-case letters, digits, -');
  return value;
}

/** The `check:webhooks` section of docs/benchmarks.md (or `check:webhooks-NAME`, a run of its own beside it). */
async function publish(r: WebhookResults, name?: string): Promise<void> {
  const path = await publishSection(
    ROOT,
    name === undefined ? 'webhooks' : `webhooks-${name}`,
    renderSection(r, name),
  );
  log(`published: ${path}`);
}

// ---------------------------------------------------------------- main

async function main(): Promise<void> {
  const database = await startDatabase('webhooks', log);
  const db = new Client({ connectionString: database.url });
  const producerDb = new Client({ connectionString: database.url });
  let server: Started | undefined;
  let receivers: Receivers | undefined;
  try {
    await migrate(database.url);
    await db.connect();
    await producerDb.connect();
    await db.query(`TRUNCATE users, orgs, gateway_instances, rate_limit_buckets, webhook_events CASCADE`);
    const token = generateUserToken();
    const user = await db.query<{ id: string }>(
      `INSERT INTO users (email, username, name) VALUES ('bench@bench.example', 'bench', 'Bench') RETURNING id`,
    );
    await db.query(
      `INSERT INTO access_tokens (user_id, token_hash, note, scope) VALUES ($1, $2, 'bench', 'all')`,
      [user.rows[0].id, hashToken(token)],
    );
    const org = await db.query<{ id: string }>(`INSERT INTO orgs (name) VALUES ('bench-org') RETURNING id`);
    const orgId = org.rows[0].id;
    await db.query(`INSERT INTO org_memberships (org_id, user_id, role) VALUES ($1, $2, 'admin')`, [
      orgId,
      user.rows[0].id,
    ]);
    const product = await db.query<{ id: string }>(
      `INSERT INTO products (org_id, name) VALUES ($1, $2) RETURNING id`,
      [orgId, PRODUCT],
    );
    const productId = product.rows[0].id;
    const uuid = randomUUID();
    const firmware = await db.query<{ id: string }>(
      `INSERT INTO firmwares (product_id, uuid, version, version_sort_key, meta_product, platform, architecture,
                              tool, size, sha256, chunk_sha256, storage_key)
       VALUES ($1, $2, '2.0.0', '2.0.0', $3, 'rpi4', 'aarch64', 'fwup', 1, repeat('0', 64), '{}', 'bench')
       RETURNING id`,
      [productId, uuid, PRODUCT],
    );
    const firmwareId = firmware.rows[0].id;
    // The devices already report the target firmware: the completion's delete is then `update.completed`.
    const devices = await db.query<{ id: string }>(
      `INSERT INTO devices (org_id, product_id, identifier, firmware_metadata, firmware_version, firmware_platform)
       SELECT $1, $2, 'wh-' || lpad(g::text, 7, '0'), jsonb_build_object('uuid', $3::text, 'version', '2.0.0'),
              '2.0.0', 'rpi4'
         FROM generate_series(1, $4::int) AS g
       RETURNING id`,
      [orgId, productId, uuid, DEVICES],
    );
    const deviceIds = devices.rows.map((d) => d.id);
    const backend = (await db.query<{ pid: number }>(`SELECT pg_backend_pid() AS pid`)).rows[0].pid;
    const postmaster = database.embedded ? postmasterOf(backend) : null;
    if (args.has('producer-only')) {
      await measureProducer(db, producerDb, postmaster, orgId, deviceIds, firmwareId);
      return;
    }

    const started = await Receivers.start(ENDPOINTS);
    receivers = started.receivers;
    server = await startProcess(
      'fleethub',
      'bash',
      [
        '-c',
        `ulimit -n $(ulimit -Hn); exec "$0" --max-old-space-size=1024 $BENCH_SERVER_NODE_ARGS "$1"`,
        process.execPath,
        join(BUILD_DIR, 'src/main.js'),
      ],
      {
        DATABASE_URL: database.url,
        PORT: '0',
        HOST: '127.0.0.1',
        LOG_LEVEL: 'warn',
        FLEETHUB_DATA_DIR: join(BENCH_DATA, 'server-webhooks'),
        FLEETHUB_RATE_LIMIT_API_PER_MIN: '10000000',
        // The harness's environment passes through (startProcess), so FLEETHUB_WEBHOOK_CONCURRENCY_PER_ENDPOINT and
        // the like can be tried without an edit.
        ...SERVER_WEBHOOK_ENV,
        FLEETHUB_WEBHOOK_HTTP_HOSTS: '127.0.0.1',
        FLEETHUB_WEBHOOK_ALLOW_CIDRS: '127.0.0.1/32',
      },
      /fleethub listening on (http:\/\/[^\s]+)/,
    );
    const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const hooks = `${server.url}/api/orgs/bench-org/webhooks`;
    const create = async (port: number) => {
      const reply = await request(hooks, {
        method: 'POST',
        headers: auth,
        body: JSON.stringify({
          url: `http://127.0.0.1:${port}/hook`,
          event_types: ['update.*'],
          product: PRODUCT,
        }),
      });
      if (reply.status !== 201) throw new Error(`webhook: ${reply.status} ${reply.text}`);
      return (reply.json as { data: { id: string; secret: string } }).data;
    };
    const healthy = [];
    for (const port of started.ports) healthy.push(await create(port));
    const neverAnswering = await create(started.neverAnswering);
    receivers.send({ type: 'secrets', secrets: healthy.map((h) => h.secret) });
    const ring: Ring = { deviceIds, step: new Uint8Array(deviceIds.length), cursor: 0 };
    const context: Context = {
      db,
      producerDb,
      server,
      receivers,
      postmaster,
      ring,
      healthyWebhookIds: healthy.map((h) => h.id),
      firmwareId,
      token,
    };

    const setNeverAnswering = async (enabled: boolean) => {
      const reply = await request(`${hooks}/${neverAnswering.id}`, {
        method: 'PATCH',
        headers: auth,
        body: JSON.stringify({ enabled }),
      });
      if (reply.status !== 200) throw new Error(`never-answering endpoint: ${reply.status} ${reply.text}`);
    };
    await warmUp(context, setNeverAnswering);

    log(`API alone: ${BASELINE_SECONDS} s at ${API_RATE} requests/s`);
    const baseline = startPacedLoad(
      `${server.url}/api/users/me`,
      { authorization: `Bearer ${token}` },
      API_RATE,
      8,
    );
    await sleep(BASELINE_SECONDS * 1000);
    const apiBefore = await baseline.stop();
    log(`API alone: ${JSON.stringify(apiBefore?.latency_ms)}`);

    const withIt = await runPhase(context, true);
    await setNeverAnswering(false);
    const without = await runPhase(context, false);

    const report: WebhookResults = {
      generated_by: 'bench/webhooks.ts',
      date: new Date().toISOString(),
      settings: {
        events_per_s: RATE,
        seconds: SECONDS,
        endpoints: ENDPOINTS,
        devices: DEVICES,
        api_rate: API_RATE,
        warmup_seconds: WARMUP_SECONDS,
        server_webhook_env: SERVER_WEBHOOK_ENV,
        producer:
          `a rollout's own statements (the orchestrator's claim, the gateway's MARK_DELIVERED and coalesced ` +
          `RECORD_PROGRESS, the completion's delete) issued by the harness over ${DEVICES.toLocaleString('en')} ` +
          'devices every 100 ms, the events written by the triggers of migration WebhookLiveEvents in those ' +
          'statements (update.started, update.progress 25/50/75, update.completed); no simulated devices: they ' +
          'cannot make 10,000 events a second on this machine.',
      },
      machine: {
        cores: os.cpus().length,
        load_average_at_end: os.loadavg().map((l) => Number(l.toFixed(2))),
      },
      api_before: apiBefore,
      with_never_answering: withIt,
      without_never_answering: without,
      goals: judge(apiBefore, withIt, without),
    };
    const json = `${JSON.stringify(report, null, 2)}\n`;
    process.stdout.write(json);
    const out = args.get('out');
    if (out) await writeFile(out, json);
    if (args.has('publish')) await publish(report);
    if (args.has('publish-as')) await publish(report, publishName(args.get('publish-as')));
  } finally {
    if (server) await stopProcess(server.child);
    if (receivers) {
      receivers.send({ type: 'stop' });
      await stopProcess(receivers.child);
    }
    await producerDb.end().catch(() => undefined);
    await db.end().catch(() => undefined);
    await database.stop();
  }
}

main().catch((err: unknown) => {
  log(err instanceof Error ? (err.stack ?? err.message) : String(err));
  process.exit(1);
});
