/**
 * Device-socket scenarios, driven by fleethub's device simulator (src/cli/simulator.ts). The simulated devices
 * live in child processes of this file (`node <build>/bench/sockets.js --sockets-worker`, at most PER_WORKER
 * sockets each, file-descriptor soft limit raised to the hard limit), so that one server process can be given as
 * many sockets as the machine allows:
 *  1. connect: N devices (registered beforehand in one INSERT) connect at once with the NH1 product shared secret
 *     and join;
 *     time until all have joined; server RSS and V8 heap per connection = (after all joined and settled − before) / N.
 *     N is capped by the server's descriptor limit (soft limit minus FD_RESERVE for its other descriptors).
 *  2. reconnect storm: every socket closed by the client side; once the server has recorded them all
 *     disconnected, STORM of them (10,000 by default) reconnect at once (no ramp); time until all joined again,
 *     failed connection attempts (refused, timed out or reset) and devices that never joined.
 *  3. upgrade-to-frame latency, same instance: `POST /api/devices/{identifier}/upgrade` on the instance holding the
 *     socket, one device at a time; from sending the request until the device receives the `update` frame.
 *  4. the same across instances: a second fleethub process on the same database (instance B) takes the
 *     request; the device is connected to instance A, B reaches it through the PgDeviceBus (LISTEN/NOTIFY).
 * The devices live in a product of the run's own (`bench-sockets-<harness pid>-<run>`), so the 1M-device product's
 * counts are untouched and harnesses running at the same time do not remove each other's devices or secrets.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes, type KeyObject } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Client } from 'pg';
import { issue, loadIssuer } from '../src/cli/cert-generator';
import {
  type DeviceCertificates,
  type DeviceOptions,
  SimulatedDevice,
  type SimulatorOptions,
  TELEMETRY_DEFAULTS,
  UPDATE_DEFAULTS,
} from '../src/cli/simulator';
import { ApplyingGauge, updateStats, type UpdateStats } from '../src/cli/simulated-update';
import type { buildSignedFw } from './fw';
import { sleep } from './paths';
import { procStat, request, type Started, stopProcess } from './processes';
import { describeLoad, type LoadWindow } from './machine-load';
import type { Log, SeedInfo } from './seed';

/** Descriptors the server keeps for everything but device sockets (listener, pool, bus, files, stdio...). */
const FD_RESERVE = 500;
/** Simulated devices per client process (each under the descriptor limit, and a fair share of a core). */
export const PER_WORKER = 5000;
const GOAL_DEVICES = 20_000;
const GOAL_STORM = 10_000;

export async function waitFor(predicate: () => boolean | Promise<boolean>, timeoutMs: number, stepMs = 20) {
  const started = Date.now();
  while (!(await predicate())) {
    if (Date.now() - started > timeoutMs) return null;
    await sleep(stepMs);
  }
  return Date.now() - started;
}

