/**
 * Several fleethub instances behind HAProxy on one machine, without a container engine (`npm run topology`):
 * one PostgreSQL (the embedded one in FLEETHUB_DATA_DIR/postgres, or DATABASE_URL), two built servers
 * (`dist/src/main.js`) sharing FLEETHUB_DATA_DIR (firmware files, the generated secret key) and Debian's `haproxy`
 * with a configuration generated from docker/haproxy.cfg: the same defaults, health checks, balancing, retries and
 * websocket handling; only the listening address, the servers' addresses and the check interval differ. Prints the
 * balancer's URL; Ctrl-C (or SIGTERM) stops the instances (their graceful shutdown), HAProxy and the PostgreSQL it
 * started, in that order. The rolling-restart check (scripts/check-rolling-restart-haproxy.ts) uses it as a library.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { DIST, freePort, postgresPort, ROOT, sleep, startPostgres, stopPostgres } from './reliability-common';

export interface TopologyOptions {
  /** The balancer's port (default: a free one). */
  port?: number;
  /** Shared by the instances (default: a new temporary folder, removed by close()). */
  dataDir?: string;
  /** An existing PostgreSQL; without it, the embedded one in `<dataDir>/postgres`. */
  databaseUrl?: string;
  /** HAProxy's health-check interval in ms (default 500; docker/haproxy.cfg has 5 s, tests want it fast). */
  checkIntervalMs?: number;
  /** Environment of every instance, over the topology's own (e.g. FLEETHUB_SHUTDOWN_DRAIN_MS, LOG_LEVEL). */
  env?: Record<string, string>;
  /** HAProxy logs every request (httplog format) on its output. */
  requestLog?: boolean;
  /** Each output line of the instances, HAProxy and the topology (default: none). */
  output?: (source: string, line: string) => void;
}

export interface Instance {
  name: string;
  port: number;
  url: string;
  process: ChildProcess | null;
}

export interface Topology {
  /** The balancer: API and device sockets. */
  url: string;
  databaseUrl: string;
  dataDir: string;
  instances: Instance[];
  /** The environment the instances run with (for the CLI against the same database). */
  env: NodeJS.ProcessEnv;
  /** Starts instance `i` (on its port) and waits for its /readyz: ms taken. */
  startInstance(i: number): Promise<number>;
  /** SIGTERM to instance `i` and waits for its exit (SIGKILL after timeoutMs): exit code and ms taken. */
  stopInstance(i: number, timeoutMs?: number): Promise<{ code: number | null; ms: number }>;
  /** SIGKILL to instance `i` and waits for its exit. */
  killInstance(i: number): Promise<void>;
  /** HAProxy's view of each server: `UP`, `DOWN`, `UP 1/2`, `NOLB`, `MAINT`... by instance name. */
  serverStates(): Promise<Record<string, string>>;
  /** The backend's retries and redispatches so far (HAProxy's `wretr` and `wredis`). */
  balancerCounters(): Promise<{ retries: number; redispatches: number }>;
  /** Waits until HAProxy reports instance `i` in `state` (`UP` or `DOWN`); ms taken, null on timeout. */
  waitForBalancer(i: number, state: 'UP' | 'DOWN', timeoutMs?: number): Promise<number | null>;
  /** Fast shutdown / start of the embedded PostgreSQL on its port (throws with DATABASE_URL). */
  stopDatabase(): Promise<void>;
  startDatabase(): Promise<void>;
  /** The last lines an instance wrote (for failure reports). */
  logTail(i: number, lines?: number): string[];
  /** Stops everything the topology started; idempotent. */
  close(): Promise<void>;
}

const HAPROXY_HELP =
  'haproxy is not installed: `apt-get install -y haproxy` (Debian/Ubuntu), then run this again';

/** The path of the `haproxy` binary (HAPROXY_BIN, the usual places, then PATH), or an error saying how to install it. */
export function findHaproxy(
  candidates = [process.env.HAPROXY_BIN, '/usr/sbin/haproxy', '/usr/local/sbin/haproxy'],
  path = process.env.PATH ?? '',
): string {
  for (const candidate of candidates) if (candidate && existsSync(candidate)) return candidate;
  const which = spawnSync('sh', ['-c', 'command -v haproxy'], { encoding: 'utf8', env: { PATH: path } });
  const found = which.stdout?.trim();
  if (which.status === 0 && found) return found;
  throw new Error(HAPROXY_HELP);
}

