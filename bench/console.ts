/**
 * `npm run bench:console [-- --quick]`: the operator console's numbers (issue 30.6) in Debian's Chromium, driven by
 * playwright-core, against the built server (`dist/src/main.js` with `start:prod`'s flags) and its console build
 * (`dist/web`, made by `npm run build`, which `bench:console` runs first) on the seeded bench database:
 *
 *  1. the devices page, cold (a fresh browser context each time): navigation start → interactive (see PAGE_SCRIPT);
 *  2. its JavaScript: every script the first page loads, gzipped at level 9 (or as sent, when compressed);
 *  3. filter and page changes on the open page: the input event → the rows changed and drawn, p95;
 *  4. a simulated device joining (and leaving) while the device list, then its page, shows it: join reply → DOM;
 *  5. the rollout view during bench/rollout.ts's rollout: frames per second by requestAnimationFrame.
 *
 * Full mode: the bench's 1,000,000-device seed (`fleethub_bench_full`, shared with `npm run bench`) and a rollout of
 * 10,000 devices; `--quick`: the 100,000 seed and 300 devices, and it writes nothing to docs/ unless `--write`.
 * Options: `--loads=N --changes=N --joins=N --rollout-devices=N --rollout-concurrent=N --idle-seconds=S`,
 * `--only=load,changes,connection,rollout`, `--no-write`, `--keep-db`. The results go to the "Console" section of
 * docs/benchmarks.md (report.ts: the other sections stay as the last `npm run bench` wrote them) and to
 * bench/benchmarks.json; `--quick` (or `--no-write`) prints them and writes `.bench-data/console-<mode>.json` only.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { type AddressInfo, createServer } from 'node:net';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { Client } from 'pg';
import { type Browser, type BrowserContext, chromium, type Page, type Response } from 'playwright-core';
import { hashPassword } from '../src/auth/password-hasher';
import type { SimulatorOptions } from '../src/cli/simulator';
import {
  type ChangeKind,
  type ChangeResults,
  consoleGoals,
  type ConnectionResults,
  type ConsoleResults,
  median,
  type PageLoad,
  percentile,
  type RolloutViewResults,
  type ScriptAsset,
  type TimedRequest,
} from './console-report';
import { dropRolloutProduct, dropStaleRolloutProducts, rolloutProductName, runRollout } from './deployments';
import { buildSignedFw } from './fw';
import { describeLoad, watchLoad } from './machine-load';
import { BENCH_DATA, BUILD_DIR, PRODUCTION_NODE_FLAGS, ROOT, sleep } from './paths';
import { children, request, type Started, startProcess, stopProcess } from './processes';
import { publish } from './publish';
import { readPublished } from './report';
import { benchSigningKey, migrate, seed, type SeedInfo, startDatabase } from './seed';

const argv = process.argv.slice(2);
const flag = (name: string) => argv.includes(`--${name}`);
const option = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
const QUICK = flag('quick');
const MODE = QUICK ? 'quick' : 'full';
/** The seeds of `npm run bench` (the same databases, reused when their marker matches). */
const N = QUICK ? 100_000 : 1_000_000;
const LOADS = Number(option('loads') ?? (QUICK ? 3 : 7));
const CHANGES = Number(option('changes') ?? (QUICK ? 50 : 60));
const JOINS = Number(option('joins') ?? (QUICK ? 3 : 5));
const ROLLOUT_DEVICES = Number(option('rollout-devices') ?? (QUICK ? 300 : 10_000));
const ROLLOUT_CONCURRENT = Number(option('rollout-concurrent') ?? (QUICK ? 30 : 500));
const IDLE_SECONDS = Number(option('idle-seconds') ?? 5);
const ONLY = option('only')?.split(',');
const wanted = (name: string) => !ONLY || ONLY.includes(name);
const WRITE = !flag('no-write') && (!QUICK || flag('write'));

/** Debian's Chromium with the browser tests' flags (test/support/chromium.ts). */
const CHROMIUM = process.env.FLEETHUB_CHROMIUM ?? '/usr/bin/chromium';
const CHROMIUM_FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const VIEWPORT = { width: 1280, height: 900 };
/** The password the bench user gets for this run (the seed gives it none); removed again at the end. */
const PASSWORD = 'bench console password';
/** Interactive: the rows painted, then this long without a long task. */
const QUIET_MS = 500;
/** A change not drawn within this long counts as failed. */
const CHANGE_TIMEOUT_MS = 10_000;

/** The benchmark's processes outside this harness's tree (PostgreSQL's postmaster, once known). */
let databaseRoots: number[] = [];
const watch = () => watchLoad(() => databaseRoots);

const t0 = Date.now();
const log = (msg: string) =>
  process.stderr.write(`[bench:console +${((Date.now() - t0) / 1000).toFixed(0)}s] ${msg}\n`);
const errorText = (err: unknown) => (err instanceof Error ? (err.stack ?? err.message) : String(err));
const round = (value: number) => Math.round(value * 10) / 10;

