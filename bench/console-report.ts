/**
 * The operator console's numbers (issue 30.6), measured by `npm run bench:console` (bench/console.ts): their types,
 * the goals they are judged on, and the "Console" section of docs/benchmarks.md.
 */
import { describeLoad, type LoadWindow } from './machine-load';
import type { Goal } from './sockets';

/** Goals of issue 30.6. */
export const CONSOLE_GOALS = {
  interactive_ms: 1000,
  change_p95_ms: 200,
  min_changes: 50,
  connection_ms: 1000,
  rollout_min_fps: 30,
  /** 250 KB as the browser test bounds it (test/browser/live.browser-spec.ts): 250 × 1024 bytes. */
  script_gzip_bytes: 250 * 1024,
} as const;

/** A request the page made, from Chromium's resource timing (ms from the navigation's start). */
export interface TimedRequest {
  path: string;
  start_ms: number;
  end_ms: number;
}

/** One load of the devices page in a fresh browser context (no HTTP cache, the session cookie set). */
export interface PageLoad {
  /** Navigation start → the first moment after the rows were painted followed by 500 ms free of long tasks. */
  interactive_ms: number;
  /** Navigation start → the first row of the table in the DOM. */
  rows_ms: number;
  /** Navigation start → the frame that drew them (a message posted from the next animation frame). */
  painted_ms: number;
  first_contentful_paint_ms: number | null;
  dom_content_loaded_ms: number | null;
  /**
   * CPU time of the page's main thread from its start to the end of the quiet window (CDP's ThreadTime): the page's
   * own work, which a busy machine stretches in time but does not add to.
   */
  main_thread_cpu_ms: number | null;
  /** Long tasks (> 50 ms) from the navigation to the end of the quiet window. */
  long_tasks: { start_ms: number; duration_ms: number }[];
  /** The scripts and API requests of the load, in the order they started. */
  requests: TimedRequest[];
}

/** A script the first page loaded. */
export interface ScriptAsset {
  path: string;
  bytes: number;
  gzip9_bytes: number;
  /** The body's bytes on the wire (what the server sent: compressed when it compresses). */
  wire_bytes: number;
  content_encoding: string | null;
}

export interface ChangeKind {
  kind: string;
  count: number;
  drawn_p50_ms: number;
  drawn_p95_ms: number;
  drawn_max_ms: number;
}

/** Filter and page changes on the open devices page: from the input event to the rows changed and drawn. */
export interface ChangeResults {
  count: number;
  failed: number;
  /** Input event → the rows changed in the DOM. */
  dom_ms: { p50: number; p95: number; max: number };
  /** Input event → the frame that drew them (the goal's figure). */
  drawn_ms: { p50: number; p95: number; max: number };
  /** The API's own time for the list requests, from Chromium's resource timing (request start → response end). */
  api_ms: { p50: number; p95: number; max: number };
  /** The page's main-thread CPU time over the changes (CDP ThreadTime), per change. */
  main_thread_cpu_ms_per_change: number | null;
  kinds: ChangeKind[];
  machine: LoadWindow;
}

/** A simulated device joining and leaving while a page shows it. */
export interface ConnectionResults {
  page: 'device list' | 'device page';
  identifier: string;
  /** The device's join reply (as the device got it) → `data-connection="connected"` in the page's DOM. */
  connect_ms: number[];
  /** The device closing its socket → `disconnected` in the DOM. */
  disconnect_ms: number[];
  machine: LoadWindow;
}

/** The rollout view during a rollout: frames drawn, counted by requestAnimationFrame in the page. */
export interface RolloutViewResults {
  devices: number;
  concurrent_updates: number;
  /** From turning the group on until every device settled (bench/rollout.ts); null: not within its limit. */
  settled_ms: number | null;
  on_target: number;
  /** Frames in each whole second of the rollout. */
  fps: number[];
  min_fps: number | null;
  median_fps: number | null;
  /** The same page, open and idle (before the rollout), over `idle_seconds`. */
  idle_fps: { min: number | null; median: number | null; seconds: number };
  /** The renderer's main thread busy with tasks over the rollout (CDP Performance.getMetrics TaskDuration). */
  main_thread_busy_percent: number | null;
  script_percent: number | null;
  /** Its CPU time (CDP ThreadTime) over the rollout, in percent of one core. */
  main_thread_cpu_percent: number | null;
  /** Layouts a second (CDP LayoutCount): how often the page changed what it shows. */
  layouts_per_second: number | null;
  long_tasks: { count: number; max_ms: number; total_ms: number };
  /** Server-sent events the page received during the rollout, by name. */
  events: Record<string, number>;
  machine: LoadWindow | null;
  error: string | null;
}

