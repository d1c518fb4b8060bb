/**
 * Shared helpers of scripts/check-outage.ts and scripts/check-shutdown.ts: they start the built server
 * (`node dist/src/main.js`) on an embedded PostgreSQL in a temporary FLEETHUB_DATA_DIR and stop and start
 * that PostgreSQL with pg_ctl, as src/database/embedded-postgres.ts runs it.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, realpath, rm, writeFile } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { embeddedPgCtl } from '../src/database/embedded-postgres';
import { withSection } from './markdown-section';

/** The checkout: the nearest folder above this file with a package.json (works from dist/ and from src). */
function findRoot(): string {
  let dir = __dirname;
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  return dir;
}

export const ROOT = findRoot();
/** The built server: `dist`, or FLEETHUB_DIST_DIR (e.g. a private build in a shared checkout). */
export const DIST = resolve(ROOT, process.env.FLEETHUB_DIST_DIR ?? 'dist');
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
export const print = (text: string) => process.stdout.write(`${text}\n`);

export async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const server = createServer();
    server.on('error', rej);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => res(port));
    });
  });
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<string> {
  return new Promise((res, rej) => {
    execFile(command, args, { cwd: ROOT, env, maxBuffer: 10 * 1024 * 1024 }, (err, stdout, stderr) =>
      err ? rej(new Error(`${command} ${args.join(' ')}: ${err.message}\n${stderr}`)) : res(stdout),
    );
  });
}

export type Api = (method: string, path: string, body?: unknown) => Promise<Response>;

export interface Fleethub {
  url: string;
  dataDir: string;
  pgDir: string;
  server: ChildProcess;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  output(): string;
  api: Api;
  cleanup(): Promise<void>;
}

/** A fleethub server on an embedded PostgreSQL in a fresh FLEETHUB_DATA_DIR, with a user, a token, org `ops`, product `p`. */
export async function startFleethub(extraEnv: Record<string, string> = {}): Promise<Fleethub> {
  if (!existsSync(join(DIST, 'src/main.js'))) throw new Error('run `npm run build` first');
  const dataDir = await mkdtemp(join(tmpdir(), 'fleethub-check-'));
  const pgDir = join(dataDir, 'postgres');
  const port = await freePort();
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    FLEETHUB_DATA_DIR: dataDir,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    DATABASE_URL: '',
    FLEETHUB_RATE_LIMIT_API_PER_MIN: '1000000',
    ...extraEnv,
  };
  const url = `http://127.0.0.1:${port}`;
  const server = spawn(process.execPath, [join(DIST, 'src/main.js')], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  server.stdout.on('data', (c: Buffer) => (output += c.toString()));
  server.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((res) =>
    server.once('exit', (code, signal) => res({ code, signal })),
  );
  const cleanup = async () => {
    if (server.exitCode === null && server.signalCode === null) {
      server.kill('SIGTERM');
      await Promise.race([exited, sleep(20_000)]);
    }
    await stopPostgres(pgDir).catch(() => undefined);
    await rm(dataDir, { recursive: true, force: true });
  };
  try {
    const deadline = Date.now() + 120_000;
    for (;;) {
      if (server.exitCode !== null) throw new Error(`server exited during start:\n${output}`);
      const ready = await fetch(`${url}/readyz`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ready) break;
      if (Date.now() > deadline) throw new Error(`server not ready after 120 s:\n${output}`);
      await sleep(250);
    }
    const cli = (...args: string[]) => run(process.execPath, [join(DIST, 'src/cli/main.js'), ...args], env);
    const email = 'ops@example.com';
    await cli('users', 'create', '--email', email, '--username', 'ops', '--password', 'ops-password-123');
    const token = (await cli('tokens', 'create', '--email', email)).trim().split('\n').pop()!.trim();
    const headers = { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' };
    const api: Api = (method, path, body) =>
      fetch(`${url}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(60_000),
      });
    if ((await api('POST', '/api/orgs', { name: 'ops' })).status !== 201)
      throw new Error('org create failed');
    if ((await api('POST', '/api/orgs/ops/products', { name: 'p' })).status !== 201) {
      throw new Error('product create failed');
    }
    return { url, dataDir, pgDir, server, exited, output: () => output, api, cleanup };
  } catch (err) {
    await cleanup();
    throw err;
  }
}

export async function postgresPort(pgDir: string): Promise<number> {
  return Number((await readFile(join(pgDir, 'postmaster.pid'), 'utf8')).split('\n')[3]);
}

/** pg_ctl as src/database/embedded-postgres.ts runs it (as root: from the system copy, as the postgres user). */
export const stopPostgres = async (pgDir: string) =>
  embeddedPgCtl(['stop', '-w', '-m', 'fast', '-D', await realpath(pgDir)]);
export const startPostgres = async (pgDir: string, port: number) => {
  const cluster = await realpath(pgDir);
  return embeddedPgCtl([
    'start',
    '-w',
    '-t',
    '60',
    '-D',
    cluster,
    '-l',
    join(cluster, 'server.log'),
    '-o',
    `-p ${port}`,
  ]);
};

/** Every device identifier of product `p` of org `ops`. */
export async function deviceIdentifiers(api: Api): Promise<Set<string>> {
  const present = new Set<string>();
  for (let page = 1; ; page++) {
    const res = await api(
      'GET',
      `/api/orgs/ops/products/p/devices?pagination[page_size]=500&pagination[page]=${page}`,
    );
    const body = (await res.json()) as {
      data: { identifier: string }[];
      pagination: { total_pages: number };
    };
    for (const d of body.data) present.add(d.identifier);
    if (page >= body.pagination.total_pages) return present;
  }
}

/** Replaces the block between `<!-- name -->` and `<!-- /name -->` of a Markdown file (appends it when absent). */
export async function writeSection(file: string, name: string, markdown: string): Promise<void> {
  const path = join(ROOT, file);
  const current = existsSync(path) ? await readFile(path, 'utf8') : '# Operations\n';
  const next = withSection(current, name, `<!-- ${name} -->\n${markdown.trim()}\n<!-- /${name} -->`);
  // Formatted like the rest of docs/ (prettier --check runs in CI).
  const prettier = await import('prettier');
  const options = (await prettier.resolveConfig(path)) ?? {};
  await writeFile(path, await prettier.format(next, { ...options, filepath: path }));
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

export function statusCounts(statuses: number[]): string {
  const counts = new Map<number, number>();
  for (const s of statuses) counts.set(s, (counts.get(s) ?? 0) + 1);
  return [...counts.entries()]
    .sort(([a], [b]) => a - b)
    .map(([s, c]) => `${s}×${c}`)
    .join(', ');
}

/** Runs a check: its failures are listed on stderr with exit 1, none prints "passed" with exit 0. */
export function runCheck(name: string, check: () => Promise<string[]>): void {
  check().then(
    (failures) => {
      if (failures.length > 0) {
        process.stderr.write(`${name} FAILED:\n- ${failures.join('\n- ')}\n`);
        process.exit(1);
      }
      print(`${name} passed`);
      process.exit(0);
    },
    (err: unknown) => {
      process.stderr.write(
        `${name} failed to run: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
      );
      process.exit(1);
    },
  );
}