/**
 * docker/haproxy.cfg with this machine's addresses: the frontend on 127.0.0.1:`port`, one `server` line per
 * instance, the check intervals `inter` and `fastinter` (half of it), and a stats socket (admin level) for the
 * topology's own queries. Everything else (timeouts, `balance leastconn`, `option httpchk GET /readyz`,
 * `option redispatch`, `retries`, `retry-on`) is the file's. Throws when the file no longer has the lines it
 * rewrites.
 */
export function haproxyConfig(
  template: string,
  p: {
    port: number;
    /** Instance k (from 1) replaces host `fleethub-k` of the file's `server` lines. */
    servers: { port: number }[];
    interMs: number;
    statsSocket: string;
    /** The open-file limit HAProxy may raise itself to; `maxconn` is lowered to fit (two descriptors each). */
    fdLimit: number;
  },
): string {
  const replace = (text: string, pattern: RegExp, by: string) => {
    if (!pattern.test(text)) throw new Error(`docker/haproxy.cfg: no line matching ${pattern}`);
    return text.replace(pattern, by);
  };
  let cfg = template;
  cfg = replace(cfg, /^(\s*)bind :4000$/m, `$1bind 127.0.0.1:${p.port}`);
  cfg = replace(cfg, /^(\s*default-server .*\binter )\S+/m, `$1${p.interMs}ms`);
  cfg = replace(
    cfg,
    /^(\s*default-server .*\bfastinter )\S+/m,
    `$1${Math.max(100, Math.round(p.interMs / 2))}ms`,
  );
  cfg = cfg.replace(
    /^(\s*maxconn )(\d+)$/m,
    (_, head: string, n: string) => `${head}${Math.min(Number(n), Math.floor((p.fdLimit - 100) / 2))}`,
  );
  cfg = replace(cfg, /^global$/m, `global\n  stats socket ${p.statsSocket} mode 600 level admin`);
  // `server <name> fleethub-<k>:4000 ...` (checked and fallback lines alike) → instance k on this machine.
  const seen = new Set<number>();
  cfg = cfg.replace(/^(\s*server \S+ )fleethub-(\d+):4000\b/gm, (line, head: string, k: string) => {
    const server = p.servers[Number(k) - 1];
    if (!server)
      throw new Error(
        `docker/haproxy.cfg names fleethub-${k}: the topology has ${p.servers.length} instances`,
      );
    seen.add(Number(k) - 1);
    return `${head}127.0.0.1:${server.port}`;
  });
  if (seen.size !== p.servers.length) {
    throw new Error(`docker/haproxy.cfg names ${seen.size} instances, the topology has ${p.servers.length}`);
  }
  return cfg;
}

/** This process's hard open-file limit (what a child may raise its soft limit to). */
function hardFdLimit(): number {
  const line = readFileSync('/proc/self/limits', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('Max open files'));
  const hard = line?.trim().split(/\s+/)[4];
  return hard === undefined || hard === 'unlimited' ? 1_048_576 : Number(hard);
}

/** One line of a child's output at a time. */
function lines(stream: NodeJS.ReadableStream | null, each: (line: string) => void): void {
  let rest = '';
  stream?.on('data', (chunk: Buffer) => {
    const parts = (rest + chunk.toString()).split('\n');
    rest = parts.pop() ?? '';
    for (const line of parts) if (line.trim()) each(line);
  });
}

/** One command on HAProxy's stats socket; its whole answer. */
function haproxyCommand(socket: string, command: string): Promise<string> {
  return new Promise((res, rej) => {
    const conn = createConnection(socket);
    let out = '';
    conn.setTimeout(2000, () => conn.destroy(new Error('stats socket timeout')));
    conn.on('connect', () => conn.end(`${command}\n`));
    conn.on('data', (c: Buffer) => (out += c.toString()));
    conn.on('end', () => res(out));
    conn.on('error', rej);
  });
}