/**
 * What the harness installs in every page before the page's own scripts (an init script through the DevTools
 * protocol: the console's Content-Security-Policy, which forbids inline scripts, does not apply to it). Plain
 * JavaScript, run by Chromium; every time is the page's own (`performance.now()`, whose 0 is the navigation's
 * start, or the events' `timeStamp` on the same timeline), except `Date.now()` where the harness compares with a
 * device's clock (the same machine's).
 *
 *  - long tasks: a PerformanceObserver of `longtask` entries (main-thread tasks over 50 ms), buffered;
 *  - first rows: a MutationObserver notes when `table.devices tbody tr` first exists, then the frame that drew it
 *    (a message posted from the next animation frame runs once that frame's rendering is done);
 *  - interactive(): from that frame, the first moment followed by QUIET_MS without a long task (null until known);
 *  - arm(): the next input event (pointerdown, keydown, change) starts a change; the table's rows (their
 *    identifiers) differing from before ends it in the DOM, and the next frame drew it;
 *  - watchConnections(): every change of a `data-connection` attribute, with the row's (or page's) device;
 *  - startFrames()/stopFrames(): requestAnimationFrame's frame times, as epoch milliseconds.
 */
const PAGE_SCRIPT = `(() => {
  if (window.__bench) return;
  const QUIET = ${QUIET_MS};
  const bench = { longTasks: [], rowsAt: null, paintedAt: null, change: null, connections: [], frames: [], counting: false };
  window.__bench = bench;
  try {
    new PerformanceObserver((list) => {
      for (const e of list.getEntries()) bench.longTasks.push({ start: e.startTime, duration: e.duration });
    }).observe({ type: 'longtask', buffered: true });
  } catch (e) {
    bench.longTaskError = String(e);
  }
  const afterPaint = (done) =>
    requestAnimationFrame(() => {
      const channel = new MessageChannel();
      channel.port1.onmessage = () => done(performance.now());
      channel.port2.postMessage(null);
    });
  // Waits inside the page (the harness's evaluate is the DevTools protocol's, which the CSP allows; Playwright's
  // waitForFunction compiles its predicate with new Function, which the console's CSP refuses).
  bench.until = (check, timeout) =>
    new Promise((resolve, reject) => {
      const start = performance.now();
      const tick = () => {
        const value = check();
        if (value) resolve(value);
        else if (performance.now() - start > timeout) reject(new Error('not within ' + timeout + ' ms'));
        else setTimeout(tick, 25);
      };
      tick();
    });
  const rows = () => document.querySelectorAll('table.devices tbody tr');
  const firstRows = new MutationObserver(() => {
    if (rows().length === 0) return;
    bench.rowsAt = performance.now();
    firstRows.disconnect();
    afterPaint((t) => { bench.paintedAt = t; });
  });
  firstRows.observe(document, { childList: true, subtree: true });
  bench.interactive = () => {
    if (bench.paintedAt === null) return null;
    let t = bench.paintedAt;
    const tasks = bench.longTasks.slice().sort((a, b) => a.start - b.start);
    for (const task of tasks) {
      if (task.start < t + QUIET && task.start + task.duration > t) t = task.start + task.duration;
    }
    return performance.now() > t + QUIET + 100 ? t : null;
  };
  const path = (name) => { const u = new URL(name); return u.pathname + u.search; };
  bench.loadReport = () => {
    const nav = performance.getEntriesByType('navigation')[0];
    const fcp = performance.getEntriesByName('first-contentful-paint')[0];
    const requests = performance.getEntriesByType('resource')
      .filter((e) => /\\/api\\//.test(e.name) || /\\.js(\\?|$)/.test(e.name))
      .map((e) => ({ path: path(e.name), start_ms: e.startTime, end_ms: e.responseEnd }));
    if (nav) requests.unshift({ path: path(nav.name), start_ms: 0, end_ms: nav.responseEnd });
    return JSON.stringify({
      interactive: bench.interactive(),
      rowsAt: bench.rowsAt,
      paintedAt: bench.paintedAt,
      fcp: fcp ? fcp.startTime : null,
      dcl: nav ? nav.domContentLoadedEventEnd : null,
      longTasks: bench.longTasks,
      longTaskError: bench.longTaskError || null,
      requests,
    });
  };
  bench.signature = () =>
    Array.prototype.map.call(rows(), (r) => { const th = r.querySelector('th'); return th ? th.textContent : ''; }).join(',');
  bench.arm = () => {
    performance.clearResourceTimings();
    const before = bench.signature();
    const m = { startedAt: null, event: null, domAt: null, paintedAt: null };
    m.done = new Promise((resolve) => { m.drawn = resolve; });
    bench.change = m;
    const types = ['pointerdown', 'keydown', 'change'];
    const onInput = (event) => {
      if (m.startedAt === null) { m.startedAt = event.timeStamp; m.event = event.type; }
    };
    for (const type of types) document.addEventListener(type, onInput, true);
    const observer = new MutationObserver(() => {
      if (m.startedAt === null || m.domAt !== null || bench.signature() === before) return;
      m.domAt = performance.now();
      observer.disconnect();
      for (const type of types) document.removeEventListener(type, onInput, true);
      afterPaint((t) => { m.paintedAt = t; m.drawn(true); });
    });
    observer.observe(document.body, { childList: true, subtree: true, characterData: true });
  };
  bench.changeReport = () => {
    const m = bench.change;
    const list = performance.getEntriesByType('resource').filter(
      (e) => /\\/devices\\?/.test(e.name) && m.startedAt !== null && e.startTime >= m.startedAt,
    )[0];
    return JSON.stringify({
      startedAt: m.startedAt, event: m.event, domAt: m.domAt, paintedAt: m.paintedAt,
      api: list ? list.responseEnd - list.startTime : null,
    });
  };
  bench.watchConnections = () => {
    bench.connections = [];
    new MutationObserver((records) => {
      for (const record of records) {
        const el = record.target;
        const row = el.closest('tr');
        const name = row ? row.querySelector('th') : document.querySelector('h1');
        bench.connections.push({
          identifier: name ? name.textContent : null,
          value: el.getAttribute('data-connection'),
          at: Date.now(),
        });
      }
    }).observe(document.body, { subtree: true, attributes: true, attributeFilter: ['data-connection'] });
  };
  bench.startFrames = () => {
    const frames = [];
    bench.frames = frames;
    bench.counting = true;
    const loop = (t) => {
      frames.push(performance.timeOrigin + t);
      if (bench.counting) requestAnimationFrame(loop);
    };
    requestAnimationFrame(loop);
  };
  bench.stopFrames = () => { bench.counting = false; return JSON.stringify(bench.frames); };
})();`;

