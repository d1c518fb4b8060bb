/**
 * mTLS device-socket scenarios (issue #17, part 6): `bash bench/run.sh mtls [options]`, apart from `npm run bench`
 * (its own server process and database). Devices are fleethub's simulator
 * (`src/cli/simulator.ts`) in the client processes of `bench/sockets.ts`, each device with an ECDSA P-256
 * certificate signed by a CA registered with JITP (the same certificate at every connection of a device):
 *
 *  1. JITP: `--jitp` (1,000) devices that do not exist connect at once; time until all joined, and the database
 *     then holds each exactly once (one device, one certificate, one `device.register` audit entry).
 *  2. connect: `--devices` (5,000) devices, provisioned beforehand by their own first connections (not measured),
 *     connect at once (registered certificates) to a freshly started server; time until all joined, server RSS and
 *     V8 heap per connection.
 *  3. reconnect storm: all of them closed by the client side; once the server has recorded them disconnected,
 *     `--storm` (all) reconnect at once; time until all joined, failed attempts.
 *
 * Options: `--devices=N`, `--storm=N`, `--jitp=N`, `--settle-ms=N` (default 3000), `--per-worker=N` (devices per
 * client process, default 1250), `--out=FILE` (the results as
 * JSON; default: stdout only). A smoke run: `bash bench/run.sh mtls --devices=50 --jitp=20`. `npm run bench` runs
 * it and publishes the results in docs/benchmarks.md (bench/standalone.ts).
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { makeCa } from '../src/cli/cert-generator';
import { registerCa } from '../src/cli/certs.command';
import { BUILD_DIR, sleep } from './paths';
import { procStat, request, type Started, startProcess, stopProcess } from './processes';
import { migrate, seed, startDatabase } from './seed';
import { serverHeap, startWorker, stopWorker, waitFor, type Worker } from './sockets';

const argv = process.argv.slice(2);
const option = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
const count = (name: string, fallback: number) => {
  const raw = option(name);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < 1) throw new Error(`--${name} must be a positive whole number`);
  return Number(raw);
};
const DEVICES = count('devices', 5000);
const STORM = Math.min(count('storm', DEVICES), DEVICES);
const JITP = count('jitp', 1000);
const SETTLE_MS = count('settle-ms', 3000);
/**
 * Devices per client process. A device's TLS handshake (ECDSA signature, key agreement, the server's chain) costs
 * its client more than the server, and one process of 5,000 devices (the shared-secret scenarios' share) kept one
 * core busy while the server idled (113 % against 13 %): the figures were the client's. Four processes let the
 * clients use whatever the server leaves of the cores.
 */
const PER_WORKER = Number(option('per-worker') ?? 1250);
const log = (line: string) => process.stderr.write(`${line}\n`);
const mib = (bytes: number | null) => (bytes === null ? null : Number((bytes / 2 ** 20).toFixed(1)));
const kibPer = (delta: number | null, n: number) =>
  delta === null || n === 0 ? null : Number((delta / 1024 / n).toFixed(1));

export interface Phase {
  devices: number;
  all_joined_ms: number | null;
  joined: number;
  connection_attempts: number;
  failed_attempts: number;
  client_error_samples: string[];
}

/** What the script prints (and writes with `--out`). */
export interface MtlsResults {
  devices: number;
  storm_devices: number;
  jitp_devices: number;
  jitp: Phase & { devices: number; certificates: number; registrations: number; each_exactly_once: boolean };
  connect: Phase & {
    server_rss_before_mib: number | null;
    server_rss_connected_mib: number | null;
    server_kib_per_device: number | null;
    server_heap_kib_per_device: number | null;
  };
  storm: Phase & { server_recorded_disconnects_ms: number | null };
  server_metrics: string[];
}