const exitOf = (child: ChildProcess) =>
  new Promise<number | null>((res) => {
    if (child.exitCode !== null || child.signalCode !== null) res(child.exitCode);
    else child.once('exit', (code) => res(code));
  });

export async function startTopology(options: TopologyOptions = {}): Promise<Topology> {
  const haproxyBin = findHaproxy();
  if (!existsSync(join(DIST, 'src/main.js'))) throw new Error('run `npm run build` first');
  const out = options.output ?? (() => undefined);
  // As many as docker/haproxy.cfg names (haproxyConfig checks it).
  const count = 2;
  const ownDataDir = options.dataDir === undefined;
  const dataDir = resolve(options.dataDir ?? (await mkdtemp(join(tmpdir(), 'fleethub-topology-'))));
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const runDir = await mkdtemp(join(tmpdir(), 'fleethub-haproxy-'));
  const pgDir = join(dataDir, 'postgres');

  let postgres: { stop(): Promise<void> } | null = null;
  let haproxy: ChildProcess | null = null;
  const instances: Instance[] = [];
  const tails = new Map<number, string[]>();
  /** Children stopped or killed by the topology (any other exit is reported). */
  const expectedExits = new Set<ChildProcess>();
  let closed = false;

  // The children run detached (see startInstance): should this process end without close() (an uncaught
  // exception), they are killed on its way out rather than left running. PostgreSQL is stopped by close() only.
  const killChildren = () => {
    for (const child of [...instances.map((s) => s.process), haproxy]) {
      if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  };
  process.once('exit', killChildren);

  const close = async () => {
    if (closed) return;
    closed = true;
    process.removeListener('exit', killChildren);
    await Promise.all(instances.map((_, i) => stopInstance(i).catch(() => undefined)));
    if (haproxy && haproxy.exitCode === null && haproxy.signalCode === null) {
      haproxy.kill('SIGTERM');
      await Promise.race([exitOf(haproxy), sleep(5000)]);
      if (haproxy.exitCode === null && haproxy.signalCode === null) haproxy.kill('SIGKILL');
    }
    if (postgres)
      await postgres.stop().catch((err: unknown) => out('topology', `postgres stop: ${String(err)}`));
    await rm(runDir, { recursive: true, force: true });
    if (ownDataDir) await rm(dataDir, { recursive: true, force: true });
  };

  const stopInstance = async (i: number, timeoutMs = 60_000) => {
    const child = instances[i].process;
    const started = Date.now();
    if (!child || child.exitCode !== null || child.signalCode !== null)
      return { code: child?.exitCode ?? null, ms: 0 };
    const exited = exitOf(child);
    expectedExits.add(child);
    child.kill('SIGTERM');
    const code = await Promise.race([exited, sleep(timeoutMs).then(() => undefined)]);
    if (code === undefined) {
      child.kill('SIGKILL');
      await exited;
      return { code: -1, ms: Date.now() - started };
    }
    return { code, ms: Date.now() - started };
  };

  try {
    let databaseUrl = options.databaseUrl ?? '';
    if (!databaseUrl) {
      const { EmbeddedPostgres } = (await import(join(DIST, 'src/database/embedded-postgres.js'))) as {
        EmbeddedPostgres: new (o: { dataDir: string; database: string }) => {
          start(): Promise<string>;
          stop(): Promise<void>;
        };
      };
      const embedded = new EmbeddedPostgres({ dataDir: pgDir, database: 'fleethub' });
      databaseUrl = await embedded.start();
      postgres = embedded;
      out('topology', `PostgreSQL (embedded, ${pgDir}) at ${databaseUrl.replace(/:[^:@/]*@/, ':***@')}`);
    }

    const port = options.port ?? (await freePort());
    const interMs = options.checkIntervalMs ?? 500;
    const url = `http://127.0.0.1:${port}`;
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      HOST: '127.0.0.1',
      FLEETHUB_DATA_DIR: dataDir,
      DATABASE_URL: databaseUrl,
      FLEETHUB_PUBLIC_URL: url,
      // Longer than HAProxy's `fall` checks, so the balancer stops routing before the listener closes.
      FLEETHUB_SHUTDOWN_DRAIN_MS: String(Math.max(2000, 3 * interMs)),
      ...options.env,
    };
    for (let i = 0; i < count; i++) {
      const p = await freePort();
      instances.push({ name: `fleethub-${i + 1}`, port: p, url: `http://127.0.0.1:${p}`, process: null });
    }

    const startInstance = async (i: number): Promise<number> => {
      const instance = instances[i];
      const started = Date.now();
      // The soft open-file limit raised to the hard one: one descriptor per device socket.
      const child = spawn(
        'bash',
        [
          '-c',
          'ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$0" "$1"',
          process.execPath,
          join(DIST, 'src/main.js'),
        ],
        // Its own process group: a Ctrl-C in the terminal reaches the topology, which stops the instances in order.
        {
          cwd: ROOT,
          env: { ...env, PORT: String(instance.port) },
          stdio: ['ignore', 'pipe', 'pipe'],
          detached: true,
        },
      );
      instance.process = child;
      child.once('exit', (code, signal) => {
        if (!expectedExits.delete(child)) {
          out('topology', `${instance.name} exited on its own (code ${code}, signal ${signal})`);
        }
      });
      const tail: string[] = [];
      tails.set(i, tail);
      const each = (line: string) => {
        tail.push(line);
        if (tail.length > 200) tail.shift();
        out(instance.name, line);
      };
      lines(child.stdout, each);
      lines(child.stderr, each);
      const deadline = Date.now() + 120_000;
      for (;;) {
        const ready = await fetch(`${instance.url}/readyz`, { signal: AbortSignal.timeout(2000) }).then(
          (r) => r.status === 200,
          () => false,
        );
        if (ready) return Date.now() - started;
        if (child.exitCode !== null || child.signalCode !== null || Date.now() > deadline) {
          throw new Error(`${instance.name} did not start:\n${tail.slice(-20).join('\n')}`);
        }
        await sleep(100);
      }
    };

    // The first start creates the schema (migrations) and the shared secret key; the others then start at once.
    await startInstance(0);
    await Promise.all(instances.slice(1).map((_, k) => startInstance(k + 1)));

    const statsSocket = join(runDir, 'haproxy.sock');
    const cfgPath = join(runDir, 'haproxy.cfg');
    const template = await readFile(join(ROOT, 'docker/haproxy.cfg'), 'utf8');
    await writeFile(
      cfgPath,
      haproxyConfig(template, {
        port,
        servers: instances,
        interMs,
        statsSocket,
        fdLimit: hardFdLimit(),
      }),
    );
    if (options.requestLog) {
      const cfg = (await readFile(cfgPath, 'utf8'))
        .replace(/^global$/m, 'global\n  log stdout format raw local0')
        .replace(/^defaults$/m, 'defaults\n  log global\n  option httplog');
      await writeFile(cfgPath, cfg);
    }
    const check = spawnSync(haproxyBin, ['-c', '-q', '-f', cfgPath], { encoding: 'utf8' });
    if (check.status !== 0) throw new Error(`haproxy rejects ${cfgPath}:\n${check.stderr}${check.stdout}`);
    const proxy = spawn(haproxyBin, ['-db', '-f', cfgPath], {
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    haproxy = proxy;
    const proxyTail: string[] = [];
    const fromProxy = (l: string) => {
      if (proxyTail.push(l) > 20) proxyTail.shift();
      out('haproxy', l);
    };
    lines(proxy.stdout, fromProxy);
    lines(proxy.stderr, fromProxy);

    /** `show stat` of the fleethub backend: one object per row (servers and BACKEND), by column name. */
    const stat = async (): Promise<Record<string, string>[]> => {
      const csv = (await haproxyCommand(statsSocket, 'show stat')).split('\n');
      const header = csv[0].replace(/^# /, '').split(',');
      return csv
        .slice(1)
        .map((row) => Object.fromEntries(row.split(',').map((cell, i) => [header[i], cell])))
        .filter((row) => row.pxname === 'fleethub');
    };
    const serverStates = async (): Promise<Record<string, string>> => {
      const states: Record<string, string> = {};
      for (const row of await stat())
        if (instances.some((s) => s.name === row.svname)) states[row.svname] = row.status;
      return states;
    };
    const balancerCounters = async () => {
      const backend = (await stat()).find((row) => row.svname === 'BACKEND');
      return { retries: Number(backend?.wretr ?? 0), redispatches: Number(backend?.wredis ?? 0) };
    };
    const waitForBalancer = async (i: number, state: 'UP' | 'DOWN', timeoutMs = 30_000) => {
      const started = Date.now();
      for (;;) {
        const now = await serverStates().catch((): Record<string, string> => ({}));
        if (now[instances[i].name] === state) return Date.now() - started;
        if (Date.now() - started > timeoutMs) return null;
        await sleep(50);
      }
    };
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (proxy.exitCode !== null) {
        throw new Error(`haproxy exited with ${proxy.exitCode}:\n${proxyTail.join('\n')}`);
      }
      const states = await serverStates().catch((): Record<string, string> => ({}));
      if (instances.every((s) => states[s.name] === 'UP')) break;
      if (Date.now() > deadline)
        throw new Error(`haproxy does not see the instances up: ${JSON.stringify(states)}`);
      await sleep(100);
    }

    const dbPort = postgres ? await postgresPort(pgDir) : null;
    return {
      url,
      databaseUrl,
      dataDir,
      instances,
      env,
      startInstance,
      stopInstance,
      async killInstance(i) {
        const child = instances[i].process;
        if (!child || child.exitCode !== null || child.signalCode !== null) return;
        const exited = exitOf(child);
        expectedExits.add(child);
        child.kill('SIGKILL');
        await exited;
      },
      serverStates,
      balancerCounters,
      waitForBalancer,
      async stopDatabase() {
        if (dbPort === null)
          throw new Error('the topology runs on DATABASE_URL: it does not control that PostgreSQL');
        await stopPostgres(pgDir);
      },
      async startDatabase() {
        if (dbPort === null)
          throw new Error('the topology runs on DATABASE_URL: it does not control that PostgreSQL');
        await startPostgres(pgDir, dbPort);
      },
      logTail: (i, n = 20) => (tails.get(i) ?? []).slice(-n),
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

/** `npm run topology [-- --port 4000]`: runs until Ctrl-C. */
async function main(): Promise<void> {
  const arg = (name: string) => {
    const i = process.argv.indexOf(`--${name}`);
    return i > 0 ? process.argv[i + 1] : undefined;
  };
  const port = Number(arg('port') ?? process.env.PORT ?? 4000);
  // The server's own default: the CLI (`npm run cli -- demo`) then finds the same embedded PostgreSQL.
  const dataDir = arg('data-dir') ?? process.env.FLEETHUB_DATA_DIR ?? join(ROOT, '.data');
  const print = (source: string, line: string) => process.stdout.write(`[${source}] ${line}\n`);
  let topology: Topology | null = null;
  let stopping = false;
  const stop = async (reason: string) => {
    print('topology', `${reason}: stopping the instances, HAProxy and PostgreSQL`);
    await topology?.close();
    print('topology', 'stopped');
    process.exit(0);
  };
  // During the start the signal is only noted: startTopology stops what it started once it returns.
  const onSignal = (signal: string) => {
    if (stopping) return;
    stopping = true;
    if (topology) void stop(signal);
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, () => onSignal(signal));
  topology = await startTopology({
    port,
    dataDir,
    databaseUrl: process.env.DATABASE_URL || undefined,
    checkIntervalMs: Number(arg('check-interval-ms') ?? 1000),
    env: { LOG_LEVEL: process.env.LOG_LEVEL ?? 'info' },
    output: print,
  });
  if (stopping) return stop('stopped during the start');
  print(
    'topology',
    `${topology.instances.map((s) => `${s.name} ${s.url} (pid ${s.process?.pid})`).join(', ')}; data in ${dataDir}`,
  );
  process.stdout.write(`\nfleethub behind HAProxy: ${topology.url}  (Ctrl-C stops everything)\n\n`);
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`topology: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
