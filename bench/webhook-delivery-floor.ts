/**
 * The webhook delivery floor (issue 32): `bash bench/run.sh webhook-delivery-floor [options]`
 * (`npm run bench:webhook-floor -- [options]`).
 *
 * The issue asks for 10,000 events a second delivered to 10 endpoints: 100,000 signed HTTP POSTs a second. This
 * measures how many of them this machine can send at all, with no database and no fleethub: the least any correct
 * implementation does per delivery, and nothing more. For each event and each endpoint: the Standard Webhooks
 * signature with fleethub's own `signature()` and that endpoint's secret, one POST over a keep-alive connection
 * (node:http, at most `--concurrency` in flight per endpoint, as the dispatcher allows), the answer read to its end.
 * The receivers are bench/webhooks.ts's (bench/webhook-receivers.ts, a child process): they verify every signature
 * and record receive time − the event's `timestamp`. Whatever fleethub does besides (the outbox's rows, claims,
 * records of each attempt, the retry and rate-limit bookkeeping, decrypting the secret) is what a delivery costs
 * above this floor; what this floor cannot reach, no implementation on this machine reaches.
 *
 * The events are `update.progress` as fleethub sends them during a rollout: the envelope of
 * WebhookDispatcher.body, `data` as migration WebhookLiveEvents builds it (keys in jsonb's order, as fleethub reads
 * them back), a fresh `evt_` id each, one body per event signed per endpoint; the headers of WebhookSender.send.
 * An event's `timestamp` is when it was due, so a sender that falls behind shows it in the latency.
 *
 * Open loop (default): `--events-per-sec` events a second for `--seconds`, each to every endpoint (a queue per
 * endpoint), then the backlog drained for at most `--drain-seconds` (what is left then is reported and dropped;
 * the latencies are those of the deliveries received). `--max`: closed loop, as fast as it goes (a new event when
 * fewer than 2 × `--concurrency` are not yet at every endpoint; `timestamp` = when it was made).
 * Reported: deliveries a second (received by the healthy endpoints, during the run), p50/p99/max per endpoint from
 * the receivers, this process's CPU and the receivers', and the machine's load meanwhile (bench/machine-load.ts).
 *
 * Options: `--events-per-sec=N` (10000), `--seconds=S` (15), `--endpoints=N` (10), `--concurrency=N` per endpoint
 * (32: bench/webhooks.ts's FLEETHUB_WEBHOOK_CONCURRENCY_PER_ENDPOINT; the server's own default is 4),
 * `--drain-seconds=S` (30), `--max`, `--out=FILE` (the JSON), `--publish` (its section of docs/benchmarks.md,
 * `check:webhook-delivery-floor`, beside bench/webhooks.ts's: the closed loop's run; kept when `npm run bench`
 * rewrites the rest).
 */
import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import { VERSION_OF } from '../src/webhooks/webhook-event-types';
import { newSecret, signature } from '../src/webhooks/webhook-signature';
import { describeLoad, type LoadWindow, watchLoad } from './machine-load';
import { ROOT, sleep } from './paths';
import { procStat, stopProcess } from './processes';
import { publishSection } from './publish';
import type { EndpointStats } from './webhook-receivers';
import { Receivers } from './webhook-receivers-client';
import { longOptions, numberOption } from './options';

const args = longOptions();
const num = (name: string, fallback: number) => numberOption(args, name, fallback);
const MAX = args.has('max');
const RATE = num('events-per-sec', 10_000);
const SECONDS = num('seconds', 15);
const ENDPOINTS = num('endpoints', 10);
const CONCURRENCY = num('concurrency', 32);
const DRAIN_SECONDS = num('drain-seconds', 30);
/** Closed loop: events not yet at every endpoint, at most (enough to keep every endpoint's slots busy). */
const WINDOW = 2 * CONCURRENCY;
const TICK_MS = 5;
const DEVICES = 50_000;
const t0 = Date.now();
const log = (line: string) =>
  process.stderr.write(`[webhook-floor +${((Date.now() - t0) / 1000).toFixed(0)}s] ${line}\n`);

