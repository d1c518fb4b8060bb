/**
 * Database outage check (`npm run check:outage`; not part of `npm test`): starts the built server on an
 * embedded PostgreSQL in a temporary FLEETHUB_DATA_DIR, drives writes and reads, stops PostgreSQL
 * (`pg_ctl stop -m fast`), asserts that the API answers 503 with the contract body within a bounded time and
 * that /readyz fails, restarts PostgreSQL, asserts recovery within seconds and that every acknowledged write
 * is present. The observed numbers go to docs/operations.md.
 */
import {
  deviceIdentifiers,
  percentile,
  postgresPort,
  print,
  sleep,
  startFleethub,
  startPostgres,
  statusCounts,
  stopPostgres,
  writeSection,
  runCheck,
} from './reliability-common';

const WORKERS = Number(process.env.OUTAGE_WORKERS ?? 8);
const WARMUP_MS = 3_000;
const OUTAGE_MS = Number(process.env.OUTAGE_MS ?? 8_000);
const AFTER_MS = 6_000;
const DETECT_LIMIT_MS = 10_000;
const RECOVERY_LIMIT_MS = 10_000;

interface Event {
  at: number;
  done: number;
  kind: 'write' | 'read';
  status: number;
  contract: boolean;
}

function isContract503(body: unknown): boolean {
  if (typeof body !== 'object' || body === null) return false;
  const errors = (body as { errors?: { detail?: unknown } }).errors;
  return Object.keys(body).length === 1 && typeof errors?.detail === 'string';
}

