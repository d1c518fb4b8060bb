/**
 * Graceful shutdown check (`npm run check:shutdown`; not part of `npm test`): starts the built server on an
 * embedded PostgreSQL in a temporary FLEETHUB_DATA_DIR, drives load, sends SIGTERM while requests are in
 * flight, and asserts that every request that reached the server got a complete answer (zero failures), that
 * the process exits 0 within a bound, and that every acknowledged write is there after a restart. The
 * observed numbers go to docs/operations.md.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import {
  deviceIdentifiers,
  DIST,
  percentile,
  print,
  ROOT,
  sleep,
  startFleethub,
  writeSection,
  runCheck,
} from './reliability-common';

const WORKERS = Number(process.env.SHUTDOWN_WORKERS ?? 16);
const LOAD_MS = 3_000;
const EXIT_LIMIT_MS = 15_000;

interface Outcome {
  status: number;
  ms: number;
  complete: boolean;
  error?: string;
}

async function main(): Promise<string[]> {
  const fh = await startFleethub();
  const failures: string[] = [];
  try {
    let inFlight = 0;
    let signalled = false;
    const outcomes: Outcome[] = [];
    const acknowledged = new Set<string>();

    const worker = async (w: number) => {
      for (let n = 0; !signalled; n++) {
        const identifier = `shutdown-${w}-${n}`;
        const started = Date.now();
        inFlight++;
        try {
          const res =
            n % 2 === 0
              ? await fh.api('POST', '/api/orgs/ops/products/p/devices', { identifier })
              : await fh.api(
                  'GET',
                  '/api/orgs/ops/products/p/devices?pagination[page_size]=200&sort=inserted_at',
                );
          const body = await res.text();
          outcomes.push({
            status: res.status,
            ms: Date.now() - started,
            complete: body.length > 0 || res.status === 204,
          });
          if (res.status === 201) acknowledged.add(identifier);
        } catch (err) {
          const cause = (err as { cause?: { code?: string } }).cause?.code ?? '';
          outcomes.push({
            status: 0,
            ms: Date.now() - started,
            complete: false,
            error: `${String(err)} ${cause}`,
          });
        } finally {
          inFlight--;
        }
      }
    };
    const load = Promise.all(Array.from({ length: WORKERS }, (_, w) => worker(w)));
    await sleep(LOAD_MS);
    const inFlightAtSignal = inFlight;
    const signalAt = Date.now();
    signalled = true;
    fh.server.kill('SIGTERM');
    const exit = await Promise.race([fh.exited, sleep(EXIT_LIMIT_MS).then(() => null)]);
    const exitMs = Date.now() - signalAt;
    await load;

    // Restart on the same data directory and look for every acknowledged write.
    const again = spawn(process.execPath, [join(DIST, 'src/main.js')], {
      cwd: ROOT,
      env: {
        ...process.env,
        FLEETHUB_DATA_DIR: fh.dataDir,
        PORT: new URL(fh.url).port,
        HOST: '127.0.0.1',
        LOG_LEVEL: 'warn',
        DATABASE_URL: '',
      },
      stdio: 'ignore',
    });
    const againExited = new Promise((res) => again.once('exit', res));
    let present = new Set<string>();
    try {
      const deadline = Date.now() + 60_000;
      while (Date.now() < deadline) {
        const ready = await fetch(`${fh.url}/readyz`).then(
          (r) => r.status === 200,
          () => false,
        );
        if (ready) break;
        await sleep(200);
      }
      present = await deviceIdentifiers(fh.api);
    } finally {
      again.kill('SIGTERM');
      await Promise.race([againExited, sleep(20_000)]);
    }
    const lost = [...acknowledged].filter((id) => !present.has(id));
    const failed = outcomes.filter((o) => o.status === 0 || o.status >= 500 || !o.complete);
    const latencies = outcomes.filter((o) => o.status > 0).map((o) => o.ms);
    const result = {
      workers: WORKERS,
      requestsAnswered: outcomes.filter((o) => o.status > 0).length,
      inFlightAtSigterm: inFlightAtSignal,
      failedRequests: failed.length,
      exitCode: exit ? exit.code : null,
      exitAfterSigtermMs: exitMs,
      acknowledgedWrites: acknowledged.size,
      lostAcknowledgedWrites: lost.length,
      latencyP50Ms: percentile(latencies, 50),
      latencyP99Ms: percentile(latencies, 99),
    };
    print(JSON.stringify(result, null, 2));
    if (failed.length > 0)
      failures.push(`${failed.length} requests failed: ${JSON.stringify(failed.slice(0, 3))}`);
    if (!exit) failures.push(`the server did not exit within ${EXIT_LIMIT_MS} ms of SIGTERM`);
    else if (exit.code !== 0) failures.push(`the server exited with ${exit.code ?? exit.signal}`);
    if (lost.length > 0) failures.push(`${lost.length} acknowledged writes are missing`);
    if (inFlightAtSignal === 0)
      failures.push('no request was in flight at SIGTERM (the check proved nothing)');

    await writeSection(
      'docs/operations.md',
      'check:shutdown',
      `### Graceful shutdown: observed (\`npm run check:shutdown\`, ${new Date().toISOString().slice(0, 10)})

${WORKERS} clients alternating device creates and 200-row device lists; SIGTERM after ${LOAD_MS / 1000} s of load.

| Measure | Observed |
|---|---|
| Requests answered | ${result.requestsAnswered} (p50 ${result.latencyP50Ms} ms, p99 ${result.latencyP99Ms} ms) |
| In flight when SIGTERM was sent | ${result.inFlightAtSigterm} |
| Failed requests (no answer, cut off, or 5xx) | ${result.failedRequests} |
| Exit code / time from SIGTERM to exit | ${result.exitCode} / ${result.exitAfterSigtermMs} ms |
| Acknowledged writes / missing after a restart | ${result.acknowledgedWrites} / ${result.lostAcknowledgedWrites} |
| Result | ${failures.length === 0 ? 'pass' : `FAIL: ${failures.join('; ')}`} |`,
    );
  } catch (err) {
    failures.push(err instanceof Error ? (err.stack ?? err.message) : String(err));
  } finally {
    await fh.cleanup();
  }
  return failures;
}

runCheck('check:shutdown', main);