// ---------------------------------------------------------------- events

interface WebhookEvent {
  id: string;
  body: string;
  bytes: number;
  /** Endpoints it has not reached yet. */
  left: number;
}

const FIRMWARE_UUID = randomUUID();
const PERCENTS = [25, 50, 75];
let made = 0;

/**
 * An `update.progress` event as fleethub sends it (WebhookDispatcher.body): `data` in the order PostgreSQL's jsonb
 * gives its keys back (shorter first), the device of a rollout's group, as bench/webhooks.ts names them.
 */
function makeEvent(occurredAt: number): WebhookEvent {
  const device = `wh-${String(made % DEVICES).padStart(7, '0')}`;
  const percent = PERCENTS[Math.floor(made / DEVICES) % PERCENTS.length];
  made += 1;
  const id = `evt_${randomUUID().replaceAll('-', '')}`;
  const body = JSON.stringify({
    id,
    type: 'update.progress',
    version: VERSION_OF.get('update.progress') ?? 1,
    timestamp: new Date(occurredAt).toISOString(),
    org: 'bench-org',
    product: 'webhooks',
    subject: `device:${device}`,
    data: {
      via: 'deployment_group',
      actor: { type: 'system' },
      percent,
      product: 'webhooks',
      release: 1,
      identifier: device,
      firmware_uuid: FIRMWARE_UUID,
      deployment_group: 'rollout',
      firmware_version: '2.0.0',
    },
  });
  return { id, body, bytes: Buffer.byteLength(body), left: ENDPOINTS };
}

// ---------------------------------------------------------------- deliveries