/** A value of CDP's Performance.getMetrics (seconds for the durations and times), or null when absent. */
function metric(metrics: { name: string; value: number }[], name: string): number | null {
  return metrics.find((m) => m.name === name)?.value ?? null;
}

/** Evaluates `expression` in the page (through the DevTools protocol: the console's CSP does not apply). */
async function inPage(page: Page, expression: string): Promise<void> {
  await page.evaluate(expression);
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

const stats = (values: number[]) => ({
  p50: round(percentile(values, 50)),
  p95: round(percentile(values, 95)),
  max: round(Math.max(...values)),
});

/** Records what the browser refused or failed (script errors, console errors other than a 4xx answered in words). */
function watchErrors(page: Page, errors: string[]): void {
  const add = (text: string) => {
    if (errors.length < 20 && !errors.includes(text)) errors.push(text.slice(0, 300));
  };
  page.on('pageerror', (error) => add(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error' && !/status of 4\d\d/.test(message.text())) add(message.text());
  });
}

async function newContext(
  browser: Browser,
  storageState?: Awaited<ReturnType<BrowserContext['storageState']>>,
) {
  const context = await browser.newContext({ viewport: VIEWPORT, ...(storageState && { storageState }) });
  await context.addInitScript({ content: PAGE_SCRIPT });
  return context;
}

async function scriptAsset(response: Response): Promise<ScriptAsset> {
  const body = await response.body();
  const sizes = await response.request().sizes();
  return {
    path: new URL(response.url()).pathname,
    bytes: body.length,
    gzip9_bytes: gzipSync(body, { level: 9 }).length,
    wire_bytes: sizes.responseBodySize,
    content_encoding: response.headers()['content-encoding'] ?? null,
  };
}

interface RawLoad {
  interactive: number | null;
  rowsAt: number;
  paintedAt: number;
  fcp: number | null;
  dcl: number | null;
  longTasks: { start: number; duration: number }[];
  longTaskError: string | null;
  requests: TimedRequest[];
}

/** One cold load of `url` in a fresh context: the page's timing, and the scripts it loaded. */
async function coldLoad(
  browser: Browser,
  storageState: Awaited<ReturnType<BrowserContext['storageState']>>,
  url: string,
  errors: string[],
): Promise<{ load: PageLoad; scripts: ScriptAsset[] }> {
  const context = await newContext(browser, storageState);
  try {
    const page = await context.newPage();
    watchErrors(page, errors);
    const cdp = await context.newCDPSession(page);
    await cdp.send('Performance.enable');
    const scripts: Promise<ScriptAsset>[] = [];
    page.on('response', (response) => {
      if (response.request().resourceType() === 'script') scripts.push(scriptAsset(response));
    });
    await page.goto(url, { waitUntil: 'commit' });
    await inPage(page, 'window.__bench.until(() => window.__bench.paintedAt !== null, 30000)');
    await inPage(page, 'window.__bench.until(() => window.__bench.interactive() !== null, 30000)');
    const raw = JSON.parse(await page.evaluate<string>('window.__bench.loadReport()')) as RawLoad;
    if (raw.longTaskError) throw new Error(`no long task observer in this Chromium: ${raw.longTaskError}`);
    const threadTime = metric((await cdp.send('Performance.getMetrics')).metrics, 'ThreadTime');
    const load: PageLoad = {
      interactive_ms: round(raw.interactive!),
      rows_ms: round(raw.rowsAt),
      painted_ms: round(raw.paintedAt),
      first_contentful_paint_ms: raw.fcp === null ? null : round(raw.fcp),
      dom_content_loaded_ms: raw.dcl === null ? null : round(raw.dcl),
      main_thread_cpu_ms: threadTime === null ? null : round(threadTime * 1000),
      long_tasks: raw.longTasks.map((t) => ({ start_ms: round(t.start), duration_ms: round(t.duration) })),
      requests: raw.requests
        .map((q) => ({ path: q.path, start_ms: round(q.start_ms), end_ms: round(q.end_ms) }))
        .sort((a, b) => a.start_ms - b.start_ms),
    };
    return { load, scripts: await Promise.all(scripts) };
  } finally {
    await context.close();
  }
}

interface Action {
  kind: string;
  /** Done before the measurement starts (typing a filter's text). */
  prepare?: (page: Page) => Promise<void>;
  /** The input that makes the change. */
  run: (page: Page) => Promise<void>;
}

const click = (name: string) => (page: Page) => page.getByRole('button', { name, exact: true }).click();
const sortBy = (label: string) => (page: Page) =>
  page.locator('table.devices thead button.sort', { hasText: label }).click();
const choose = (select: string, value: string) => async (page: Page) => {
  await page.locator(select).selectOption(value);
};
const typeInto = (input: string, text: string) => (page: Page) => page.locator(input).fill(text);
const enter = (input: string) => (page: Page) => page.locator(input).press('Enter');

/**
 * The changes, in a cycle where each list differs from the one before it (from page 1 of the unfiltered list,
 * 50 a page, sorted by identifier, back to it).
 */
const ACTIONS: Action[] = [
  { kind: 'next page', run: click('Next page') },
  { kind: 'next page', run: click('Next page') },
  { kind: 'previous page', run: click('Previous page') },
  { kind: 'connection filter (select)', run: choose('#filter-connection', 'connected') },
  { kind: 'next page', run: click('Next page') },
  { kind: 'connection filter (select)', run: choose('#filter-connection', 'disconnected') },
  { kind: 'connection filter (select)', run: choose('#filter-connection', '') },
  {
    kind: 'tag filter (typed, Enter)',
    prepare: typeInto('#filter-tags', 'beta'),
    run: enter('#filter-tags'),
  },
  { kind: 'next page', run: click('Next page') },
  { kind: 'tag filter (typed, Enter)', prepare: typeInto('#filter-tags', ''), run: enter('#filter-tags') },
  { kind: 'sort (column header)', run: sortBy('Last seen') },
  { kind: 'sort (column header)', run: sortBy('Last seen') },
  { kind: 'sort (column header)', run: sortBy('Identifier') },
  {
    kind: 'identifier filter (typed, Enter)',
    prepare: typeInto('#filter-identifier', 'dev-00042'),
    run: enter('#filter-identifier'),
  },
  {
    kind: 'identifier filter (typed, Enter)',
    prepare: typeInto('#filter-identifier', ''),
    run: enter('#filter-identifier'),
  },
  { kind: 'page size (select)', run: choose('#page-size', '100') },
  { kind: 'page size (select)', run: choose('#page-size', '50') },
];

interface RawChange {
  startedAt: number | null;
  event: string | null;
  domAt: number | null;
  paintedAt: number | null;
  api: number | null;
}

async function changesScenario(page: Page, url: string, count: number): Promise<ChangeResults> {
  await page.goto(url);
  await inPage(page, 'window.__bench.until(() => window.__bench.paintedAt !== null, 30000)');
  await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Performance.enable');
  const threadTime = async () => metric((await cdp.send('Performance.getMetrics')).metrics, 'ThreadTime');
  const cpu0 = await threadTime();
  const load = watch();
  const samples: { kind: string; dom: number; drawn: number; api: number | null }[] = [];
  let failed = 0;
  for (let i = 0; i < count; i++) {
    const action = ACTIONS[i % ACTIONS.length];
    await action.prepare?.(page);
    await page.evaluate('window.__bench.arm()');
    await action.run(page);
    try {
      await inPage(
        page,
        `Promise.race([window.__bench.change.done, window.__bench.until(() => false, ${CHANGE_TIMEOUT_MS})])`,
      );
    } catch {
      failed++;
      log(`  change ${i + 1} (${action.kind}): not drawn within ${CHANGE_TIMEOUT_MS} ms`);
      continue;
    }
    const m = JSON.parse(await page.evaluate<string>('window.__bench.changeReport()')) as RawChange;
    samples.push({
      kind: action.kind,
      dom: m.domAt! - m.startedAt!,
      drawn: m.paintedAt! - m.startedAt!,
      api: m.api,
    });
    // A moment between changes, as a person would leave (and so that the next change starts from a quiet page).
    await sleep(150);
  }
  const machine = load.stop();
  const cpu1 = await threadTime();
  const kinds: ChangeKind[] = [...new Set(samples.map((s) => s.kind))].map((kind) => {
    const drawn = samples.filter((s) => s.kind === kind).map((s) => s.drawn);
    const s = stats(drawn);
    return { kind, count: drawn.length, drawn_p50_ms: s.p50, drawn_p95_ms: s.p95, drawn_max_ms: s.max };
  });
  const api = samples.map((s) => s.api).filter((v): v is number => v !== null);
  return {
    count,
    failed,
    dom_ms: stats(samples.map((s) => s.dom)),
    drawn_ms: stats(samples.map((s) => s.drawn)),
    api_ms: api.length ? stats(api) : { p50: NaN, p95: NaN, max: NaN },
    main_thread_cpu_ms_per_change:
      cpu0 === null || cpu1 === null ? null : round(((cpu1 - cpu0) * 1000) / Math.max(1, count)),
    kinds,
    machine,
  };
}

/**
 * The simulated device of the connection changes, in a process of its own (bench/console-device.ts): the harness
 * is busy driving Chromium, and a reply it read late would be timed late (measured: the page's change came out
 * before the reply, by up to 140 ms, with the device in this process).
 */
class DeviceProcess {
  private readonly child: ChildProcess;
  private waiting: ((message: { joinedAt?: number; leftAt?: number; error?: string }) => void) | null = null;

  constructor(options: SimulatorOptions) {
    this.child = fork(join(BUILD_DIR, 'bench/console-device.js'), [JSON.stringify(options)], {
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    children.add(this.child);
    this.child.on('message', (message: { joinedAt?: number; leftAt?: number; error?: string }) => {
      const waiting = this.waiting;
      this.waiting = null;
      waiting?.(message);
    });
  }

  private ask(cmd: 'join' | 'leave'): Promise<{ joinedAt?: number; leftAt?: number; error?: string }> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`the simulated device did not ${cmd} within 15 s`)),
        15_000,
      );
      this.waiting = (message) => {
        clearTimeout(timer);
        resolve(message);
      };
      this.child.send({ cmd });
    });
  }

  /** Connects; the time its `device` join was answered (epoch ms, the device's clock: this machine's). */
  async join(): Promise<number> {
    const reply = await this.ask('join');
    if (reply.joinedAt === undefined) throw new Error(`join: ${reply.error}`);
    return reply.joinedAt;
  }

  /** Closes its socket; the time it started to. */
  async leave(): Promise<number> {
    const reply = await this.ask('leave');
    if (reply.leftAt === undefined) throw new Error(`leave: ${reply.error}`);
    return reply.leftAt;
  }

  async exit(): Promise<void> {
    if (this.child.exitCode !== null) return;
    const exited = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
    this.child.send({ cmd: 'exit' });
    await Promise.race([exited, sleep(5000)]);
    children.delete(this.child);
    this.child.kill();
  }
}

