/**
 * Rolling restart behind two instances (`npm run check:rolling-restart`; not part of `npm test`): two built
 * servers share one PostgreSQL; a client-side balancer sends each request to the next instance and, like a
 * proxy's "next upstream on connect error", retries on the other one only when a connection is refused (the
 * request was never sent). Under load, each instance in turn gets SIGTERM and is started again. The check
 * asserts zero failed requests and that every acknowledged write is there; the numbers go to docs/operations.md.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { request } from 'node:http';
import { join } from 'node:path';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import {
  DIST,
  freePort,
  percentile,
  print,
  ROOT,
  sleep,
  startFleethub,
  writeSection,
  runCheck,
} from './reliability-common';

const WORKERS = 16;
/** FLEETHUB_SHUTDOWN_DRAIN_MS: a little longer than two health-check periods of the balancer. */
const DRAIN_MS = 1_000;

interface Backend {
  port: number;
  process: ChildProcess;
}

interface Answer {
  status: number;
  body: string;
}

function send(port: number, method: string, path: string, token: string, body?: unknown): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = request(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        agent: false, // a fresh connection per request: an idle keep-alive socket cannot be closed under it
        headers: {
          Authorization: `Bearer ${token}`,
          ...(payload
            ? { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(payload) }
            : {}),
        },
        timeout: 60_000,
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.end(payload);
  });
}

/** A token for the helper's user `ops@example.com`, through the CLI (the last line of its output). */
function newToken(env: NodeJS.ProcessEnv): Promise<string> {
  return new Promise((resolve, reject) => {
    const cli = spawn(
      process.execPath,
      [join(DIST, 'src/cli/main.js'), 'tokens', 'create', '--email', 'ops@example.com'],
      {
        cwd: ROOT,
        env,
        stdio: ['ignore', 'pipe', 'ignore'],
      },
    );
    let out = '';
    cli.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    cli.on('close', (code) =>
      code === 0
        ? resolve(out.trim().split('\n').pop()!.trim())
        : reject(new Error(`tokens create exited ${code}`)),
    );
  });
}

async function startInstance(env: NodeJS.ProcessEnv, port: number): Promise<Backend> {
  const child = spawn(process.execPath, [join(DIST, 'src/main.js')], {
    cwd: ROOT,
    env: { ...env, PORT: String(port) },
    stdio: 'ignore',
  });
  const deadline = Date.now() + 60_000;
  for (;;) {
    const ready = await fetch(`http://127.0.0.1:${port}/readyz`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ready) return { port, process: child };
    if (child.exitCode !== null || Date.now() > deadline)
      throw new Error(`instance on ${port} did not start`);
    await sleep(200);
  }
}

async function stopInstance(backend: Backend): Promise<{ code: number | null; ms: number }> {
  const started = Date.now();
  const exited = new Promise<number | null>((res) => backend.process.once('exit', (code) => res(code)));
  backend.process.kill('SIGTERM');
  const code = await Promise.race([exited, sleep(20_000).then(() => -1)]);
  return { code, ms: Date.now() - started };
}