/** One endpoint: its events not yet sent, in order, and the attempts in flight. */
interface Endpoint {
  port: number;
  secret: string;
  queue: WebhookEvent[];
  head: number;
  inFlight: number;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
let delivered = 0;
let failed = 0;
/** Events made and not yet at every endpoint. */
let outstanding = 0;
let sending = true;

/** Sign, POST, read the answer to its end: the whole of one delivery. */
function deliver(endpoint: Endpoint, event: WebhookEvent): void {
  const timestamp = Math.floor(Date.now() / 1000);
  endpoint.inFlight += 1;
  let settled = false;
  const done = (ok: boolean) => {
    if (settled) return;
    settled = true;
    endpoint.inFlight -= 1;
    if (ok) delivered += 1;
    else failed += 1;
    event.left -= 1;
    if (event.left === 0) outstanding -= 1;
    pump(endpoint);
  };
  const request = http.request(
    {
      host: '127.0.0.1',
      port: endpoint.port,
      path: '/hook',
      method: 'POST',
      agent,
      headers: {
        'webhook-id': event.id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signature(endpoint.secret, event.id, timestamp, event.body),
        'content-type': 'application/json',
        'content-length': String(event.bytes),
        'user-agent': 'fleethub-webhooks/1',
      },
    },
    (response) => {
      const status = response.statusCode ?? 0;
      response.on('end', () => done(status >= 200 && status < 300));
      response.on('error', () => done(false));
      response.resume();
    },
  );
  request.on('error', () => done(false));
  request.end(event.body);
}

/** After a delivery: closed loop, new events (then every endpoint may have work); else this endpoint's next. */
function pump(endpoint: Endpoint): void {
  if (MAX && sending && refill()) for (const e of endpoints) start(e);
  else start(endpoint);
}

/** Starts the endpoint's next deliveries while it has room (the dispatcher's per-endpoint limit). */
function start(endpoint: Endpoint): void {
  while (sending && endpoint.inFlight < CONCURRENCY && endpoint.head < endpoint.queue.length) {
    const event = endpoint.queue[endpoint.head];
    endpoint.head += 1;
    deliver(endpoint, event);
  }
  if (endpoint.head > 10_000 && endpoint.head * 2 > endpoint.queue.length) {
    endpoint.queue = endpoint.queue.slice(endpoint.head);
    endpoint.head = 0;
  }
}

let endpoints: Endpoint[] = [];

function enqueue(event: WebhookEvent): void {
  outstanding += 1;
  for (const endpoint of endpoints) endpoint.queue.push(event);
}

/** Closed loop: new events while fewer than WINDOW are not yet everywhere; whether it made any. */
function refill(): boolean {
  if (outstanding >= WINDOW) return false;
  while (outstanding < WINDOW) enqueue(makeEvent(Date.now()));
  return true;
}

/** Open loop: every TICK_MS, the events due by now (each stamped with its due time), sent to every endpoint. */
async function produce(rate: number, seconds: number): Promise<number> {
  const started = Date.now();
  const end = started + seconds * 1000;
  let count = 0;
  for (;;) {
    const now = Math.min(Date.now(), end);
    const due = Math.floor(((now - started) / 1000) * rate);
    for (; count < due; count++) enqueue(makeEvent(started + (count * 1000) / rate));
    for (const endpoint of endpoints) start(endpoint);
    if (now >= end) return count;
    await sleep(TICK_MS);
  }
}

// ---------------------------------------------------------------- main

const pct = (seconds: number, elapsed: number) => Number(((seconds / elapsed) * 100).toFixed(1));
const queued = () => endpoints.reduce((sum, e) => sum + e.queue.length - e.head, 0);
const inFlight = () => endpoints.reduce((sum, e) => sum + e.inFlight, 0);

export interface FloorResults {
  generated_by: string;
  date: string;
  settings: {
    mode: 'open loop' | 'closed loop (--max)';
    events_per_s: number | null;
    seconds: number;
    endpoints: number;
    concurrency_per_endpoint: number;
    body_bytes: number;
  };
  events_made: number;
  events_per_s: number;
  /** Received by the healthy endpoints during the run (all endpoints together), a second. */
  delivered_per_s: number;
  /** Deliveries sent and answered 2xx during the run, a second (this side's count). */
  answered_per_s: number;
  failed: number;
  /** Open loop: deliveries left when the run ended, and when the drain ended (dropped then). */
  backlog_at_end: number;
  undelivered_after_drain: number;
  drained_after_s: number | null;
  endpoints: EndpointStats[];
  worst_p50_ms: number | null;
  worst_p99_ms: number | null;
  worst_max_ms: number | null;
  sender_cpu_percent_of_one_core: number;
  receivers_cpu_percent_of_one_core: number;
  /**
   * CPU time per delivery received, each side, and the deliveries a second the machine's cores would give at that
   * cost if nothing else ran (the figure to compare when other processes took part of the CPU meanwhile).
   */
  sender_cpu_us_per_delivery: number;
  receivers_cpu_us_per_delivery: number;
  deliveries_per_s_at_all_cores: number;
  machine: LoadWindow;
  load_average: number[];
}

/** The issue's goal: 10,000 events a second, each to 10 endpoints. */
const GOAL_DELIVERIES_PER_S = 10_000 * 10;

function renderSection(r: FloorResults): string {
  const n = (v: number | null) => (v === null ? '—' : v.toLocaleString('en'));
  const s = r.settings;
  const reached = Math.max(r.delivered_per_s, r.deliveries_per_s_at_all_cores);
  return [
    '### Webhook delivery floor (issue 32): what this machine can send at all',
    '',
    `\`bash bench/run.sh webhook-delivery-floor --max --seconds=${s.seconds} --endpoints=${s.endpoints} ` +
      `--concurrency=${s.concurrency_per_endpoint}\` (${r.date.slice(0, 10)}, ${os.cpus().length} cores, load ` +
      `average at the end ${r.load_average.join(' / ')}). No database and no fleethub: for each event and each ` +
      "endpoint, the Standard Webhooks signature (fleethub's `signature()`), one POST of the `update.progress` " +
      `body fleethub sends (${s.body_bytes} bytes) over a keep-alive connection, the answer read to its end; the ` +
      "receivers are the webhook benchmark's (every signature verified). As fast as it goes (closed loop). " +
      'What this floor cannot reach, no implementation on this machine reaches.',
    '',
    '| | |',
    '| --- | --- |',
    `| deliveries received a second (all endpoints) | ${n(r.delivered_per_s)} |`,
    `| worst endpoint p50 / p99 / max (ms) | ${n(r.worst_p50_ms)} / ${n(r.worst_p99_ms)} / ${n(r.worst_max_ms)} |`,
    `| CPU: sender; receivers (% of one core) | ${r.sender_cpu_percent_of_one_core}; ${r.receivers_cpu_percent_of_one_core} |`,
    `| CPU per delivery: sender + receivers (µs) | ${r.sender_cpu_us_per_delivery} + ${r.receivers_cpu_us_per_delivery} |`,
    `| deliveries a second all ${os.cpus().length} cores would give at that cost | ${n(r.deliveries_per_s_at_all_cores)} |`,
    `| failed deliveries; bad signatures | ${n(r.failed)}; ${r.endpoints.reduce((x, e) => x + e.bad_signatures, 0)} |`,
    `| machine meanwhile | ${describeLoad(r.machine)} |`,
    '',
    `Against the issue's goal (10,000 events a second to 10 endpoints: ${n(GOAL_DELIVERIES_PER_S)} deliveries a ` +
      `second): ${reached >= GOAL_DELIVERIES_PER_S ? '**reachable**' : '**out of reach on this machine**'} ` +
      `(the floor: ${n(r.delivered_per_s)} a second, ${n(r.deliveries_per_s_at_all_cores)} by its CPU per delivery, ` +
      `${((100 * reached) / GOAL_DELIVERIES_PER_S).toFixed(0)} % of the goal, before any database work).`,
  ].join('\n');
}

async function main(): Promise<void> {
  const { receivers, ports } = await Receivers.start(ENDPOINTS);
  try {
    endpoints = ports.map((port) => ({ port, secret: newSecret(), queue: [], head: 0, inFlight: 0 }));
    receivers.send({ type: 'secrets', secrets: endpoints.map((e) => e.secret) });
    const bodyBytes = makeEvent(Date.now()).bytes;
    made = 0;
    log(
      MAX
        ? `closed loop (--max): ${SECONDS} s, ${ENDPOINTS} endpoints, ${CONCURRENCY} in flight each`
        : `open loop: ${RATE} events/s × ${ENDPOINTS} endpoints for ${SECONDS} s, ${CONCURRENCY} in flight each`,
    );

    await receivers.collect(Date.now());
    const counts0 = await receivers.counts();
    const cpu0 = procStat(process.pid).cpuSeconds;
    const rc0 = procStat(receivers.child.pid).cpuSeconds;
    // The receivers are this process's child: watchLoad counts them as the benchmark's.
    const load = watchLoad();
    const started = Date.now();
    let events: number;
    if (MAX) {
      refill();
      for (const endpoint of endpoints) start(endpoint);
      await sleep(SECONDS * 1000);
      events = made;
    } else events = await produce(RATE, SECONDS);
    const elapsed = (Date.now() - started) / 1000;
    const answered = delivered;
    const counts1 = await receivers.counts();
    const cpu1 = procStat(process.pid).cpuSeconds;
    const rc1 = procStat(receivers.child.pid).cpuSeconds;
    const machine = load.stop();
    const loadAverage = os.loadavg().map((l) => Number(l.toFixed(2)));
    const backlog = queued() + inFlight();
    log(
      `${events} events in ${elapsed.toFixed(1)} s, ${answered} deliveries answered` +
        `${MAX ? '' : `, backlog ${backlog}`}; ${describeLoad(machine)}`,
    );

    // Open loop: the backlog drained (at most DRAIN_SECONDS); closed loop: the attempts in flight finished.
    const stopAt = Date.now();
    let drainedAfter: number | null = null;
    if (MAX) sending = false;
    for (;;) {
      if (queued() + inFlight() === 0) {
        drainedAfter = (Date.now() - stopAt) / 1000;
        break;
      }
      if (sending && Date.now() - stopAt > DRAIN_SECONDS * 1000) {
        log(`drain: ${queued() + inFlight()} deliveries left after ${DRAIN_SECONDS} s (dropped)`);
        sending = false;
      }
      if (!sending && inFlight() === 0) break;
      await sleep(50);
    }
    const undelivered = queued();
    const stats = await receivers.collect(Number.MAX_SAFE_INTEGER);
    const worst = (key: 'p50' | 'p99' | 'max') => {
      const values = stats.endpoints
        .map((e) => e.latency_ms?.[key] ?? null)
        .filter((v): v is number => v !== null);
      return values.length > 0 ? Math.max(...values) : null;
    };
    const received =
      counts1.received.reduce((a, b) => a + b, 0) - counts0.received.reduce((a, b) => a + b, 0);
    const perDelivery = (seconds: number) => Number(((seconds / received) * 1e6).toFixed(1));
    const results: FloorResults = {
      generated_by: 'bench/webhook-delivery-floor.ts',
      date: new Date().toISOString(),
      settings: {
        mode: MAX ? 'closed loop (--max)' : 'open loop',
        events_per_s: MAX ? null : RATE,
        seconds: SECONDS,
        endpoints: ENDPOINTS,
        concurrency_per_endpoint: CONCURRENCY,
        body_bytes: bodyBytes,
      },
      events_made: events,
      events_per_s: Math.round(events / elapsed),
      delivered_per_s: Math.round(received / elapsed),
      answered_per_s: Math.round(answered / elapsed),
      failed,
      backlog_at_end: MAX ? 0 : backlog,
      undelivered_after_drain: MAX ? 0 : undelivered,
      drained_after_s: MAX || drainedAfter === null ? null : Number(drainedAfter.toFixed(1)),
      endpoints: stats.endpoints,
      worst_p50_ms: worst('p50'),
      worst_p99_ms: worst('p99'),
      worst_max_ms: worst('max'),
      sender_cpu_percent_of_one_core: pct(cpu1 - cpu0, elapsed),
      receivers_cpu_percent_of_one_core: pct(rc1 - rc0, elapsed),
      sender_cpu_us_per_delivery: perDelivery(cpu1 - cpu0),
      receivers_cpu_us_per_delivery: perDelivery(rc1 - rc0),
      deliveries_per_s_at_all_cores: Math.round((os.cpus().length * received) / (cpu1 - cpu0 + rc1 - rc0)),
      machine,
      load_average: loadAverage,
    };
    const bad = stats.endpoints.reduce((sum, e) => sum + e.bad_signatures, 0);
    if (bad > 0) throw new Error(`${bad} deliveries with a bad signature`);
    log(
      `delivered ${results.delivered_per_s}/s; worst endpoint p50 / p99 / max ${results.worst_p50_ms} / ` +
        `${results.worst_p99_ms} / ${results.worst_max_ms} ms; CPU: sender ${results.sender_cpu_percent_of_one_core} %, ` +
        `receivers ${results.receivers_cpu_percent_of_one_core} % of one core; per delivery sender ` +
        `${results.sender_cpu_us_per_delivery} µs, receivers ${results.receivers_cpu_us_per_delivery} µs: ` +
        `${results.deliveries_per_s_at_all_cores}/s at ${os.cpus().length} cores`,
    );
    const json = `${JSON.stringify(results, null, 2)}\n`;
    process.stdout.write(json);
    const out = args.get('out');
    if (out) await writeFile(out, json);
    if (args.has('publish')) {
      if (!MAX) throw new Error('--publish: the published floor is the closed loop (--max)');
      log(`published: ${await publishSection(ROOT, 'webhook-delivery-floor', renderSection(results))}`);
    }
  } finally {
    agent.destroy();
    receivers.send({ type: 'stop' });
    await stopProcess(receivers.child);
  }
}

main().catch((err: unknown) => {
  log(err instanceof Error ? (err.stack ?? err.message) : String(err));
  process.exit(1);
});