async function main(): Promise<string[]> {
  const fh = await startFleethub();
  const failures: string[] = [];
  try {
    const pgPort = await postgresPort(fh.pgDir);
    const events: Event[] = [];
    const acknowledged = new Set<string>();
    const refusedWrites = new Set<string>();
    let running = true;

    const worker = async (w: number) => {
      for (let n = 0; running; n++) {
        const identifier = `outage-${w}-${n}`;
        const at = Date.now();
        try {
          const res = await fh.api('POST', '/api/orgs/ops/products/p/devices', { identifier });
          const body: unknown = await res.json().catch(() => null);
          events.push({
            at,
            done: Date.now(),
            kind: 'write',
            status: res.status,
            contract: res.status !== 503 || isContract503(body),
          });
          if (res.status === 201) acknowledged.add(identifier);
          else refusedWrites.add(identifier);
        } catch {
          events.push({ at, done: Date.now(), kind: 'write', status: 0, contract: false });
          refusedWrites.add(identifier);
        }
        const readAt = Date.now();
        try {
          const res = await fh.api('GET', '/api/orgs/ops/products/p/devices?pagination[page_size]=5');
          const body: unknown = await res.json().catch(() => null);
          events.push({
            at: readAt,
            done: Date.now(),
            kind: 'read',
            status: res.status,
            contract: res.status !== 503 || isContract503(body),
          });
        } catch {
          events.push({ at: readAt, done: Date.now(), kind: 'read', status: 0, contract: false });
        }
      }
    };
    const load = Promise.all(Array.from({ length: WORKERS }, (_, w) => worker(w)));

    await sleep(WARMUP_MS);
    const stopAt = Date.now();
    await stopPostgres(fh.pgDir);
    const stoppedAt = Date.now();
    await sleep(2_000);
    const readyDuring = (await fetch(`${fh.url}/readyz`)).status;
    await sleep(Math.max(0, OUTAGE_MS - 2_000));
    const restartAt = Date.now();
    await startPostgres(fh.pgDir, pgPort);
    const restartedAt = Date.now();
    let readyAgainAt: number | null = null;
    while (readyAgainAt === null && Date.now() - restartedAt < 30_000) {
      if ((await fetch(`${fh.url}/readyz`)).status === 200) readyAgainAt = Date.now();
      else await sleep(100);
    }
    await sleep(AFTER_MS);
    running = false;
    await load;

    const present = await deviceIdentifiers(fh.api);
    const lost = [...acknowledged].filter((id) => !present.has(id));
    const first503 = events
      .filter((e) => e.done >= stopAt && e.status === 503)
      .sort((a, b) => a.done - b.done)[0];
    const firstOkAfter = events
      .filter((e) => e.kind === 'write' && e.at >= restartedAt && e.status === 201)
      .sort((a, b) => a.done - b.done)[0];
    const during = events.filter((e) => e.at >= stoppedAt + 1_000 && e.done <= restartAt);
    const latencies = during.map((e) => e.done - e.at);
    const result = {
      workers: WORKERS,
      requests: events.length,
      acknowledgedWrites: acknowledged.size,
      lostAcknowledgedWrites: lost.length,
      refusedWritesThatCommitted: [...refusedWrites].filter((id) => present.has(id)).length,
      first503AfterStopMs: first503 ? first503.done - stopAt : null,
      pgStopTookMs: stoppedAt - stopAt,
      readyzDuringOutage: readyDuring,
      statusesDuringOutage: statusCounts(during.map((e) => e.status)),
      outageLatencyP50Ms: percentile(latencies, 50),
      outageLatencyP99Ms: percentile(latencies, 99),
      nonContract503: events.filter((e) => e.status === 503 && !e.contract).length,
      server5xxOtherThan503: events.filter((e) => e.status >= 500 && e.status !== 503).length,
      transportErrors: events.filter((e) => e.status === 0).length,
      readyzBackAfterRestartMs: readyAgainAt === null ? null : readyAgainAt - restartedAt,
      firstWriteOkAfterRestartMs: firstOkAfter ? firstOkAfter.done - restartedAt : null,
      statusesOverall: statusCounts(events.map((e) => e.status)),
    };
    print(JSON.stringify(result, null, 2));

    if (lost.length > 0)
      failures.push(`${lost.length} acknowledged writes are missing: ${lost.slice(0, 5).join(', ')}`);
    if (!first503 || first503.done - stopAt > DETECT_LIMIT_MS)
      failures.push('no 503 within the bound after PostgreSQL stopped');
    if (readyDuring !== 503) failures.push(`/readyz answered ${readyDuring} during the outage`);
    if (result.nonContract503 > 0) failures.push('503 without the contract body');
    if (result.server5xxOtherThan503 > 0) failures.push('5xx other than 503');
    if (result.transportErrors > 0) failures.push('requests failed without an HTTP answer');
    if (during.some((e) => e.status !== 503))
      failures.push(`answers other than 503 during the outage: ${result.statusesDuringOutage}`);
    if (result.firstWriteOkAfterRestartMs === null || result.firstWriteOkAfterRestartMs > RECOVERY_LIMIT_MS) {
      failures.push('no successful write within the bound after PostgreSQL restarted');
    }
    if (failures.length > 0) {
      const unexpected = fh
        .output()
        .split('\n')
        .filter((line) => line.includes('unexpected error'));
      if (unexpected.length > 0) process.stderr.write(`${unexpected.slice(0, 3).join('\n')}\n`);
    }

    await writeSection(
      'docs/operations.md',
      'check:outage',
      `### Database outage: observed (\`npm run check:outage\`, ${new Date().toISOString().slice(0, 10)})

${WORKERS} clients each alternating a device create and a device list; PostgreSQL stopped with \`pg_ctl stop -m fast\`
after ${WARMUP_MS / 1000} s of load, restarted ${OUTAGE_MS / 1000} s later.

| Measure | Observed |
|---|---|
| Requests in the run | ${result.requests} (${result.statusesOverall}) |
| First 503 (contract body) after the stop began | ${result.first503AfterStopMs} ms (\`pg_ctl stop\` itself took ${result.pgStopTookMs} ms) |
| \`/readyz\` during the outage | ${result.readyzDuringOutage} |
| Answers during the outage | ${result.statusesDuringOutage} (p50 ${result.outageLatencyP50Ms} ms, p99 ${result.outageLatencyP99Ms} ms) |
| 5xx other than 503 / 503 without the contract body / no HTTP answer | ${result.server5xxOtherThan503} / ${result.nonContract503} / ${result.transportErrors} |
| \`/readyz\` 200 again after PostgreSQL was back | ${result.readyzBackAfterRestartMs} ms |
| First successful write after PostgreSQL was back | ${result.firstWriteOkAfterRestartMs} ms |
| Acknowledged writes / missing afterwards | ${result.acknowledgedWrites} / ${result.lostAcknowledgedWrites} |
| Writes answered 503 that were committed anyway (commit acknowledged by PostgreSQL, answer lost) | ${result.refusedWritesThatCommitted} |
| Result | ${failures.length === 0 ? 'pass' : `FAIL: ${failures.join('; ')}`} |`,
    );
  } catch (err) {
    failures.push(err instanceof Error ? (err.stack ?? err.message) : String(err));
  } finally {
    await fh.cleanup();
  }
  return failures;
}

runCheck('check:outage', main);