function percentile(values: number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** `Max open files` of a process (null when unreadable). */
export function fdLimits(pid: number | undefined): { soft: number; hard: number } | null {
  try {
    const line = readFileSync(`/proc/${pid}/limits`, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'));
    if (!line) return null;
    const [soft, hard] = line
      .replace('Max open files', '')
      .trim()
      .split(/\s+/)
      .map((v) => (v === 'unlimited' ? Infinity : Number(v)));
    return { soft, hard };
  } catch {
    return null;
  }
}

function openFds(pid: number | undefined): number | null {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return null;
  }
}

export interface ServerHeap {
  heapUsed: number | null;
  heapTotal: number | null;
  external: number | null;
}

/** Heap used and external memory of a fleethub process, from its Prometheus endpoint (prom-client defaults). */
export async function serverHeap(url: string): Promise<ServerHeap> {
  try {
    const res = await request(`${url}/metrics`);
    const read = (name: string) => {
      const m = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(res.text);
      return m ? Number(m[1]) : null;
    };
    return {
      heapUsed: read('nodejs_heap_size_used_bytes'),
      heapTotal: read('nodejs_heap_size_total_bytes'),
      external: read('nodejs_external_memory_bytes'),
    };
  } catch {
    return { heapUsed: null, heapTotal: null, external: null };
  }
}

/** The kernel's count of connections dropped because a listen queue was full (all sockets of the machine). */
function listenOverflows(): number | null {
  try {
    const lines = readFileSync('/proc/net/netstat', 'utf8').split('\n');
    const i = lines.findIndex((l) => l.startsWith('TcpExt:'));
    const names = lines[i].split(/\s+/);
    const values = lines[i + 1].split(/\s+/);
    return Number(values[names.indexOf('ListenOverflows')]);
  } catch {
    return null;
  }
}

const mib = (b: number | null | undefined) =>
  b === null || b === undefined ? null : Number((b / 2 ** 20).toFixed(1));
const kibPer = (delta: number | null, n: number) =>
  delta === null || n === 0 ? null : Number((delta / 1024 / n).toFixed(1));
const heapDelta = (before: number | null, after: number | null, n: number) =>
  before === null || after === null ? null : kibPer(after - before, n);

// ---------------------------------------------------------------- client processes

export interface WorkerBase {
  url: string;
  key: string;
  secret: string;
  /**
   * mTLS instead of NH1 (`bench/mtls.ts`): each device gets a certificate signed by this issuer (made once per
   * identifier in this process, so a device presents the same certificate at every connection), trusting `ca`.
   */
  tls?: { ca: string; issuerCert: string; issuerKey: string };
  prefix: string;
  width: number;
  /** How the devices apply updates (default: at once after the download, never failing). */
  update?: Pick<SimulatorOptions, 'applyMs' | 'applyJitter' | 'failShare' | 'seed' | 'firmware'>;
}

interface WorkerStatus {
  connected: number;
  opened: number;
  attempts: number;
  errors: number;
  samples: string[];
  notJoined: string[];
}

/** Commands the harness sends a client process, and what each answers. */
interface Commands {
  init: (args: WorkerBase) => { limit: string | undefined };
  /** Devices `from`..`from + count - 1` (0-based) connect at once. */
  connect: (args: { from: number; count: number }) => { started: number };
  status: () => WorkerStatus;
  connectedIdentifiers: (args: { limit: number }) => string[];
  /** Reports the arrival of the device's next `update` frame. */
  watch: (args: { identifier: string }) => boolean;
  /** The update counters of this process's devices; `settled`: devices that installed or failed an update. */
  updateStats: () => UpdateStats & { settled: number };
  stop: () => Promise<boolean>;
}
type Command = keyof Commands;
type CommandArgs<C extends Command> = Parameters<Commands[C]> extends [infer A] ? A : Record<string, never>;
type CommandResult<C extends Command> = Awaited<ReturnType<Commands[C]>>;

type WorkerMessage =
  | { event: 'status'; connected: number; applying: number; at: number }
  | { event: 'frame'; identifier: string; at: number }
  | { event?: undefined; id: number; result?: unknown; error?: string };

export interface Worker {
  index: number;
  child: ChildProcess;
  connected: number;
  /** Devices of this process applying an update, as last reported. */
  applying: number;
  target: number;
  reachedAt: number | null;
  onFrame: ((msg: { identifier: string; at: number }) => void) | null;
  send<C extends Command>(cmd: C, args?: CommandArgs<C>): Promise<CommandResult<C>>;
}

/** One client process; `send` returns the reply to a command. */
export function startWorker(index: number): Worker {
  const script = __filename.replace(/'/g, "'\\''");
  // The soft descriptor limit is raised to the hard limit before node starts (exec keeps the IPC descriptor).
  // BENCH_WORKER_NODE_ARGS (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`): the client processes' node only.
  const child = spawn(
    'bash',
    [
      '-c',
      `ulimit -n $(ulimit -Hn); exec '${process.execPath}' $BENCH_WORKER_NODE_ARGS '${script}' --sockets-worker`,
    ],
    { stdio: ['ignore', 'ignore', 'pipe', 'ipc'] },
  );
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => {
    stderr = (stderr + c.toString()).slice(-4000);
  });
  const pending = new Map<number, { resolve: (value: unknown) => void; reject: (err: Error) => void }>();
  let seq = 0;
  const worker: Worker = {
    index,
    child,
    connected: 0,
    applying: 0,
    target: 0,
    reachedAt: null,
    onFrame: null,
    send<C extends Command>(cmd: C, args?: CommandArgs<C>) {
      const id = ++seq;
      return new Promise<CommandResult<C>>((resolve, reject) => {
        pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
        child.send({ id, cmd, ...(args as object | undefined) });
      });
    },
  };
  child.on('message', (msg: WorkerMessage) => {
    if (msg.event === 'status') {
      worker.connected = msg.connected;
      worker.applying = msg.applying;
      if (worker.target > 0 && msg.connected >= worker.target && worker.reachedAt === null) {
        worker.reachedAt = msg.at;
      }
      return;
    }
    if (msg.event === 'frame') return worker.onFrame?.(msg);
    const p = pending.get(msg.id);
    if (!p) return;
    pending.delete(msg.id);
    if (msg.error) p.reject(new Error(`client process ${index}: ${msg.error}`));
    else p.resolve(msg.result);
  });
  child.on('exit', (code, signal) => {
    for (const p of pending.values()) {
      p.reject(new Error(`client process ${index} exited (${code ?? signal}): ${stderr.slice(-500)}`));
    }
    pending.clear();
  });
  return worker;
}

export function stopWorker(worker: Worker): Promise<void> {
  return new Promise((resolve) => {
    const { child } = worker;
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const t = setTimeout(() => child.kill('SIGKILL'), 5000);
    child.once('exit', () => {
      clearTimeout(t);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** Device certificates of a worker's mTLS devices: one per identifier for the life of the process. */
let workerCertificates: DeviceCertificates | null = null;
function certificatesOf(tls: NonNullable<WorkerBase['tls']>): DeviceCertificates {
  if (workerCertificates) return workerCertificates;
  const issuer = loadIssuer(tls.issuerCert, tls.issuerKey);
  const made = new Map<string, Promise<{ cert: string; key: string }>>();
  workerCertificates = {
    ca: tls.ca,
    forDevice(identifier) {
      let certificate = made.get(identifier);
      if (!certificate) {
        certificate = issuer.then((signer) => issue(signer, { cn: identifier }));
        made.set(identifier, certificate);
      }
      return certificate;
    },
  };
  return workerCertificates;
}

/** The worker side: holds SimulatedDevices, answers commands from the harness over IPC. */
function runWorker(): void {
  const send = (msg: WorkerMessage) => process.send!(msg);
  let base: WorkerBase | null = null;
  let devices: SimulatedDevice[] = [];
  let stats = { attempts: 0, errors: 0, samples: [] as string[] };
  let last = -1;
  let lastApplying = -1;
  const gauge = new ApplyingGauge();
  const byIdentifier = new Map<string, SimulatedDevice>();
  const report = () => {
    let connected = 0;
    for (const d of devices) if (d.connected) connected++;
    if (connected !== last || gauge.current !== lastApplying) {
      last = connected;
      lastApplying = gauge.current;
      send({ event: 'status', connected, applying: gauge.current, at: Date.now() });
    }
  };
  setInterval(report, 25);
  const commands: Commands = {
    init(args) {
      base = args;
      return { limit: /Max open files\s+(\d+)/.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1] };
    },
    connect({ from, count }) {
      if (!base) throw new Error('not initialised');
      stats = { attempts: 0, errors: 0, samples: [] };
      const options: DeviceOptions = {
        url: base.url,
        key: base.key,
        secret: base.secret,
        ...(base.tls && { certificates: certificatesOf(base.tls) }),
        devices: count,
        prefix: base.prefix,
        heartbeatMs: 30_000,
        // Unless the harness says otherwise, updates are installed as soon as downloaded, never failing.
        ...UPDATE_DEFAULTS,
        ...TELEMETRY_DEFAULTS,
        applyMs: 0,
        ...base.update,
        gauge,
        log: (line) => {
          stats.errors++;
          if (stats.samples.length < 5) stats.samples.push(line);
        },
      };
      devices = [];
      byIdentifier.clear();
      for (let i = from; i < from + count; i++) {
        const identifier = `${base.prefix}${String(i + 1).padStart(base.width, '0')}`;
        const device = new SimulatedDevice(identifier, options);
        const connect = device.connect.bind(device);
        device.connect = () => {
          stats.attempts++;
          connect();
        };
        devices.push(device);
        byIdentifier.set(identifier, device);
      }
      last = -1;
      for (const device of devices) device.connect();
      return { started: Date.now() };
    },
    status() {
      let connected = 0;
      let opened = 0;
      for (const d of devices) {
        if (d.connected) connected++;
        opened += d.connects;
      }
      const notJoined = devices
        .filter((d) => !d.connected)
        .map((d) => `${d.identifier} (${d.connects} connects)`);
      return {
        connected,
        opened,
        attempts: stats.attempts,
        errors: stats.errors,
        samples: stats.samples,
        notJoined: notJoined.slice(0, 10),
      };
    },
    updateStats() {
      let settled = 0;
      for (const d of devices) if (d.installed > 0 || d.failed > 0) settled++;
      return { ...updateStats(devices, gauge), settled };
    },
    connectedIdentifiers({ limit }) {
      return devices
        .filter((d) => d.connected)
        .slice(0, limit)
        .map((d) => d.identifier);
    },
    watch({ identifier }) {
      const device = byIdentifier.get(identifier);
      if (!device) throw new Error(`no device ${identifier}`);
      device.onReceive = (topic, event) => {
        if (topic === 'device' && event === 'update') {
          device.onReceive = null;
          send({ event: 'frame', identifier, at: Date.now() });
        }
      };
      return true;
    },
    async stop() {
      await Promise.all(devices.map((d) => d.stop()));
      return true;
    },
  };
  process.on('message', (msg: { id: number; cmd: Command } & Record<string, unknown>) => {
    const run = commands[msg.cmd] as (args: unknown) => unknown;
    Promise.resolve()
      .then(() => run(msg))
      .then(
        (result) => send({ id: msg.id, result }),
        (err: unknown) =>
          send({ id: msg.id, error: err instanceof Error ? (err.stack ?? err.message) : String(err) }),
      );
  });
  process.on('disconnect', () => process.exit(0));
  process.on('SIGTERM', () => process.exit(0));
}

// ---------------------------------------------------------------- harness side

/** One connect phase (all at once): time until all joined, attempts, failures. */
export interface ConnectPhase {
  all_joined_ms: number | null;
  joined: number;
  connection_attempts: number;
  sockets_opened: number;
  client_errors: number;
  failed_attempts: number;
  listen_queue_overflows: number | null;
  failed_devices: number;
  client_error_samples?: string[];
  not_joined?: string[];
  server_log_tail?: string[];
  /** What else the machine did during the phase. */
  machine?: LoadWindow;
}

export interface ConnectMemory {
  settle_ms: number;
  server_rss_before_mib: number | null;
  server_rss_connected_mib: number | null;
  server_kib_per_device: number | null;
  server_heap_before_mib: number | null;
  server_heap_connected_mib: number | null;
  server_heap_kib_per_device: number | null;
  server_heap_total_kib_per_device: number | null;
  server_external_kib_per_device: number | null;
  server_open_fds_before: number | null;
  server_open_fds_connected: number | null;
}

export interface UpgradeLatency {
  requests: number;
  frames_received: number;
  frames_missing: number;
  p50_ms: number | null;
  p99_ms: number | null;
  max_ms: number | null;
}

export interface SocketResults {
  devices: number;
  devices_requested: number;
  goal_devices: number;
  server_fd_limit: { soft: number; hard: number; soft_is_hard: boolean } | null;
  fd_reserve: number;
  capped_by_fd_limit: boolean;
  storm_devices: number;
  goal_storm: number;
  upgrades: number;
  client_processes: number;
  client_fd_limit?: number | null;
  connect?: ConnectPhase & ConnectMemory;
  reconnect_storm?: ConnectPhase & { disconnect_recorded_ms: number | null };
  upgrade_to_frame?: UpgradeLatency;
  upgrade_to_frame_cross?: UpgradeLatency;
}

/** The name of run `run`'s product, unique to this harness process. */
export const socketProductName = (run: number) => `bench-sockets-${process.pid}-${run}`;

/** Removes a product of the socket scenarios with its devices, their pending updates and its firmware rows. */
export async function dropSocketProduct(db: Client, orgId: string, name: string): Promise<void> {
  const inProduct = `SELECT id FROM products WHERE org_id = $1 AND name = $2`;
  await db.query(
    `DELETE FROM pending_updates WHERE device_id IN (SELECT id FROM devices WHERE product_id IN (${inProduct}))`,
    [orgId, name],
  );
  await db.query(`DELETE FROM devices WHERE product_id IN (${inProduct})`, [orgId, name]);
  await db.query(`DELETE FROM firmwares WHERE product_id IN (${inProduct})`, [orgId, name]);
  await db.query(`DELETE FROM products WHERE org_id = $1 AND name = $2`, [orgId, name]);
}

/** Socket products of harness processes that are gone (an interrupted run); a running harness's stay. */
export async function dropStaleSocketProducts(db: Client, orgId: string, log: Log): Promise<void> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT name FROM products WHERE org_id = $1 AND name LIKE 'bench-sockets-%'`,
    [orgId],
  );
  for (const { name } of rows) {
    const pid = Number(/^bench-sockets-(\d+)-\d+$/.exec(name)?.[1] ?? 0);
    if (pid === 0 || existsSync(`/proc/${pid}`)) continue;
    log(`  removing ${name}, left by an interrupted run`);
    await dropSocketProduct(db, orgId, name);
  }
}

export interface SocketScenarioOptions {
  fleethub: Started;
  /** Starts another fleethub process on the same database (instance B). */
  startFleethub: (name: string) => Promise<Started>;
  info: SeedInfo;
  log: Log;
  devices: number;
  storm: number;
  upgrades: number;
  settleMs: number;
  buildSignedFw: typeof buildSignedFw;
  signingKey: KeyObject;
  benchData: string;
  db: Client;
  /** The product the run creates for its devices (dropSocketProduct removes it). */
  productName: string;
  /** Starts watching the machine's load (bench/machine-load.ts). */
  watchLoad: () => { stop(): LoadWindow };
}

export async function socketScenarios({
  fleethub,
  startFleethub,
  info,
  log,
  devices: requested,
  storm: requestedStorm,
  upgrades,
  settleMs,
  buildSignedFw,
  signingKey,
  benchData,
  db,
  productName,
  watchLoad,
}: SocketScenarioOptions): Promise<SocketResults> {
  const auth = { authorization: `Bearer ${info.token}`, 'content-type': 'application/json' };
  const org = encodeURIComponent(info.org);
  const product = productName;
  const base = `${fleethub.url}/api/orgs/${org}/products/${product}`;
  const pid = fleethub.child.pid;

  // The server's descriptor limit caps N: its soft limit must be the hard limit (spawned through `ulimit -n`).
  const limits = fdLimits(pid);
  const cap = limits && Number.isFinite(limits.soft) ? Math.max(0, limits.soft - FD_RESERVE) : requested;
  const devices = Math.min(requested, cap);
  const storm = Math.min(requestedStorm, devices);
  const out: SocketResults = {
    devices,
    devices_requested: requested,
    goal_devices: GOAL_DEVICES,
    server_fd_limit: limits && {
      soft: limits.soft,
      hard: limits.hard,
      soft_is_hard: limits.soft === limits.hard,
    },
    fd_reserve: FD_RESERVE,
    capped_by_fd_limit: devices < requested,
    storm_devices: storm,
    goal_storm: GOAL_STORM,
    upgrades,
    client_processes: Math.ceil(devices / PER_WORKER),
  };
  log(
    `  server fd limit ${limits ? `${limits.soft}/${limits.hard} (soft/hard)` : 'unknown'}; ${devices} devices` +
      `${devices < requested ? ` (asked ${requested}, capped by the descriptor limit)` : ''}; storm ${storm}; ` +
      `${out.client_processes} client processes`,
  );
  if (limits && limits.soft !== limits.hard) log(`  WARNING: server soft fd limit is not the hard limit`);

  // A product for this run's simulated devices (bench.ts removes it once the server has stopped).
  let res = await request(`${fleethub.url}/api/orgs/${org}/products`, {
    method: 'POST',
    headers: auth,
    body: JSON.stringify({ name: product }),
  });
  if (res.status !== 201) throw new Error(`create product: ${res.status} ${res.text.slice(0, 200)}`);
  const productId = (
    await db.query<{ id: string }>(`SELECT id FROM products WHERE org_id = $1 AND name = $2`, [
      info.orgId,
      product,
    ])
  ).rows[0].id;
  res = await request(`${base}/shared_secrets`, { method: 'POST', headers: auth });
  if (res.status !== 201) throw new Error(`create shared secret: ${res.status} ${res.text.slice(0, 200)}`);
  const { key, secret } = (res.json as { data: { key: string; secret: string } }).data;
  const connectedInDb = async () =>
    (
      await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM devices WHERE product_id = $1 AND connection_status = 'connected'`,
        [productId],
      )
    ).rows[0].n;

  const prefix = `bs${randomBytes(3).toString('hex')}-`;
  const width = Math.max(5, String(devices).length);
  // Registered in one statement beforehand: the scenarios measure connections, not first-connect registration
  // (which serializes on the product's device counter and is a one-off per device).
  await db.query(
    `INSERT INTO devices (org_id, product_id, identifier)
     SELECT $1, $2, $3 || lpad(g::text, $4, '0') FROM generate_series(1, $5::int) AS g`,
    [info.orgId, productId, prefix, width, devices],
  );
  const workers: Worker[] = [];
  let instanceB: Started | null = null;
  try {
    for (let i = 0; i < out.client_processes; i++) workers.push(startWorker(i));
    const inits = await Promise.all(
      workers.map((w) => w.send('init', { url: fleethub.url, key, secret, prefix, width })),
    );
    out.client_fd_limit = Number(inits[0]?.limit ?? 0) || null;

    /** Devices 0..count-1 spread over the workers; the time until all joined (null: timed out) and failures. */
    const connectAll = async (count: number, timeoutMs: number): Promise<ConnectPhase> => {
      const shares = workers.map((w, i) => {
        const from = i * PER_WORKER;
        return { w, from, count: Math.max(0, Math.min(PER_WORKER, count - from)) };
      });
      const started = Date.now();
      const machine = watchLoad();
      const overflows0 = listenOverflows();
      for (const s of shares) {
        s.w.target = s.count;
        s.w.reachedAt = null;
        s.w.connected = 0;
      }
      await Promise.all(
        shares.filter((s) => s.count > 0).map((s) => s.w.send('connect', { from: s.from, count: s.count })),
      );
      const active = shares.filter((s) => s.count > 0).map((s) => s.w);
      const took = await waitFor(() => active.every((w) => w.reachedAt !== null), timeoutMs, 50);
      const statuses = await Promise.all(active.map((w) => w.send('status')));
      const joined = statuses.reduce((a, s) => a + s.connected, 0);
      const attempts = statuses.reduce((a, s) => a + s.attempts, 0);
      const overflows1 = listenOverflows();
      const result: ConnectPhase = {
        all_joined_ms:
          took === null ? null : Math.max(...active.map((w) => w.reachedAt ?? started)) - started,
        joined,
        connection_attempts: attempts,
        sockets_opened: statuses.reduce((a, s) => a + s.opened, 0),
        client_errors: statuses.reduce((a, s) => a + s.errors, 0),
        failed_attempts: attempts - count,
        // Handshakes the kernel dropped because the server's accept queue was full (retried by the client's TCP
        // after 1, 3, 7... s): machine-wide, so other work on the machine counts too.
        listen_queue_overflows: overflows0 === null || overflows1 === null ? null : overflows1 - overflows0,
        failed_devices: count - joined,
        machine: machine.stop(),
      };
      log(`  machine during the phase: ${describeLoad(result.machine!)}`);
      if (result.client_errors > 0) {
        result.client_error_samples = statuses.flatMap((s) => s.samples).slice(0, 5);
        log(`  ${result.client_errors} client errors, e.g. ${result.client_error_samples.join(' | ')}`);
      }
      if (joined < count) {
        result.not_joined = statuses.flatMap((s) => s.notJoined).slice(0, 10);
        result.server_log_tail = fleethub
          .output()
          .split('\n')
          .filter((l) => l.trim())
          .slice(-15);
        log(
          `  not joined: ${result.not_joined.join(', ')}\n  server log tail:\n    ${result.server_log_tail.join('\n    ')}`,
        );
      }
      return result;
    };
    const stopAll = () => Promise.all(workers.map((w) => w.send('stop')));

    // 1. connect N, measure memory per connection.
    await sleep(1000);
    const rss0 = procStat(pid).rss;
    const heap0 = await serverHeap(fleethub.url);
    const fds0 = openFds(pid);
    const connected = await connectAll(devices, Math.max(120_000, devices * 10));
    await sleep(settleMs);
    const rss1 = procStat(pid).rss;
    const heap1 = await serverHeap(fleethub.url);
    const fds1 = openFds(pid);
    const c = (out.connect = {
      ...connected,
      settle_ms: settleMs,
      server_rss_before_mib: mib(rss0),
      server_rss_connected_mib: mib(rss1),
      server_kib_per_device: kibPer(rss1 - rss0, connected.joined),
      server_heap_before_mib: mib(heap0.heapUsed),
      server_heap_connected_mib: mib(heap1.heapUsed),
      server_heap_kib_per_device: heapDelta(heap0.heapUsed, heap1.heapUsed, connected.joined),
      server_heap_total_kib_per_device: heapDelta(heap0.heapTotal, heap1.heapTotal, connected.joined),
      server_external_kib_per_device: heapDelta(heap0.external, heap1.external, connected.joined),
      server_open_fds_before: fds0,
      server_open_fds_connected: fds1,
    });
    log(
      `  connect ${devices}: all joined in ${c.all_joined_ms} ms (${c.joined}/${devices}, ${c.failed_attempts} failed attempts, ` +
        `${c.listen_queue_overflows} listen queue overflows); ` +
        `server RSS ${c.server_rss_before_mib} → ${c.server_rss_connected_mib} MiB (${c.server_kib_per_device} KiB/device), ` +
        `heap used ${c.server_heap_before_mib} → ${c.server_heap_connected_mib} MiB (${c.server_heap_kib_per_device} KiB/device; heap total ${c.server_heap_total_kib_per_device}, external ${c.server_external_kib_per_device} KiB/device); fds ${fds0} → ${fds1}`,
    );

    // BENCH_SOCKETS_HOLD_MS: keep the devices connected a while (for a heap snapshot of the server, say).
    if (process.env.BENCH_SOCKETS_HOLD_MS) {
      log(`  holding ${process.env.BENCH_SOCKETS_HOLD_MS} ms (server pid ${pid})`);
      await sleep(Number(process.env.BENCH_SOCKETS_HOLD_MS));
    }

    // 2. reconnect storm.
    const t = Date.now();
    await stopAll();
    const closed = await waitFor(async () => (await connectedInDb()) === 0, 120_000, 250);
    const disconnectRecordedMs = closed === null ? null : Date.now() - t;
    await sleep(1000);
    const s = (out.reconnect_storm = {
      disconnect_recorded_ms: disconnectRecordedMs,
      ...(await connectAll(storm, 120_000)),
    });
    log(
      `  reconnect storm ${storm}: all joined in ${s.all_joined_ms} ms (${s.joined}/${storm}, ${s.connection_attempts} attempts, ` +
        `${s.failed_attempts} failed, ${s.listen_queue_overflows} listen queue overflows); all ${devices} recorded disconnected in ` +
        `${s.disconnect_recorded_ms} ms`,
    );
    await sleep(2000);

    // 3./4. upgrade-to-frame latency.
    const fwPath = join(benchData, `bench-sockets-${process.pid}.fw`);
    const version = `1.0.${Date.now()}`;
    await buildSignedFw(fwPath, { product, version, size: 64 * 1024, privateKey: signingKey });
    const head = `--b\r\nContent-Disposition: form-data; name="firmware"; filename="s.fw"\r\nContent-Type: application/octet-stream\r\n\r\n`;
    const body = Buffer.concat([Buffer.from(head), readFileSync(fwPath), Buffer.from('\r\n--b--\r\n')]);
    await rm(fwPath, { force: true });
    res = await request(`${base}/firmwares`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${info.token}`,
        'content-type': 'multipart/form-data; boundary=b',
        'content-length': String(body.length),
      },
      body,
    });
    if (res.status !== 201) throw new Error(`upload firmware: ${res.status} ${res.text.slice(0, 200)}`);
    const uuid = (res.json as { data: { uuid: string } }).data.uuid;

    // Connected devices of the storm, spread over the client processes; the two cases use different devices.
    const lists = await Promise.all(
      workers.map((w) => w.send('connectedIdentifiers', { limit: 2 * upgrades })),
    );
    const candidates: { identifier: string; worker: Worker }[] = [];
    for (let i = 0; candidates.length < 2 * upgrades && lists.some((l) => i < l.length); i++) {
      lists.forEach(
        (l, w) => l[i] !== undefined && candidates.push({ identifier: l[i], worker: workers[w] }),
      );
    }
    const frames = new Map<string, (at: number) => void>();
    for (const w of workers) w.onFrame = (msg) => frames.get(msg.identifier)?.(msg.at);

    const latency = async (
      apiUrl: string,
      targets: { identifier: string; worker: Worker }[],
    ): Promise<UpgradeLatency> => {
      const latencies: number[] = [];
      let missing = 0;
      for (const { identifier, worker } of targets) {
        let receivedAt: number | null = null;
        frames.set(identifier, (at) => {
          receivedAt = at;
        });
        await worker.send('watch', { identifier });
        const sent = Date.now();
        const r = await request(`${apiUrl}/api/devices/${encodeURIComponent(identifier)}/upgrade`, {
          method: 'POST',
          headers: auth,
          body: JSON.stringify({ uuid }),
        });
        if (r.status >= 300) throw new Error(`upgrade: ${r.status} ${r.text.slice(0, 200)}`);
        const waited = await waitFor(() => receivedAt !== null, 5_000, 1);
        frames.delete(identifier);
        if (waited === null || receivedAt === null) missing++;
        else latencies.push(receivedAt - sent);
      }
      return {
        requests: targets.length,
        frames_received: latencies.length,
        frames_missing: missing,
        p50_ms: percentile(latencies, 50),
        p99_ms: percentile(latencies, 99),
        max_ms: latencies.length ? Math.max(...latencies) : null,
      };
    };
    let u = (out.upgrade_to_frame = await latency(fleethub.url, candidates.slice(0, upgrades)));
    log(
      `  upgrade→frame, same instance: ${u.frames_received}/${u.requests} frames, p50 ${u.p50_ms} ms, p99 ${u.p99_ms} ms, max ${u.max_ms} ms`,
    );

    instanceB = await startFleethub('fleethub-b');
    log(`  instance B: ${instanceB.url} (pid ${instanceB.child.pid})`);
    await sleep(1000);
    u = out.upgrade_to_frame_cross = await latency(instanceB.url, candidates.slice(upgrades, 2 * upgrades));
    log(
      `  upgrade→frame, across instances (API on B, socket on A): ${u.frames_received}/${u.requests} frames, p50 ${u.p50_ms} ms, p99 ${u.p99_ms} ms, max ${u.max_ms} ms`,
    );

    await stopAll();
    await sleep(500);
    await db.query(
      `DELETE FROM pending_updates WHERE firmware_id IN (SELECT id FROM firmwares WHERE uuid = $1)`,
      [uuid],
    );
    await request(`${base}/firmwares/${uuid}`, { method: 'DELETE', headers: auth });
  } finally {
    if (instanceB) await stopProcess(instanceB.child);
    await Promise.all(workers.map(stopWorker));
  }
  return out;
}

export interface Goal {
  goal: string;
  /** null: reported, not judged. */
  met: boolean | null;
  detail: string;
}

/** One run of the scenarios (a fresh server each time), with what else the machine was doing meanwhile. */
export interface SocketRun {
  run: number;
  results: SocketResults | null;
  error: string | null;
  machine: LoadWindow;
}

/**
 * One figure over the runs: each run's value (null: not reached, e.g. not all joined in time; undefined: the run
 * failed), the median and the range of the runs that did not fail.
 */
export interface Spread {
  values: (number | null | undefined)[];
  /** null when the median run did not reach it, or no run finished. */
  median: number | null;
  min: number | null;
  max: number | null;
}

/** Median and range over the runs that finished; a null (not reached in time) sorts above every number. */
export function spread(values: (number | null | undefined)[]): Spread {
  const finished = values.filter((v): v is number | null => v !== undefined);
  const sorted = [...finished].sort((a, b) => (a === null ? 1 : b === null ? -1 : a - b));
  const numbers = finished.filter((v): v is number => v !== null);
  return {
    values,
    median: sorted.length === 0 ? null : sorted[Math.floor((sorted.length - 1) / 2)],
    min: numbers.length ? Math.min(...numbers) : null,
    max: finished.includes(null) || numbers.length === 0 ? null : Math.max(...numbers),
  };
}

/** The published figures: each over the runs. */
export function socketFigures(runs: SocketRun[]) {
  const ok = runs.map((r) => r.results);
  const pick = (f: (r: SocketResults) => number | null | undefined) =>
    spread(ok.map((r) => (r ? (f(r) ?? null) : undefined)));
  return {
    connect_all_joined_ms: pick((r) => r.connect?.all_joined_ms),
    connect_joined: pick((r) => r.connect?.joined),
    connect_failed_attempts: pick((r) => r.connect?.failed_attempts),
    connect_listen_queue_overflows: pick((r) => r.connect?.listen_queue_overflows),
    rss_kib_per_device: pick((r) => r.connect?.server_kib_per_device),
    heap_kib_per_device: pick((r) => r.connect?.server_heap_kib_per_device),
    storm_all_joined_ms: pick((r) => r.reconnect_storm?.all_joined_ms),
    storm_joined: pick((r) => r.reconnect_storm?.joined),
    storm_failed_attempts: pick((r) => r.reconnect_storm?.failed_attempts),
    storm_listen_queue_overflows: pick((r) => r.reconnect_storm?.listen_queue_overflows),
    upgrade_p50_ms: pick((r) => r.upgrade_to_frame?.p50_ms),
    upgrade_p99_ms: pick((r) => r.upgrade_to_frame?.p99_ms),
    cross_p50_ms: pick((r) => r.upgrade_to_frame_cross?.p50_ms),
    cross_p99_ms: pick((r) => r.upgrade_to_frame_cross?.p99_ms),
  };
}

/** `median (range min–max)`, with `> limit` for a value not reached. */
export function describeSpread(s: Spread, unit = '', scale = 1): string {
  const f = (v: number | null) =>
    v === null ? 'not reached' : `${Number((v / scale).toFixed(1)).toLocaleString('en')}${unit}`;
  const finished = s.values.filter((v) => v !== undefined).length;
  const failed = s.values.length - finished;
  if (finished === 0) return 'no run finished';
  const note = failed > 0 ? ` (${failed} of ${s.values.length} runs failed)` : '';
  return finished === 1 || (s.min === s.max && s.min !== null && !s.values.includes(null))
    ? `${f(s.median)}${note}`
    : `${f(s.median)} (range ${f(s.min)}–${f(s.max)})${note}`;
}

/**
 * Goals of issue #7 for device sockets, judged on the runs: a goal is met when most runs meet it (so the median run
 * does); the detail gives the median and range of the figure it is judged on.
 */
export function socketGoals(runs: SocketRun[]): Goal[] {
  const done = runs
    .map((r) => r.results)
    .filter((r): r is SocketResults => !!r?.connect && !!r.reconnect_storm);
  if (done.length === 0) return [];
  const n = runs.length;
  const first = done[0];
  const figures = socketFigures(runs);
  const judged = (pass: (r: SocketResults) => boolean) => {
    const k = runs.filter((r) => r.results && pass(r.results)).length;
    return { met: k > n / 2, tally: `met in ${k} of ${n} run${n === 1 ? '' : 's'}` };
  };
  const goals: Goal[] = [];
  const capped = first.capped_by_fd_limit
    ? ` (${first.devices_requested.toLocaleString('en')} asked; capped by the server's open-file limit ${first.server_fd_limit?.soft.toLocaleString('en')} − ${first.fd_reserve} for its other descriptors)`
    : first.devices < GOAL_DEVICES
      ? ` (only ${first.devices.toLocaleString('en')} measured: not the goal's scale)`
      : '';
  const memory = judged(
    (r) =>
      r.connect?.joined === r.devices &&
      (r.devices >= GOAL_DEVICES || r.capped_by_fd_limit) &&
      r.connect.server_kib_per_device !== null &&
      r.connect.server_kib_per_device <= 20,
  );
  goals.push({
    goal: `${GOAL_DEVICES.toLocaleString('en')} device sockets in one server process at ≤ 20 KiB RSS each`,
    met: memory.met,
    detail:
      `${first.devices.toLocaleString('en')} devices${capped}; joined ${describeSpread(figures.connect_joined)}, ` +
      `${describeSpread(figures.rss_kib_per_device, ' KiB')} RSS per connection (heap used ` +
      `${describeSpread(figures.heap_kib_per_device, ' KiB')}); ${memory.tally}`,
  });
  const storm = judged(
    (r) =>
      r.storm_devices >= GOAL_STORM &&
      r.reconnect_storm?.all_joined_ms !== null &&
      r.reconnect_storm?.all_joined_ms !== undefined &&
      r.reconnect_storm.all_joined_ms <= 30_000 &&
      r.reconnect_storm.failed_devices === 0 &&
      r.reconnect_storm.failed_attempts === 0,
  );
  goals.push({
    goal: `reconnect storm of ${GOAL_STORM.toLocaleString('en')} devices absorbed in ≤ 30 s, no failed device`,
    met: storm.met,
    detail:
      `time until all ${first.storm_devices.toLocaleString('en')} joined: ${describeSpread(figures.storm_all_joined_ms, ' s', 1000)}, ` +
      `failed connection attempts ${describeSpread(figures.storm_failed_attempts)}` +
      `${first.storm_devices < GOAL_STORM ? " (not the goal's scale)" : ''}; ${storm.tally}`,
  });
  const lat = (u: UpgradeLatency | undefined, limit: number) =>
    !!u && u.frames_missing === 0 && u.p99_ms !== null && u.p99_ms <= limit;
  const same = judged((r) => lat(r.upgrade_to_frame, 50));
  goals.push({
    goal: 'upgrade → `update` frame p99 ≤ 50 ms, same instance',
    met: same.met,
    detail: `p50 ${describeSpread(figures.upgrade_p50_ms, ' ms')}, p99 ${describeSpread(figures.upgrade_p99_ms, ' ms')} over ${first.upgrades} upgrades per run; ${same.tally}`,
  });
  const cross = judged((r) => lat(r.upgrade_to_frame_cross, 150));
  goals.push({
    goal: 'upgrade → `update` frame p99 ≤ 150 ms, across instances (API on B, socket on A)',
    met: cross.met,
    detail: `p50 ${describeSpread(figures.cross_p50_ms, ' ms')}, p99 ${describeSpread(figures.cross_p99_ms, ' ms')} over ${first.upgrades} upgrades per run; ${cross.tally}`,
  });
  return goals;
}

if (require.main === module && process.argv.includes('--sockets-worker')) runWorker();