async function main(): Promise<string[]> {
  const { EmbeddedPostgres } = (await import(join(DIST, 'src/database/embedded-postgres.js'))) as {
    EmbeddedPostgres: new (o: { dataDir: string; database: string }) => {
      start(): Promise<string>;
      stop(): Promise<void>;
    };
  };
  const pgRoot = await mkdtemp(join(tmpdir(), 'fleethub-rolling-'));
  const postgres = new EmbeddedPostgres({ dataDir: join(pgRoot, 'postgres'), database: 'fleethub' });
  const databaseUrl = await postgres.start();
  const failures: string[] = [];
  // Instance A is started by the shared helper (it also creates the user, token, org `ops` and product `p`).
  const fh = await startFleethub({
    DATABASE_URL: databaseUrl,
    FLEETHUB_SECRET_KEY: 'rolling-restart-check-key-0123456789abcdef',
    FLEETHUB_SHUTDOWN_DRAIN_MS: String(DRAIN_MS),
  });
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    FLEETHUB_DATA_DIR: fh.dataDir,
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    DATABASE_URL: databaseUrl,
    FLEETHUB_SECRET_KEY: 'rolling-restart-check-key-0123456789abcdef',
    FLEETHUB_RATE_LIMIT_API_PER_MIN: '1000000',
    FLEETHUB_SHUTDOWN_DRAIN_MS: String(DRAIN_MS),
  };
  const token = await newToken(env);
  const backends: Backend[] = [
    { port: Number(new URL(fh.url).port), process: fh.server },
    await startInstance(env, await freePort()),
  ];
  try {
    let next = 0;
    let refusedAndRetried = 0;
    // Active health checks, as a balancer does: /readyz every 100 ms; an instance that fails it gets no new requests.
    const ready = [true, true];
    let checking = true;
    const healthChecks = (async () => {
      while (checking) {
        await Promise.all(
          backends.map(async (backend, index) => {
            ready[index] = await fetch(`http://127.0.0.1:${backend.port}/readyz`, {
              signal: AbortSignal.timeout(1000),
            }).then(
              (r) => r.status === 200,
              () => false,
            );
          }),
        );
        await sleep(100);
      }
    })();
    const balanced = async (method: string, path: string, body?: unknown): Promise<Answer> => {
      let first = next++ % 2;
      if (!ready[first] && ready[1 - first]) first = 1 - first;
      for (const index of [first, 1 - first, first, 1 - first]) {
        try {
          return await send(backends[index].port, method, path, token, body);
        } catch (err) {
          if ((err as { code?: string }).code !== 'ECONNREFUSED') throw err;
          refusedAndRetried++;
          await sleep(20);
        }
      }
      throw new Error('both instances refused the connection');
    };

    let stop = false;
    const latencies: number[] = [];
    const failed: string[] = [];
    const acknowledged: string[] = [];
    const worker = async (w: number) => {
      for (let n = 0; !stop; n++) {
        const identifier = `rolling-${w}-${n}`;
        const started = Date.now();
        try {
          const res =
            n % 2 === 0
              ? await balanced('POST', '/api/orgs/ops/products/p/devices', { identifier })
              : await balanced('GET', '/api/orgs/ops/products/p/devices?pagination[page_size]=50');
          latencies.push(Date.now() - started);
          if (res.status >= 300) failed.push(`${res.status} ${res.body.slice(0, 120)}`);
          else if (n % 2 === 0) acknowledged.push(identifier);
        } catch (err) {
          failed.push(String(err));
        }
      }
    };
    const load = Promise.all(Array.from({ length: WORKERS }, (_, w) => worker(w)));
    await sleep(2_000);
    const restarts: { instance: string; exitCode: number | null; stopMs: number; startMs: number }[] = [];
    for (const [index, name] of [
      [0, 'A'],
      [1, 'B'],
    ] as const) {
      const stopped = await stopInstance(backends[index]);
      const startedAt = Date.now();
      backends[index] = await startInstance(env, backends[index].port);
      restarts.push({
        instance: name,
        exitCode: stopped.code,
        stopMs: stopped.ms,
        startMs: Date.now() - startedAt,
      });
      await sleep(1_500);
    }
    stop = true;
    await load;
    checking = false;
    await healthChecks;

    const list = await send(
      backends[0].port,
      'GET',
      '/api/orgs/ops/products/p/devices?pagination[page_size]=500',
      token,
    );
    const total = (JSON.parse(list.body) as { pagination: { total_entries: number } }).pagination
      .total_entries;
    const result = {
      workers: WORKERS,
      requests: latencies.length + failed.length,
      failedRequests: failed.length,
      refusedConnectionsRetried: refusedAndRetried,
      acknowledgedWrites: acknowledged.length,
      devicesStored: total,
      latencyP50Ms: percentile(latencies, 50),
      latencyP99Ms: percentile(latencies, 99),
      restarts,
    };
    print(JSON.stringify(result, null, 2));
    if (failed.length > 0)
      failures.push(`${failed.length} requests failed, e.g. ${failed.slice(0, 3).join(' | ')}`);
    if (total !== acknowledged.length)
      failures.push(`${acknowledged.length} writes acknowledged, ${total} stored`);
    for (const r of restarts)
      if (r.exitCode !== 0) failures.push(`instance ${r.instance} exited with ${r.exitCode}`);

    await writeSection(
      'docs/operations.md',
      'check:rolling-restart',
      `### Rolling restart behind two instances: observed (\`npm run check:rolling-restart\`, ${new Date().toISOString().slice(0, 10)})

Two instances on one PostgreSQL with \`FLEETHUB_SHUTDOWN_DRAIN_MS=${DRAIN_MS}\`; ${WORKERS} clients alternating device
creates and device lists through a client-side balancer that checks \`/readyz\` every 100 ms and retries a refused
connection on the other instance. A then B get SIGTERM and are started again on the same port while the load runs.

| Measure | Observed |
|---|---|
| Requests | ${result.requests} (p50 ${result.latencyP50Ms} ms, p99 ${result.latencyP99Ms} ms) |
| Failed requests (error or non-2xx) | ${result.failedRequests} |
| Refused connections retried on the other instance | ${result.refusedConnectionsRetried} |
| Acknowledged writes / devices stored | ${result.acknowledgedWrites} / ${result.devicesStored} |
| Restarts (exit code, SIGTERM→exit, start→ready) | ${restarts.map((r) => `${r.instance}: ${r.exitCode}, ${r.stopMs} ms, ${r.startMs} ms`).join('; ')} |
| Result | ${failures.length === 0 ? 'pass' : `FAIL: ${failures.join('; ')}`} |`,
    );
  } catch (err) {
    failures.push(err instanceof Error ? (err.stack ?? err.message) : String(err));
  } finally {
    for (const backend of backends) if (backend.process.exitCode === null) await stopInstance(backend);
    await fh.cleanup();
    await postgres.stop();
    await rm(pgRoot, { recursive: true, force: true });
  }
  return failures;
}

runCheck('check:rolling-restart', main);
