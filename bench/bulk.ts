/**
 * Bulk device changes at scale (`npm run bench:bulk [-- N]`, default 1,000,000 devices): the statements of
 * `POST .../devices/bulk` (src/devices/device-bulk.query.ts) on the seeded bench product.
 *  1. The plan and time of one window's statement for each action, with EXPLAIN (ANALYZE, BUFFERS) in a
 *     transaction that is rolled back.
 *  2. Whole runs over a filter as the service makes them (windows of BULK_WINDOW_DEVICES devices read by
 *     primary-key range, in primary-key order only after a full window; one transaction each),
 *     committed and then undone, with a single-device update every 20 ms on another connection: how long such an
 *     update waited for the bulk's row locks.
 * Prints what it measured (JSON on the last line).
 */
import { Client } from 'pg';
import {
  type BulkChange,
  bulkChangeSql,
  type BulkSelection,
  bulkWindowSql,
  COUNTS_BY_STATEMENT,
  ORDERED_WINDOW_SETTINGS,
} from '../src/devices/device-bulk.query';
import { BULK_WINDOW_DEVICES } from '../src/devices/device-bulk.service';
import { migrate, seed, startDatabase } from './seed';
import { sleep } from './paths';

const log = (message: string) => process.stderr.write(`[bench:bulk] ${message}\n`);

interface Explained {
  name: string;
  ms: number;
  plan: string;
}

/** EXPLAIN ANALYZE of one statement of the change, rolled back. */
async function explain(
  db: Client,
  name: string,
  productId: string,
  selection: BulkSelection,
  change: BulkChange,
  window: string[] | null,
): Promise<Explained> {
  const { sql, params } = bulkChangeSql(productId, selection, change, window);
  await db.query('BEGIN');
  try {
    await db.query(`SELECT set_config($1, $2, true)`, [COUNTS_BY_STATEMENT.name, COUNTS_BY_STATEMENT.value]);
    const t0 = performance.now();
    const { rows } = await db.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${sql}`,
      params,
    );
    const ms = performance.now() - t0;
    return { name, ms: Math.round(ms), plan: rows.map((row) => row['QUERY PLAN']).join('\n') };
  } finally {
    await db.query('ROLLBACK');
  }
}

/** Turns bitmap scans and sorts off (or back on) for the rest of the transaction, as the service does. */
async function ordering(db: Client, off: boolean): Promise<void> {
  await db.query(
    off
      ? `SELECT set_config(name, 'off', true) FROM unnest($1::text[]) AS name`
      : `SELECT set_config(name, reset_val, true) FROM pg_settings WHERE name = ANY($1::text[])`,
    [[...ORDERED_WINDOW_SETTINGS]],
  );
}

/** The ids of the window after `after`, read as the service reads it (`ordered`: after a full window). */
async function readWindow(
  db: Client,
  productId: string,
  selection: BulkSelection,
  after: string,
  ordered: boolean,
): Promise<string[]> {
  const { sql, params } = bulkWindowSql(productId, selection, after, BULK_WINDOW_DEVICES);
  if (ordered) await ordering(db, true);
  const { rows } = await db.query<{ ids: string[] }>(sql, params);
  if (ordered) await ordering(db, false);
  return rows[0].ids;
}

/** EXPLAIN ANALYZE of a window's selection, in its own transaction. */
async function explainWindow(
  db: Client,
  name: string,
  productId: string,
  selection: BulkSelection,
  after: string,
  ordered: boolean,
): Promise<Explained> {
  const { sql, params } = bulkWindowSql(productId, selection, after, BULK_WINDOW_DEVICES);
  await db.query('BEGIN');
  try {
    if (ordered) await ordering(db, true);
    const t0 = performance.now();
    const { rows } = await db.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${sql}`,
      params,
    );
    const ms = performance.now() - t0;
    return { name, ms: Math.round(ms), plan: rows.map((row) => row['QUERY PLAN']).join('\n') };
  } finally {
    await db.query('ROLLBACK');
  }
}

interface RunResult {
  name: string;
  windows: number;
  matched: number;
  changed: number;
  seconds: number;
  window_ms: { p50: number; p95: number; max: number };
  /** A single-device update every 20 ms on another connection, while the run went: how long each took. */
  single_update_ms: { count: number; p50: number; p99: number; max: number };
}

const pct = (sorted: number[], p: number) =>
  sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

/** The change over every window of the product's ids, each window committed, as DeviceBulkService runs it. */
async function run(
  db: Client,
  probe: Client,
  name: string,
  productId: string,
  selection: BulkSelection,
  change: BulkChange,
  n: number,
): Promise<RunResult> {
  const waits: number[] = [];
  let probing = true;
  const prober = (async () => {
    while (probing) {
      const id = 1 + Math.floor(Math.random() * n);
      const t0 = performance.now();
      await probe.query(`UPDATE devices SET last_communication = now() WHERE id = $1`, [id]);
      waits.push(performance.now() - t0);
      await sleep(20);
    }
  })();
  const windows: number[] = [];
  let matched = 0;
  let changed = 0;
  const t0 = performance.now();
  let after: string | null = '0';
  let ordered = false;
  while (after !== null) {
    const w0 = performance.now();
    await db.query('BEGIN');
    const window = await readWindow(db, productId, selection, after, ordered);
    const { sql, params } = bulkChangeSql(productId, selection, change, window);
    await db.query(`SELECT set_config($1, $2, true)`, [COUNTS_BY_STATEMENT.name, COUNTS_BY_STATEMENT.value]);
    const { rows } = await db.query<{ matched: number; written: number }>(sql, params);
    await db.query(`SELECT set_config($1, '', true)`, [COUNTS_BY_STATEMENT.name]);
    await db.query('COMMIT');
    windows.push(performance.now() - w0);
    matched += rows[0].matched;
    changed += rows[0].written;
    after = window.length === BULK_WINDOW_DEVICES ? window[window.length - 1] : null;
    ordered = true;
  }
  const seconds = (performance.now() - t0) / 1000;
  probing = false;
  await prober;
  const w = [...windows].sort((x, y) => x - y);
  const s = [...waits].sort((x, y) => x - y);
  const round = (value: number) => Math.round(value * 10) / 10;
  return {
    name,
    windows: windows.length,
    matched,
    changed,
    seconds: round(seconds),
    window_ms: { p50: round(pct(w, 50)), p95: round(pct(w, 95)), max: round(w[w.length - 1] ?? 0) },
    single_update_ms: {
      count: s.length,
      p50: round(pct(s, 50)),
      p99: round(pct(s, 99)),
      max: round(s[s.length - 1] ?? 0),
    },
  };
}