interface ConnectionTarget {
  id: string;
  identifier: string;
  firmware: { uuid: string; version: string; platform: string; architecture: string; product: string };
  /** The row as it was (to_jsonb), put back afterwards. */
  row: unknown;
}

/** A seeded device on the list's first page (sorted by identifier) that is not connected, with its firmware. */
async function connectionTarget(db: Client, productId: string): Promise<ConnectionTarget> {
  const { rows } = await db.query<{
    id: string;
    identifier: string;
    fw: ConnectionTarget['firmware'];
    row: unknown;
  }>(
    `SELECT d.id::text, d.identifier, d.firmware_metadata AS fw, to_jsonb(d) AS row FROM devices d
      WHERE d.product_id = $1 AND d.connection_status = 'disconnected' AND d.firmware_metadata IS NOT NULL
      ORDER BY d.identifier LIMIT 1`,
    [productId],
  );
  const [found] = rows;
  return { id: found.id, identifier: found.identifier, firmware: found.fw, row: found.row };
}

/** Puts the device's row back as it was (every column), so that the seed stays what its marker says. */
async function restoreDevice(db: Client, target: ConnectionTarget): Promise<void> {
  const { rows } = await db.query<{ column_name: string }>(
    `SELECT column_name FROM information_schema.columns
      WHERE table_schema = 'public' AND table_name = 'devices' AND is_generated = 'NEVER' AND column_name <> 'id'
      ORDER BY ordinal_position`,
  );
  const columns = rows.map((r) => `"${r.column_name}"`).join(', ');
  await db.query(
    `UPDATE devices SET (${columns}) = (SELECT ${columns} FROM jsonb_populate_record(NULL::devices, $1::jsonb))
      WHERE id = $2`,
    [JSON.stringify(target.row), target.id],
  );
}