export interface ConsoleResults {
  generated_by: string;
  date: string;
  mode: 'quick' | 'full';
  /** Devices of the seeded product the devices page lists. */
  devices: number;
  /** How long the seed took (in this run, or in the earlier one that built it: `seed_reused`). */
  seed_seconds: number;
  seed_reused: boolean;
  seeded_at: string;
  chromium: string;
  chromium_flags: string[];
  viewport: { width: number; height: number };
  first_page: {
    path: string;
    /** The load right after the server started (not counted: its statements were not prepared yet). */
    warmup: PageLoad | null;
    loads: PageLoad[];
    interactive_ms: { median: number; worst: number } | null;
    machine: LoadWindow;
  } | null;
  scripts: ScriptAsset[];
  changes: ChangeResults | null;
  connection: ConnectionResults[];
  rollout: RolloutViewResults | null;
  errors: string[];
  machine: LoadWindow;
  duration_s: number;
}

export function median(values: readonly number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

/** Nearest-rank percentile (p in 0..100). */
export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

const ms = (value: number | null | undefined) =>
  value === null || value === undefined ? '–' : `${Math.round(value).toLocaleString('en')} ms`;
const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
const n = (value: number) => value.toLocaleString('en');

export function scriptTotals(scripts: readonly ScriptAsset[]) {
  return {
    bytes: scripts.reduce((sum, s) => sum + s.bytes, 0),
    gzip9_bytes: scripts.reduce((sum, s) => sum + s.gzip9_bytes, 0),
    wire_bytes: scripts.reduce((sum, s) => sum + s.wire_bytes, 0),
    compressed_on_the_wire: scripts.some((s) => s.content_encoding !== null),
  };
}

/** The figure the JavaScript goal is judged on: the bytes on the wire when the server compresses, else gzip -9. */
function judgedScriptBytes(scripts: readonly ScriptAsset[]): number {
  const totals = scriptTotals(scripts);
  return totals.compressed_on_the_wire ? totals.wire_bytes : totals.gzip9_bytes;
}

export function consoleGoals(r: ConsoleResults): Goal[] {
  const goals: Goal[] = [];
  const scale = `${n(r.devices)} devices${r.mode === 'quick' ? ' (quick seed)' : ''}`;
  if (r.first_page?.interactive_ms) {
    const { median: mid, worst } = r.first_page.interactive_ms;
    goals.push({
      goal: `Console: devices page interactive within ${n(CONSOLE_GOALS.interactive_ms)} ms (cold load, every load)`,
      met: worst <= CONSOLE_GOALS.interactive_ms,
      detail: `${scale}, ${r.first_page.loads.length} cold loads: median ${ms(mid)}, worst ${ms(worst)}`,
    });
  }
  if (r.changes) {
    const c = r.changes;
    goals.push({
      goal: `Console: a filter or page change answered and drawn within ${CONSOLE_GOALS.change_p95_ms} ms p95 (≥ ${CONSOLE_GOALS.min_changes} changes)`,
      met:
        c.count - c.failed >= CONSOLE_GOALS.min_changes &&
        c.failed === 0 &&
        c.drawn_ms.p95 <= CONSOLE_GOALS.change_p95_ms,
      detail: `${scale}, ${c.count} changes${c.failed ? ` (${c.failed} not drawn within 10 s)` : ''}: p50 ${ms(c.drawn_ms.p50)}, p95 ${ms(c.drawn_ms.p95)}, max ${ms(c.drawn_ms.max)}`,
    });
  }
  for (const c of r.connection) {
    const worst = Math.max(...c.connect_ms);
    goals.push({
      goal: `Console: a device's connection on screen within ${n(CONSOLE_GOALS.connection_ms)} ms of its join (${c.page}, every join)`,
      met: c.connect_ms.length > 0 && worst <= CONSOLE_GOALS.connection_ms,
      detail: `${c.connect_ms.length} joins: median ${ms(median(c.connect_ms))}, worst ${ms(worst)}`,
    });
  }
  if (r.rollout) {
    const x = r.rollout;
    goals.push({
      goal: `Console: the rollout view at ≥ ${CONSOLE_GOALS.rollout_min_fps} frames per second during a rollout (every whole second)`,
      met: x.error === null && x.min_fps !== null && x.min_fps >= CONSOLE_GOALS.rollout_min_fps,
      detail:
        x.error !== null
          ? `failed: ${x.error}`
          : `${n(x.devices)} devices: min ${x.min_fps ?? '–'} fps, median ${x.median_fps ?? '–'} fps over ${x.fps.length} s (idle page: median ${x.idle_fps.median ?? '–'})`,
    });
  }
  if (r.scripts.length > 0) {
    const bytes = judgedScriptBytes(r.scripts);
    goals.push({
      goal: `Console: the first page's JavaScript ≤ ${kib(CONSOLE_GOALS.script_gzip_bytes)} gzipped`,
      met: bytes <= CONSOLE_GOALS.script_gzip_bytes,
      detail: `${r.scripts.length} script(s): ${kib(bytes)} (${kib(scriptTotals(r.scripts).bytes)} uncompressed)`,
    });
  }
  return goals;
}

/** The "Console" section of docs/benchmarks.md. */
export function renderConsole(r: ConsoleResults, lines: string[]): void {
  lines.push('## Console');
  lines.push('');
  lines.push(
    `Measured by \`npm run bench:console\` (\`bench/console.ts\`, issue 30.6), **${r.mode}** mode, ${r.date}: the ` +
      `built server (\`dist/src/main.js\` with \`start:prod\`'s flags) and its console build on the seeded database ` +
      `(**${n(r.devices)} devices** in the product the devices page lists; ${r.seed_reused ? `seed reused, built ${r.seeded_at} in ${n(r.seed_seconds)} s` : `seeded in this run in ${n(r.seed_seconds)} s`}), ` +
      `in Chromium ${r.chromium} (Debian's, headless, \`${r.chromium_flags.join(' ')}\`, ${r.viewport.width}×${r.viewport.height}) ` +
      'driven by playwright-core on the same machine over loopback. Every time is taken in the page by Chromium ' +
      "(`performance.now()`, the events' own time stamps, `requestAnimationFrame`), except the join's, which the " +
      'simulated device takes on the same clock.',
  );
  lines.push('');
  lines.push(`Machine during the whole run: ${describeLoad(r.machine)}.`);
  lines.push('');
  lines.push('| Goal | Status | Measured |');
  lines.push('| --- | --- | --- |');
  for (const g of consoleGoals(r)) {
    lines.push(`| ${g.goal} | ${g.met === null ? 'info' : g.met ? '**met**' : '**missed**'} | ${g.detail} |`);
  }
  lines.push('');
  if (r.mode !== 'full') {
    lines.push(
      `> Quick mode: ${n(r.devices)} devices, not the 1,000,000 the goals are stated for; \`npm run bench:console\` for the real numbers.`,
    );
    lines.push('');
  }

  const first = r.first_page;
  if (first) {
    lines.push(`### Devices page, cold loads (\`${first.path}\`)`);
    lines.push('');
    lines.push(
      'Each load in a new browser context (no HTTP cache; the session cookie of one sign-in) navigates straight to ' +
        'the list. **Interactive** = from the navigation start to the first moment after the first rows were ' +
        'painted that is followed by 500 ms without a long task (a main-thread task over 50 ms, from a ' +
        "`PerformanceObserver` of `longtask` entries installed before the page's own scripts): the rows are on " +
        'screen and the page answers input at once. "Rows" is the first row in the DOM (a `MutationObserver`), ' +
        '"painted" the frame after it (a message posted from the next `requestAnimationFrame`). The console\'s live ' +
        'event stream stays open, so network quiet is not part of the definition. One load right after the server ' +
        'started is not counted.',
    );
    lines.push('');
    lines.push(
      '| Load | interactive | rows in the DOM | painted | first contentful paint | main-thread CPU | long tasks |',
    );
    lines.push('| --- | ---: | ---: | ---: | ---: | ---: | --- |');
    const row = (label: string, l: PageLoad) =>
      lines.push(
        `| ${label} | ${ms(l.interactive_ms)} | ${ms(l.rows_ms)} | ${ms(l.painted_ms)} | ${ms(l.first_contentful_paint_ms)} | ${ms(l.main_thread_cpu_ms)} | ` +
          `${l.long_tasks.length === 0 ? 'none' : l.long_tasks.map((t) => `${Math.round(t.duration_ms)} ms at ${Math.round(t.start_ms)}`).join(', ')} |`,
      );
    if (first.warmup) row('first after the server started (not counted)', first.warmup);
    first.loads.forEach((l, i) => row(String(i + 1), l));
    if (first.interactive_ms) {
      lines.push(
        `| **median / worst** | **${ms(first.interactive_ms.median)} / ${ms(first.interactive_ms.worst)}** | | | | | |`,
      );
    }
    lines.push('');
    const mid = [...first.loads].sort((a, b) => a.interactive_ms - b.interactive_ms)[
      Math.floor(first.loads.length / 2)
    ];
    if (mid) {
      lines.push(
        `Where the median load's time went (ms from the navigation start; DOMContentLoaded at ${ms(mid.dom_content_loaded_ms)}): ` +
          mid.requests
            .map((q) => `\`${q.path}\` ${Math.round(q.start_ms)}–${Math.round(q.end_ms)}`)
            .join(', ') +
          '.',
      );
      lines.push('');
    }
    lines.push(`Machine during the loads: ${describeLoad(first.machine)}.`);
    lines.push('');
  }

  if (r.scripts.length > 0) {
    const totals = scriptTotals(r.scripts);
    lines.push('### JavaScript of the first page');
    lines.push('');
    lines.push(
      'Every script the devices page loaded (cold), as served, and gzipped at level 9 each' +
        (totals.compressed_on_the_wire
          ? '; the server compresses them, so the goal is judged on the bytes on the wire.'
          : '; the server sends them uncompressed, so the goal is judged on the gzip -9 sizes.'),
    );
    lines.push('');
    lines.push('| Script | bytes | gzip -9 | on the wire |');
    lines.push('| --- | ---: | ---: | ---: |');
    for (const s of r.scripts) {
      lines.push(
        `| \`${s.path}\` | ${n(s.bytes)} | ${n(s.gzip9_bytes)} | ${n(s.wire_bytes)}${s.content_encoding ? ` (${s.content_encoding})` : ''} |`,
      );
    }
    lines.push(
      `| **total** | ${n(totals.bytes)} | **${n(totals.gzip9_bytes)}** (${kib(totals.gzip9_bytes)}) | ${n(totals.wire_bytes)} |`,
    );
    lines.push('');
  }

  if (r.changes) {
    const c = r.changes;
    lines.push('### Filter and page changes');
    lines.push('');
    lines.push(
      `${c.count} changes on the open devices page, one after the other, cycling through the kinds below (each ` +
        'list differs from the one before). Measured in the page from the input event that made the change (its ' +
        'time stamp: the `pointerdown` of a click, the `keydown` of Enter in a typed filter, the `change` of a ' +
        "select) to the table's rows changed in the DOM, and to the frame that drew them; the goal is judged on " +
        'the drawn time. "API" is the list request itself (Chromium\'s resource timing).',
    );
    lines.push('');
    lines.push('| | p50 | p95 | max |');
    lines.push('| --- | ---: | ---: | ---: |');
    lines.push(
      `| input → rows in the DOM | ${ms(c.dom_ms.p50)} | ${ms(c.dom_ms.p95)} | ${ms(c.dom_ms.max)} |`,
    );
    lines.push(
      `| input → drawn | **${ms(c.drawn_ms.p50)}** | **${ms(c.drawn_ms.p95)}** | ${ms(c.drawn_ms.max)} |`,
    );
    lines.push(`| API request | ${ms(c.api_ms.p50)} | ${ms(c.api_ms.p95)} | ${ms(c.api_ms.max)} |`);
    lines.push('');
    if (c.main_thread_cpu_ms_per_change !== null) {
      lines.push(
        `The page's main thread spent ${c.main_thread_cpu_ms_per_change} ms of CPU per change (CDP \`ThreadTime\` over all of them).`,
      );
      lines.push('');
    }
    lines.push('| Change | count | drawn p50 | p95 | max |');
    lines.push('| --- | ---: | ---: | ---: | ---: |');
    for (const k of c.kinds) {
      lines.push(
        `| ${k.kind} | ${k.count} | ${ms(k.drawn_p50_ms)} | ${ms(k.drawn_p95_ms)} | ${ms(k.drawn_max_ms)} |`,
      );
    }
    lines.push('');
    lines.push(`Machine meanwhile: ${describeLoad(c.machine)}.`);
    lines.push('');
  }

  if (r.connection.length > 0) {
    lines.push('### Connection changes on screen');
    lines.push('');
    lines.push(
      "A simulated device (`src/cli/simulator.ts`, NH1 shared secret, the seeded device's own firmware) joins while " +
        'the page shows it (the devices list, unfiltered, page 1; then its device page), and leaves again; the ' +
        "page records, by a `MutationObserver`, when the device's `data-connection` changes. From the device's " +
        'join reply (or its socket closed) to that change, on the same clock. The device row is restored afterwards.',
    );
    lines.push('');
    lines.push(
      '| Page | device | joins | join → connected: median | worst | leave → disconnected: median | worst |',
    );
    lines.push('| --- | --- | ---: | ---: | ---: | ---: | ---: |');
    for (const c of r.connection) {
      lines.push(
        `| ${c.page} | \`${c.identifier}\` | ${c.connect_ms.length} | ${ms(median(c.connect_ms))} | ${ms(Math.max(...c.connect_ms))} | ` +
          `${ms(median(c.disconnect_ms))} | ${ms(c.disconnect_ms.length ? Math.max(...c.disconnect_ms) : null)} |`,
      );
    }
    lines.push('');
    lines.push(
      `Every join: ${r.connection.map((c) => `${c.page} ${c.connect_ms.map((v) => Math.round(v)).join(', ')} ms`).join('; ')}. ` +
        `Machine meanwhile: ${describeLoad(r.connection[0].machine)}.`,
    );
    lines.push('');
  }

  if (r.rollout) {
    const x = r.rollout;
    lines.push('### Rollout view during a rollout');
    lines.push('');
    lines.push(
      `The rollout of \`bench/rollout.ts\` (as in "Deployment groups": ${n(x.devices)} simulated devices in a product ` +
        `of their own, \`concurrent_updates\` ${x.concurrent_updates}, apply time 0), with the group created inactive ` +
        'once the fleet joined, its page opened, then the group turned on. The page counts `requestAnimationFrame` ' +
        'callbacks from the moment the group is turned on until every device settled; frames per second are the ' +
        'frames in each whole second.',
    );
    lines.push('');
    if (x.error !== null) {
      lines.push(`Failed: \`${x.error.replace(/`/g, "'")}\``);
      lines.push('');
    } else {
      lines.push('| | |');
      lines.push('| --- | --- |');
      lines.push(
        `| Rollout settled in | ${x.settled_ms === null ? 'not within the limit' : `${(x.settled_ms / 1000).toFixed(1)} s`} (${n(x.on_target)} on the release) |`,
      );
      lines.push(`| Frames per second, minimum over whole seconds | **${x.min_fps ?? '–'}** |`);
      lines.push(`| Frames per second, median | **${x.median_fps ?? '–'}** |`);
      lines.push(
        `| The same page idle (${x.idle_fps.seconds} s before the rollout): min / median | ${x.idle_fps.min ?? '–'} / ${x.idle_fps.median ?? '–'} |`,
      );
      lines.push(
        `| Renderer main thread busy (tasks) / of it script | ${x.main_thread_busy_percent ?? '–'} % / ${x.script_percent ?? '–'} % |`,
      );
      lines.push(
        `| Renderer main thread CPU (of one core) / layouts a second | ${x.main_thread_cpu_percent ?? '–'} % / ${x.layouts_per_second ?? '–'} |`,
      );
      lines.push(
        `| Long tasks | ${x.long_tasks.count}${x.long_tasks.count ? ` (longest ${Math.round(x.long_tasks.max_ms)} ms, ${Math.round(x.long_tasks.total_ms)} ms in all)` : ''} |`,
      );
      lines.push(
        `| Events received | ${
          Object.entries(x.events)
            .map(([name, count]) => `${name} ${n(count)}`)
            .join(', ') || 'none'
        } |`,
      );
      lines.push(`| Machine | ${x.machine ? describeLoad(x.machine) : '–'} |`);
      lines.push('');
      lines.push(`Frames in each second: ${x.fps.join(', ')}.`);
      lines.push('');
    }
  }
  if (r.errors.length > 0) {
    lines.push(`Errors seen in the pages: ${r.errors.map((e) => `\`${e.replace(/`/g, "'")}\``).join('; ')}.`);
    lines.push('');
  }
}