async function main(): Promise<void> {
  const n = Number(process.argv[2] ?? 1_000_000);
  const database = await startDatabase('bulk', log);
  await migrate(database.url);
  const info = await seed(database.url, n, log);
  const db = new Client({ connectionString: database.url });
  const probe = new Client({ connectionString: database.url });
  await db.connect();
  await probe.connect();
  try {
    await db.query(`SET statement_timeout = 0`);
    const productId = info.productId;
    // Another product to move devices to (rolled back), in the bench organization.
    const target = await db.query<{ id: string }>(
      `INSERT INTO products (org_id, name) VALUES ($1, 'bench-bulk-target')
       ON CONFLICT DO NOTHING RETURNING id`,
      [info.orgId],
    );
    const targetId =
      target.rows[0]?.id ??
      (await db.query<{ id: string }>(`SELECT id FROM products WHERE name = 'bench-bulk-target'`)).rows[0].id;
    const { rows: mid } = await db.query<{ id: string }>(
      `SELECT id::text FROM devices WHERE product_id = $1 ORDER BY id OFFSET $2 LIMIT 1`,
      [productId, Math.floor(n / 2)],
    );
    const every: BulkSelection = { filters: {} };
    const beta: BulkSelection = { filters: { tags: ['beta'] } };
    // One window from the middle of the product, for every device and for the filter, read as a later window is.
    const window = await readWindow(db, productId, every, mid[0].id, true);
    const betaWindow = await readWindow(db, productId, beta, mid[0].id, true);
    const { rows: named } = await db.query<{ identifier: string }>(
      `SELECT identifier FROM devices WHERE product_id = $1 ORDER BY hashtext(identifier) LIMIT 1000`,
      [productId],
    );
    const identifiers: BulkSelection = { identifiers: named.map((row) => row.identifier) };
    const explained: Explained[] = [];
    for (const [name, selection, ordered] of [
      ['window selection, all devices, first window (planned freely)', every, false],
      ['window selection, all devices, a later window (primary-key order)', every, true],
      ['window selection, filter tags=beta, first window (planned freely)', beta, false],
      ['window selection, filter tags=beta, a later window (primary-key order)', beta, true],
    ] as const) {
      const result = await explainWindow(db, name, productId, selection, ordered ? mid[0].id : '0', ordered);
      log(`${name}: ${result.ms} ms`);
      explained.push(result);
    }
    const cases: [string, BulkSelection, BulkChange, string[] | null][] = [
      [
        'add_tags, all devices, one window',
        every,
        { kind: 'add_tags', tags: ['bulk'], maxTags: 100 },
        window,
      ],
      [
        'add_tags, filter tags=beta, one window',
        beta,
        { kind: 'add_tags', tags: ['bulk'], maxTags: 100 },
        betaWindow,
      ],
      ['remove_tags, all devices, one window', every, { kind: 'remove_tags', tags: ['prod'] }, window],
      [
        'disable_updates, all devices, one window',
        every,
        { kind: 'updates_enabled', enabled: false },
        window,
      ],
      ['clear_penalty_box, all devices, one window', every, { kind: 'clear_penalty_box' }, window],
      ['upgrade (devices part), all devices, one window', every, { kind: 'upgrade' }, window],
      [
        'move, all devices, one window',
        every,
        { kind: 'move', orgId: info.orgId, productId: targetId },
        window,
      ],
      ['add_tags, 1,000 identifiers', identifiers, { kind: 'add_tags', tags: ['bulk'], maxTags: 100 }, null],
    ];
    for (const [name, selection, change, w] of cases) {
      const result = await explain(db, name, productId, selection, change, w);
      log(`${name}: ${result.ms} ms`);
      explained.push(result);
    }
    const runs: RunResult[] = [];
    const add: BulkChange = { kind: 'add_tags', tags: ['bulk'], maxTags: 100 };
    const remove: BulkChange = { kind: 'remove_tags', tags: ['bulk'] };
    for (const [name, selection, change] of [
      ['add_tags, filter tags=beta', beta, add],
      ['remove_tags, filter tags=beta (undo)', beta, remove],
      ['add_tags, all devices', every, add],
      ['remove_tags, all devices (undo)', every, remove],
    ] as const) {
      const result = await run(db, probe, name, productId, selection, change, n);
      log(`${name}: ${JSON.stringify(result)}`);
      runs.push(result);
    }
    for (const result of explained)
      process.stdout.write(`\n== ${result.name} (${result.ms} ms)\n${result.plan}\n`);
    process.stdout.write(
      `${JSON.stringify({ devices: n, window_devices: BULK_WINDOW_DEVICES, explained: explained.map(({ name, ms }) => ({ name, ms })), runs })}\n`,
    );
  } finally {
    await probe.end();
    await db.end();
    await database.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