async function connectionScenario(o: {
  page: Page;
  kind: ConnectionResults['page'];
  url: string;
  target: ConnectionTarget;
  serverUrl: string;
  secret: { key: string; secret: string };
  tries: number;
}): Promise<ConnectionResults> {
  const { page, target } = o;
  const load = watch();
  await page.goto(o.url);
  await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();
  const shown = (state: string) =>
    o.kind === 'device list'
      ? page.locator(`table.devices tbody tr[data-connection="${state}"]`, { hasText: target.identifier })
      : page.locator(`#device-connection[data-connection="${state}"]`);
  await shown('disconnected').waitFor();
  await page.evaluate('window.__bench.watchConnections()');
  const changeAt = async (value: string, after: number) => {
    type Change = { identifier: string | null; value: string; at: number };
    const all = JSON.parse(
      await page.evaluate<string>('JSON.stringify(window.__bench.connections)'),
    ) as Change[];
    const change = all.find((c) => c.identifier === target.identifier && c.value === value && c.at >= after);
    if (!change)
      throw new Error(`no ${value} change of ${target.identifier} recorded: ${JSON.stringify(all)}`);
    return change.at;
  };
  const connect: number[] = [];
  const disconnect: number[] = [];
  const device = new DeviceProcess({
    url: o.serverUrl,
    key: o.secret.key,
    secret: o.secret.secret,
    devices: 1,
    identifiers: [target.identifier],
    firmware: target.firmware,
  });
  try {
    for (let i = 0; i < o.tries; i++) {
      const connecting = Date.now();
      const joinedAt = await device.join();
      await shown('connected').waitFor({ timeout: 10_000 });
      connect.push((await changeAt('connected', connecting)) - joinedAt);
      const leaving = Date.now();
      const leftAt = await device.leave();
      await shown('disconnected').waitFor({ timeout: 10_000 });
      disconnect.push((await changeAt('disconnected', leaving)) - leftAt);
      await sleep(500);
    }
  } finally {
    await device.exit();
  }
  log(
    `  ${o.kind}: join → connected ${connect.join(', ')} ms; leave → disconnected ${disconnect.join(', ')} ms`,
  );
  return {
    page: o.kind,
    identifier: target.identifier,
    connect_ms: connect,
    disconnect_ms: disconnect,
    machine: load.stop(),
  };
}