async function startServer(databaseUrl: string, dataDir: string): Promise<Started & { tlsPort: number }> {
  const started = await startProcess(
    'fleethub',
    'bash',
    [
      '-c',
      // BENCH_SERVER_NODE_ARGS as for the other scenarios (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`).
      `ulimit -n $(ulimit -Hn); exec "$0" --max-old-space-size=1024 --max-semi-space-size=8 --no-allocation-site-pretenuring $BENCH_SERVER_NODE_ARGS "$1"`,
      process.execPath,
      join(BUILD_DIR, 'src/main.js'),
    ],
    {
      DATABASE_URL: databaseUrl,
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      FLEETHUB_DATA_DIR: dataDir,
      FLEETHUB_DEVICE_TLS_PORT: '0',
      FLEETHUB_RATE_LIMIT_API_PER_MIN: '10000000',
    },
    /device mTLS socket on port (\d+)/,
  );
  const url = /fleethub listening on (http:\/\/\S+)/.exec(started.output())?.[1];
  if (!url) throw new Error(`no URL in the server's output:\n${started.output()}`);
  return { ...started, url, tlsPort: Number(started.url) };
}

async function main(): Promise<void> {
  const database = await startDatabase('mtls', log);
  await migrate(database.url);
  const info = await seed(database.url, 1000, log);
  const db = new Client({ connectionString: database.url });
  await db.connect();
  const dataDir = await mkdtemp(join(tmpdir(), 'fleethub-bench-mtls-'));
  let server = await startServer(database.url, dataDir);
  let pid = server.child.pid;
  log(`fleethub ${server.url}, mTLS port ${server.tlsPort} (pid ${pid})`);
  const workers: Worker[] = [];
  const results: Partial<MtlsResults> = { devices: DEVICES, storm_devices: STORM, jitp_devices: JITP };
  try {
    const auth = { authorization: `Bearer ${info.token}`, 'content-type': 'application/json' };
    const product = `bench-mtls-${process.pid}`;
    const res = await request(`${server.url}/api/orgs/${encodeURIComponent(info.org)}/products`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ name: product }),
    });
    if (res.status !== 201) throw new Error(`create product: ${res.status} ${res.text.slice(0, 200)}`);
    const ca = await makeCa(`bench mTLS CA ${process.pid}`);
    await registerCa(server.url, info.token, info.org, ca, {
      jitp: { product_name: product, tags: ['bench'], description: 'bench mTLS' },
    });
    const serverCa = await readFile(join(dataDir, 'device-tls', 'ca.pem'), 'utf8');
    const processes = Math.ceil(Math.max(DEVICES, JITP) / PER_WORKER);
    for (let i = 0; i < processes; i++) workers.push(startWorker(i));

    /** Sets every worker up for devices `<prefix>00001`... and connects devices 0..n-1 at once. */
    const connectAll = async (prefix: string, n: number, timeoutMs: number): Promise<Phase> => {
      const shares = workers.map((w, i) => ({
        w,
        from: i * PER_WORKER,
        count: Math.max(0, Math.min(PER_WORKER, n - i * PER_WORKER)),
      }));
      const active = shares.filter((s) => s.count > 0);
      await Promise.all(
        active.map((s) =>
          s.w.send('init', {
            url: `https://127.0.0.1:${server.tlsPort}`,
            key: '',
            secret: '',
            prefix,
            width: 5,
            tls: { ca: serverCa, issuerCert: ca.cert, issuerKey: ca.key },
          }),
        ),
      );
      for (const s of active) {
        s.w.target = s.count;
        s.w.reachedAt = null;
        s.w.connected = 0;
      }
      const started = Date.now();
      await Promise.all(active.map((s) => s.w.send('connect', { from: s.from, count: s.count })));
      const took = await waitFor(() => active.every((s) => s.w.reachedAt !== null), timeoutMs, 50);
      const statuses = await Promise.all(active.map((s) => s.w.send('status')));
      const attempts = statuses.reduce((a, s) => a + s.attempts, 0);
      return {
        devices: n,
        all_joined_ms:
          took === null ? null : Math.max(...active.map((s) => s.w.reachedAt ?? started)) - started,
        joined: statuses.reduce((a, s) => a + s.connected, 0),
        connection_attempts: attempts,
        failed_attempts: attempts - n,
        client_error_samples: statuses.flatMap((s) => s.samples).slice(0, 5),
      };
    };
    const stopAll = () => Promise.all(workers.map((w) => w.send('stop')));
    const connectedInDb = async (prefix: string) =>
      (
        await db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM devices WHERE identifier LIKE $1 AND connection_status = 'connected'`,
          [`${prefix}%`],
        )
      ).rows[0].n;

    // 1. JITP: new devices at once, each created exactly once.
    const jitpPrefix = `mj${process.pid}-`;
    const jitp = await connectAll(jitpPrefix, JITP, Math.max(120_000, JITP * 20));
    await stopAll();
    const created = (
      await db.query<{ devices: number; certificates: number; registrations: number }>(
        `SELECT (SELECT count(*)::int FROM devices WHERE identifier LIKE $1) AS devices,
                (SELECT count(*)::int FROM device_certificates dc JOIN devices d ON d.id = dc.device_id
                  WHERE d.identifier LIKE $1) AS certificates,
                (SELECT count(*)::int FROM audit_logs WHERE action = 'device.register' AND target_id LIKE $1) AS registrations`,
        [`${jitpPrefix}%`],
      )
    ).rows[0];
    results.jitp = {
      ...jitp,
      ...created,
      each_exactly_once:
        created.devices === JITP && created.certificates === JITP && created.registrations === JITP,
    };
    log(
      `JITP ${JITP}: all joined in ${jitp.all_joined_ms} ms (${jitp.joined}/${JITP}); created ${created.devices} devices, ${created.certificates} certificates, ${created.registrations} registrations`,
    );

    // 2. connect: the devices are provisioned by a first connection (not measured), then connect at once.
    const prefix = `mc${process.pid}-`;
    await connectAll(prefix, DEVICES, Math.max(180_000, DEVICES * 30));
    await stopAll();
    await waitFor(async () => (await connectedInDb(prefix)) === 0, 60_000, 200);
    // A fresh server for the measured connections, as the shared-secret scenarios have: after the provisioning
    // (5,000 device creations) its heap and RSS were still settling, and RSS per connection came out negative.
    await stopProcess(server.child);
    server = await startServer(database.url, dataDir);
    pid = server.child.pid;
    log(
      `fleethub restarted for the measured phases: ${server.url}, mTLS port ${server.tlsPort} (pid ${pid})`,
    );
    await sleep(SETTLE_MS);
    const rss0 = procStat(pid).rss;
    const heap0 = await serverHeap(server.url);
    const connect = await connectAll(prefix, DEVICES, Math.max(120_000, DEVICES * 10));
    await sleep(SETTLE_MS);
    const rss1 = procStat(pid).rss;
    const heap1 = await serverHeap(server.url);
    results.connect = {
      ...connect,
      server_rss_before_mib: mib(rss0),
      server_rss_connected_mib: mib(rss1),
      server_kib_per_device: kibPer(rss1 - rss0, connect.joined),
      server_heap_kib_per_device:
        heap0.heapUsed === null || heap1.heapUsed === null
          ? null
          : kibPer(heap1.heapUsed - heap0.heapUsed, connect.joined),
    };
    log(
      `connect ${DEVICES}: all joined in ${connect.all_joined_ms} ms (${connect.joined}/${DEVICES}, ${connect.failed_attempts} failed attempts); RSS ${mib(rss0)} → ${mib(rss1)} MiB`,
    );

    // 3. reconnect storm.
    await stopAll();
    const disconnected = await waitFor(async () => (await connectedInDb(prefix)) === 0, 60_000, 200);
    const storm = await connectAll(prefix, STORM, Math.max(120_000, STORM * 10));
    results.storm = { ...storm, server_recorded_disconnects_ms: disconnected };
    log(
      `storm ${STORM}: all joined in ${storm.all_joined_ms} ms (${storm.joined}/${STORM}, ${storm.failed_attempts} failed attempts)`,
    );
    await stopAll();
    const metrics = await request(`${server.url}/metrics`);
    results.server_metrics = metrics.text
      .split('\n')
      .filter((line) => line.startsWith('fleethub_device_certificate_'));
  } finally {
    await Promise.all(workers.map((w) => stopWorker(w)));
    await stopProcess(server.child);
    await db.end();
    await database.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
  const text = JSON.stringify(results, null, 2);
  process.stdout.write(`${text}\n`);
  const out = option('out');
  if (out) await writeFile(out, `${text}\n`);
}

main().catch((err: unknown) => {
  log(`mtls bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exit(1);
});