/** Frames in each whole second from `from` to `to` (epoch ms). */
function framesPerSecond(frames: number[], from: number, to: number): number[] {
  const seconds = Math.floor((to - from) / 1000);
  const counts = new Array<number>(Math.max(0, seconds)).fill(0);
  for (const t of frames) {
    const i = Math.floor((t - from) / 1000);
    if (i >= 0 && i < seconds) counts[i]++;
  }
  return counts;
}

async function rolloutViewScenario(o: {
  browser: Browser;
  storageState: Awaited<ReturnType<BrowserContext['storageState']>>;
  server: Started;
  info: SeedInfo;
  db: Client;
  databaseRoot: number | null;
  errors: string[];
}): Promise<RolloutViewResults> {
  const productName = rolloutProductName(1);
  const context = await newContext(o.browser, o.storageState);
  const page = await context.newPage();
  watchErrors(page, o.errors);
  const cdp = await context.newCDPSession(page);
  await cdp.send('Performance.enable');
  await cdp.send('Network.enable');
  const events: { name: string; at: number }[] = [];
  cdp.on('Network.eventSourceMessageReceived', (event) =>
    events.push({ name: event.eventName, at: Date.now() }),
  );
  const metrics: { at: number; task: number; script: number; thread: number; layouts: number }[] = [];
  const sampleMetrics = async () => {
    const { metrics: list } = await cdp.send('Performance.getMetrics');
    const value = (name: string) => metric(list, name) ?? 0;
    metrics.push({
      at: Date.now(),
      task: value('TaskDuration'),
      script: value('ScriptDuration'),
      thread: value('ThreadTime'),
      layouts: value('LayoutCount'),
    });
  };
  let sampler: NodeJS.Timeout | null = null;
  let startedAt = 0;
  let idle: number[] = [];
  const result: RolloutViewResults = {
    devices: ROLLOUT_DEVICES,
    concurrent_updates: ROLLOUT_CONCURRENT,
    settled_ms: null,
    on_target: 0,
    fps: [],
    min_fps: null,
    median_fps: null,
    idle_fps: { min: null, median: null, seconds: IDLE_SECONDS },
    main_thread_busy_percent: null,
    script_percent: null,
    main_thread_cpu_percent: null,
    layouts_per_second: null,
    long_tasks: { count: 0, max_ms: 0, total_ms: 0 },
    events: {},
    machine: null,
    error: null,
  };
  try {
    await dropStaleRolloutProducts(o.db, o.info.orgId, log);
    const rollout = await runRollout({
      server: o.server,
      info: o.info,
      db: o.db,
      log,
      productName,
      devices: ROLLOUT_DEVICES,
      concurrentUpdates: ROLLOUT_CONCURRENT,
      failShare: 0,
      failureThreshold: null,
      buildSignedFw,
      signingKey: benchSigningKey().privateKey,
      benchData: BENCH_DATA,
      databaseRoot: o.databaseRoot,
      watch: async (group) => {
        // Generous waits: the fleet that just joined keeps the machine busy (heartbeats, late joins).
        await page.goto(
          `${o.server.url}/orgs/${encodeURIComponent(o.info.org)}/products/${encodeURIComponent(productName)}/deployments/${encodeURIComponent(group)}`,
          { waitUntil: 'commit', timeout: 120_000 },
        );
        await page.locator('dl.counts').waitFor({ timeout: 120_000 });
        await page.getByText('Live: counts and devices change as they happen.').waitFor({ timeout: 120_000 });
        await page.evaluate('window.__bench.startFrames()');
        const idleFrom = Date.now();
        await sleep(IDLE_SECONDS * 1000);
        const idleTo = Date.now();
        idle = framesPerSecond(
          JSON.parse(await page.evaluate<string>('window.__bench.stopFrames()')) as number[],
          idleFrom,
          idleTo,
        );
        log(`  rollout view: page open; idle frames per second ${idle.join(', ')}; turning the group on`);
        await sampleMetrics();
        sampler = setInterval(() => void sampleMetrics().catch(() => undefined), 1000);
        await page.evaluate('window.__bench.startFrames()');
        startedAt = Date.now();
      },
    });
    result.settled_ms = rollout.all_settled_ms;
    result.on_target = rollout.on_target;
    result.machine = rollout.cpu.machine;
    const settledAt = startedAt + (rollout.all_settled_ms ?? Date.now() - startedAt);
    if (sampler) clearInterval(sampler);
    const frames = JSON.parse(await page.evaluate<string>('window.__bench.stopFrames()')) as number[];
    result.fps = framesPerSecond(frames, startedAt, settledAt);
    result.min_fps = result.fps.length ? Math.min(...result.fps) : null;
    result.median_fps = median(result.fps);
    result.idle_fps = {
      min: idle.length ? Math.min(...idle) : null,
      median: median(idle),
      seconds: IDLE_SECONDS,
    };
    const inWindow = metrics.filter((m) => m.at >= startedAt - 1500 && m.at <= settledAt + 500);
    if (inWindow.length >= 2) {
      const [a, b] = [inWindow[0], inWindow[inWindow.length - 1]];
      result.main_thread_busy_percent = round((100 * (b.task - a.task) * 1000) / (b.at - a.at));
      result.script_percent = round((100 * (b.script - a.script) * 1000) / (b.at - a.at));
      result.main_thread_cpu_percent = round((100 * (b.thread - a.thread) * 1000) / (b.at - a.at));
      result.layouts_per_second = round(((b.layouts - a.layouts) * 1000) / (b.at - a.at));
    }
    const origin = await page.evaluate<number>('performance.timeOrigin');
    const long = (
      JSON.parse(await page.evaluate<string>('JSON.stringify(window.__bench.longTasks)')) as {
        start: number;
        duration: number;
      }[]
    ).filter((t) => origin + t.start >= startedAt && origin + t.start <= settledAt);
    result.long_tasks = {
      count: long.length,
      max_ms: round(Math.max(0, ...long.map((t) => t.duration))),
      total_ms: round(long.reduce((sum, t) => sum + t.duration, 0)),
    };
    for (const e of events.filter((x) => x.at >= startedAt && x.at <= settledAt)) {
      result.events[e.name] = (result.events[e.name] ?? 0) + 1;
    }
    log(
      `  rollout view: ${result.fps.length} s, fps min ${result.min_fps} median ${result.median_fps}; main thread ` +
        `busy ${result.main_thread_busy_percent} %, CPU ${result.main_thread_cpu_percent} %, ${result.layouts_per_second} layouts/s; long tasks ${long.length}; events ${JSON.stringify(result.events)}`,
    );
  } catch (err) {
    log(`  rollout view failed: ${errorText(err)}`);
    result.error = (err instanceof Error ? err.message : String(err)).slice(0, 500);
  } finally {
    if (sampler) clearInterval(sampler);
    await context.close();
    await dropRolloutProduct(o.db, o.info.orgId, productName).catch((err: Error) =>
      log(`  cleanup of ${productName}: ${err.message}`),
    );
  }
  return result;
}

async function main(): Promise<void> {
  await mkdir(BENCH_DATA, { recursive: true });
  const distMain = join(BUILD_DIR, 'src/main.js');
  const database = await startDatabase(MODE, log);
  const db = new Client({ connectionString: database.url });
  let server: Started | undefined;
  let browser: Browser | undefined;
  let info: SeedInfo | undefined;
  try {
    log(`migrations applied: ${JSON.stringify(await migrate(database.url))}`);
    const seedStarted = Date.now();
    info = await seed(database.url, N, log);
    const seededNow = Date.parse(info.seededAt) >= seedStarted;
    log(`seed: ${seededNow ? `built in ${Math.round((Date.now() - seedStarted) / 1000)} s` : 'reused'}`);
    await db.connect();
    const databaseRoot = postmaster(await backendPid(db));
    databaseRoots = databaseRoot === null ? [] : [databaseRoot];
    if (flag('seed-only')) return;
    const whole = watch();
    await db.query(`UPDATE users SET password_hash = $1 WHERE id = $2`, [
      await hashPassword(PASSWORD),
      info.userId,
    ]);

    const port = await freePort();
    const serverDataDir = join(BENCH_DATA, 'server-console');
    await mkdir(serverDataDir, { recursive: true });
    // As bench.ts starts it: start:prod's node flags, the open-file limit raised (the rollout's device sockets).
    server = await startProcess(
      'fleethub',
      'bash',
      [
        '-c',
        `ulimit -n $(ulimit -Hn); exec "$0" ${PRODUCTION_NODE_FLAGS.join(' ')} "$1"`,
        process.execPath,
        distMain,
      ],
      {
        DATABASE_URL: database.url,
        PORT: String(port),
        HOST: '127.0.0.1',
        LOG_LEVEL: 'warn',
        FLEETHUB_PUBLIC_URL: `http://127.0.0.1:${port}`,
        FLEETHUB_DATA_DIR: serverDataDir,
        FLEETHUB_RATE_LIMIT_API_PER_MIN: '10000000',
      },
      /fleethub listening on (http:\/\/[^\s]+)/,
    );
    log(`fleethub: ${server.url} (pid ${server.child.pid})`);
    const index = await request(`${server.url}/`);
    if (!/<script type="module"/.test(index.text)) {
      throw new Error(
        'the server serves no console build (dist/web): `npm run build` first (npm run bench:console does)',
      );
    }

    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_FLAGS });
    log(`Chromium ${browser.version()}`);
    const errors: string[] = [];
    // One sign-in through the console's form; every context after it starts with its session cookie.
    const signInContext = await newContext(browser);
    const signInPage = await signInContext.newPage();
    watchErrors(signInPage, errors);
    await signInPage.goto(`${server.url}/`);
    await signInPage.getByLabel('Email').fill('bench@bench.example');
    await signInPage.getByLabel('Password').fill(PASSWORD);
    await signInPage.getByRole('button', { name: 'Sign in' }).click();
    await signInPage.getByRole('button', { name: 'Sign out' }).waitFor();
    const storageState = await signInContext.storageState();
    await signInContext.close();

    const devicesPath = `/orgs/${encodeURIComponent(info.org)}/products/${encodeURIComponent(info.product)}/devices`;
    const devicesUrl = `${server.url}${devicesPath}`;
    const results: ConsoleResults = {
      generated_by: 'bench/console.ts',
      date: new Date().toISOString(),
      mode: MODE,
      devices: N,
      seed_seconds: info.seedSeconds,
      seed_reused: !seededNow,
      seeded_at: info.seededAt,
      chromium: browser.version(),
      chromium_flags: ['--headless', ...CHROMIUM_FLAGS],
      viewport: VIEWPORT,
      first_page: null,
      scripts: [],
      changes: null,
      connection: [],
      rollout: null,
      errors,
      machine: whole.stop(),
      duration_s: 0,
    };

    if (wanted('load')) {
      log(`devices page: 1 load after the server started, then ${LOADS} cold loads`);
      const window = watch();
      const warmup = await coldLoad(browser, storageState, devicesUrl, errors);
      const loads: PageLoad[] = [];
      for (let i = 0; i < LOADS; i++) {
        const { load, scripts } = await coldLoad(browser, storageState, devicesUrl, errors);
        if (i === 0) results.scripts = scripts;
        loads.push(load);
        log(
          `  load ${i + 1}: interactive ${load.interactive_ms} ms (rows ${load.rows_ms}, painted ${load.painted_ms})`,
        );
      }
      const interactive = loads.map((l) => l.interactive_ms);
      results.first_page = {
        path: devicesPath,
        warmup: warmup.load,
        loads,
        interactive_ms: loads.length
          ? { median: median(interactive)!, worst: Math.max(...interactive) }
          : null,
        machine: window.stop(),
      };
      log(`  ${describeLoad(results.first_page.machine)}`);
    }

    if (wanted('changes')) {
      log(`filter and page changes: ${CHANGES}`);
      const context = await newContext(browser, storageState);
      const page = await context.newPage();
      watchErrors(page, errors);
      results.changes = await changesScenario(page, devicesUrl, CHANGES);
      await context.close();
      log(
        `  drawn p50 ${results.changes.drawn_ms.p50} p95 ${results.changes.drawn_ms.p95} max ${results.changes.drawn_ms.max} ms`,
      );
    }

    if (wanted('connection')) {
      const target = await connectionTarget(db, info.productId);
      const secrets = `/api/orgs/${encodeURIComponent(info.org)}/products/${encodeURIComponent(info.product)}/shared_secrets`;
      const auth = { authorization: `Bearer ${info.token}`, 'content-type': 'application/json' };
      const created = await request(`${server.url}${secrets}`, { method: 'POST', headers: auth, body: '{}' });
      if (created.status !== 201) throw new Error(`create shared secret: ${created.status} ${created.text}`);
      const secret = (created.json as { data: { key: string; secret: string } }).data;
      log(`connection changes: ${JOINS} joins of ${target.identifier} on the list, then on its page`);
      try {
        for (const [kind, url] of [
          ['device list', devicesUrl],
          ['device page', `${devicesUrl}/${encodeURIComponent(target.identifier)}`],
        ] as const) {
          const context = await newContext(browser, storageState);
          const page = await context.newPage();
          watchErrors(page, errors);
          try {
            results.connection.push(
              await connectionScenario({
                page,
                kind,
                url,
                target,
                serverUrl: server.url,
                secret,
                tries: JOINS,
              }),
            );
          } finally {
            await context.close();
          }
        }
      } finally {
        await request(`${server.url}${secrets}/${encodeURIComponent(secret.key)}`, {
          method: 'DELETE',
          headers: auth,
        });
        await restoreDevice(db, target);
      }
    }

    if (wanted('rollout')) {
      log(`rollout view: ${ROLLOUT_DEVICES} devices, concurrent_updates ${ROLLOUT_CONCURRENT}`);
      results.rollout = await rolloutViewScenario({
        browser,
        storageState,
        server,
        info,
        db,
        databaseRoot,
        errors,
      });
    }

    results.machine = whole.stop();
    results.duration_s = Math.round((Date.now() - t0) / 1000);
    const out = join(BENCH_DATA, `console-${MODE}.json`);
    await writeFile(out, `${JSON.stringify(results, null, 2)}\n`);
    for (const g of consoleGoals(results)) {
      log(`${g.met === null ? 'INFO  ' : g.met ? 'MET   ' : 'MISSED'} ${g.goal} — ${g.detail}`);
    }
    if (errors.length) log(`errors in the pages: ${errors.join(' | ')}`);
    const measured = results.first_page ?? results.changes ?? results.connection[0] ?? results.rollout;
    if (WRITE && measured) {
      const report = await readPublished(ROOT);
      if (!report)
        throw new Error('no bench/benchmarks.json to add the console section to: run `npm run bench` first');
      report.console = results;
      await publish(ROOT, report);
      log('wrote the Console section of docs/benchmarks.md and bench/benchmarks.json');
    } else {
      log(`wrote ${out} (docs/ left alone${QUICK ? ': --quick; --write publishes' : ''})`);
    }
  } finally {
    await browser?.close().catch(() => undefined);
    if (server) await stopProcess(server.child);
    if (info)
      await db
        .query(`UPDATE users SET password_hash = NULL WHERE id = $1`, [info.userId])
        .catch(() => undefined);
    await db.end().catch(() => undefined);
    if (!flag('keep-db')) await database.stop().catch((e: Error) => log(`database stop: ${e.message}`));
  }
}

async function backendPid(db: Client): Promise<number> {
  return (await db.query<{ pid: number }>(`SELECT pg_backend_pid() AS pid`)).rows[0].pid;
}

/** The postmaster of a backend (its parent), when PostgreSQL runs on this machine. */
function postmaster(backend: number): number | null {
  try {
    const stat = readFileSync(`/proc/${backend}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  } catch {
    return null;
  }
}

const onSignal = () => {
  for (const c of children) c.kill('SIGTERM');
  process.exit(130);
};
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);

main().then(
  () => log(`done in ${Math.round((Date.now() - t0) / 1000)} s`),
  (err: unknown) => {
    log(`FAILED: ${errorText(err)}`);
    for (const c of children) c.kill('SIGTERM');
    process.exitCode = 1;
  },
);
