/**
 * The `rollout` scenario (issue #15, item 6), run by bench/deployments.ts (`npm run bench`). This file measures only
 * what the devices and the database show; it invents no number.
 *
 *  1. N simulated devices (the bench/sockets.ts client processes) registered in the product and connected,
 *     running `update.firmware` (match the group's platform, architecture and version condition) and applying
 *     updates as `update` says (apply time, fail share, seed);
 *  2. `startRollout()` is awaited (it creates the active deployment group); from its call, every SAMPLE_MS: the
 *     group's pending updates (the server's updates in flight, the orchestrator's claims) and the devices applying
 *     one (the client processes' last reports, summed); and whether the group paused itself;
 *  3. until every device has installed or failed the update and the database shows each installed one on
 *     `targetUuid` — or, with `untilPaused`, until the group paused itself and its updates in flight ended — (or
 *     the timeout): the time to the whole fleet on the new release, the most in flight, the update frames per
 *     device (the goal: exactly one each), downloads, bytes, completions, failures, devices in the penalty box,
 *     and when the group paused with how many updates were in flight then.
 */
import type { Client } from 'pg';
import type { SimulatorOptions } from '../src/cli/simulator';
import { mergeUpdateStats } from '../src/cli/simulated-update';
import { describeLoad, type LoadWindow, treeCpuSeconds, watchLoad } from './machine-load';
import type { Log } from './seed';
import { PER_WORKER, startWorker, stopWorker, waitFor, type Worker, type WorkerBase } from './sockets';

const SAMPLE_MS = 50;

export interface RolloutScenarioOptions {
  url: string;
  db: Client;
  orgId: string;
  productId: string;
  /** A shared secret of the product. */
  key: string;
  secret: string;
  devices: number;
  /** How the devices apply updates, and the firmware they start on. */
  update: Pick<SimulatorOptions, 'applyMs' | 'applyJitter' | 'failShare' | 'seed' | 'firmware'>;
  /** The uuid of the firmware the rollout installs. */
  targetUuid: string;
  /** Starts the rollout (the deployment API calls); to be written by the harness. */
  startRollout: () => Promise<void>;
  /**
   * Called once the fleet has joined, before the rollout's clock starts (e.g. bench/console.ts creates the group
   * inactive and opens its page in a browser here; `startRollout` then turns it on).
   */
  beforeStart?: () => Promise<void>;
  log: Log;
  /** Give up this long after the rollout started (default 120 s). */
  timeoutMs?: number;
  /** Done when the group has paused itself and has no update in flight (instead of: every device settled). */
  untilPaused?: boolean;
  /** The server process, and PostgreSQL's postmaster (null: not on this machine), for the CPU they spend. */
  serverPid: number;
  databaseRoot: number | null;
}

/**
 * CPU seconds spent from the rollout's start until it settled, by the server, the simulated devices' client
 * processes, and PostgreSQL (every process of its postmaster: when other databases of that server are busy, they
 * count too — the embedded default has none); and the machine meanwhile.
 */
export interface RolloutCpu {
  server_s: number;
  devices_s: number;
  database_s: number | null;
  machine: LoadWindow;
}

export interface RolloutResults {
  devices: number;
  joined: number;
  all_joined_ms: number | null;
  fail_share: number;
  apply_ms: number | null;
  /** From calling startRollout until every device installed or failed and the database agrees; null: timed out. */
  all_settled_ms: number | null;
  /** Devices the database shows on the target firmware at the end. */
  on_target: number;
  /** The most pending updates of the product seen at once (sampled every SAMPLE_MS). */
  max_in_flight_server: number;
  /** The most devices applying at once, summed over the client processes' last reports (sampled). */
  max_applying_clients: number;
  update_frames: number;
  frames_per_device: Record<string, number>;
  max_frames_per_device: number;
  downloads: number;
  bytes: number;
  completions: number;
  failures: number;
  /** Devices of the product in the penalty box (`updates_blocked_until` ahead) at the end. */
  blocked: number;
  /** The release's failed updates as the group counts them at the end. */
  release_failed: number;
  /** From calling startRollout until the group's `paused_at`; null: it did not pause. */
  paused_after_ms: number | null;
  paused_reason: string | null;
  /** The group's updates in flight at the first sample that saw it paused (within SAMPLE_MS of the pause). */
  in_flight_at_pause: number | null;
  /** Update frames the devices received after that sample (0: no claim after the pause). */
  frames_after_pause: number | null;
  cpu: RolloutCpu;
}

export async function rolloutScenario(o: RolloutScenarioOptions): Promise<RolloutResults> {
  const prefix = `ro${Date.now().toString(36)}-`;
  const width = Math.max(5, String(o.devices).length);
  await o.db.query(
    `INSERT INTO devices (org_id, product_id, identifier)
     SELECT $1, $2, $3 || lpad(g::text, $4, '0') FROM generate_series(1, $5::int) AS g`,
    [o.orgId, o.productId, prefix, width, o.devices],
  );
  const workers: Worker[] = [];
  const count = Math.ceil(o.devices / PER_WORKER);
  let sampler: NodeJS.Timeout | null = null;
  try {
    for (let i = 0; i < count; i++) workers.push(startWorker(i));
    const base: WorkerBase = { url: o.url, key: o.key, secret: o.secret, prefix, width, update: o.update };
    await Promise.all(workers.map((w) => w.send('init', base)));
    const shares = workers.map((w, i) => ({
      w,
      from: i * PER_WORKER,
      count: Math.max(0, Math.min(PER_WORKER, o.devices - i * PER_WORKER)),
    }));
    for (const s of shares) {
      s.w.target = s.count;
      s.w.reachedAt = null;
    }
    const connectStarted = Date.now();
    await Promise.all(shares.map((s) => s.w.send('connect', { from: s.from, count: s.count })));
    const joinedIn = await waitFor(() => workers.every((w) => w.reachedAt !== null), 180_000, 50);
    const joined = workers.reduce((a, w) => a + w.connected, 0);
    o.log(`  rollout: ${joined}/${o.devices} devices joined in ${joinedIn ?? '(timed out)'} ms`);

    let maxServer = 0;
    let maxClients = 0;
    let sampling = false;
    let started = 0;
    let pause: { after_ms: number; in_flight: number; frames: number; reason: string | null } | null = null;
    const frames = async () =>
      (await Promise.all(workers.map((w) => w.send('updateStats')))).reduce((a, s) => a + s.update_frames, 0);
    const sample = async () => {
      if (sampling) return;
      sampling = true;
      try {
        const { rows } = await o.db.query<{ n: number; paused_ms: string | null; reason: string | null }>(
          `SELECT (SELECT count(*)::int FROM pending_updates p WHERE p.deployment_group_id = g.id) AS n,
                  (extract(epoch FROM g.paused_at) * 1000)::bigint::text AS paused_ms, g.paused_reason AS reason
             FROM deployment_groups g WHERE g.product_id = $1`,
          [o.productId],
        );
        const row = rows[0];
        if (!row) return;
        maxServer = Math.max(maxServer, row.n);
        maxClients = Math.max(
          maxClients,
          workers.reduce((a, w) => a + w.applying, 0),
        );
        if (row.paused_ms !== null && pause === null) {
          pause = {
            after_ms: Number(row.paused_ms) - started,
            in_flight: row.n,
            frames: 0,
            reason: row.reason,
          };
          pause.frames = await frames();
        }
      } finally {
        sampling = false;
      }
    };
    const inFlight = async () =>
      (
        await o.db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pending_updates p JOIN deployment_groups g ON g.id = p.deployment_group_id
            WHERE g.product_id = $1`,
          [o.productId],
        )
      ).rows[0].n;
    const onTarget = async () =>
      (
        await o.db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM devices WHERE product_id = $1 AND firmware_metadata->>'uuid' = $2`,
          [o.productId, o.targetUuid],
        )
      ).rows[0].n;
    const stats = () => Promise.all(workers.map((w) => w.send('updateStats')));

    const workerPids = workers.map((w) => w.child.pid).filter((pid): pid is number => pid !== undefined);
    const cpuNow = () => ({
      server: treeCpuSeconds([o.serverPid]),
      devices: treeCpuSeconds(workerPids),
      database: o.databaseRoot === null ? null : treeCpuSeconds([o.databaseRoot]),
    });
    await o.beforeStart?.();
    const cpu0 = cpuNow();
    const load = watchLoad(() => [
      o.serverPid,
      ...workerPids,
      ...(o.databaseRoot === null ? [] : [o.databaseRoot]),
    ]);
    started = Date.now();
    sampler = setInterval(() => void sample().catch(() => undefined), SAMPLE_MS);
    await o.startRollout();
    const settledIn = await waitFor(
      async () => {
        if (o.untilPaused) return pause !== null && (await inFlight()) === 0;
        const all = await stats();
        const settled = all.reduce((a, s) => a + s.settled, 0);
        const completions = all.reduce((a, s) => a + s.completions, 0);
        return settled === o.devices && (await onTarget()) === completions;
      },
      o.timeoutMs ?? 120_000,
      250,
    );
    const allSettledMs = settledIn === null ? null : Date.now() - started;
    const cpu1 = cpuNow();
    const machine = load.stop();
    const seconds = (a: number, b: number) => Math.round((b - a) * 100) / 100;
    const cpu: RolloutCpu = {
      server_s: seconds(cpu0.server, cpu1.server),
      devices_s: seconds(cpu0.devices, cpu1.devices),
      database_s:
        cpu0.database === null || cpu1.database === null ? null : seconds(cpu0.database, cpu1.database),
      machine,
    };
    clearInterval(sampler);
    sampler = null;
    await sample();
    const final = mergeUpdateStats(await stats());
    const { rows: ends } = await o.db.query<{ blocked: number; failed: number }>(
      `SELECT (SELECT count(*)::int FROM devices WHERE product_id = $1 AND updates_blocked_until > now()) AS blocked,
              COALESCE((SELECT r.failed_count FROM deployment_groups g
                          JOIN deployment_releases r ON r.id = g.current_release_id WHERE g.product_id = $1), 0) AS failed`,
      [o.productId],
    );
    const paused = pause as {
      after_ms: number;
      in_flight: number;
      frames: number;
      reason: string | null;
    } | null;
    const results: RolloutResults = {
      devices: o.devices,
      joined,
      all_joined_ms:
        joinedIn === null
          ? null
          : Math.max(...workers.map((w) => w.reachedAt ?? connectStarted)) - connectStarted,
      fail_share: o.update.failShare ?? 0,
      apply_ms: o.update.applyMs ?? null,
      all_settled_ms: allSettledMs,
      on_target: await onTarget(),
      max_in_flight_server: maxServer,
      max_applying_clients: maxClients,
      update_frames: final.update_frames,
      frames_per_device: final.frames_per_device,
      max_frames_per_device: final.max_frames_per_device,
      downloads: final.downloads,
      bytes: final.bytes,
      completions: final.completions,
      failures: final.failures,
      blocked: ends[0].blocked,
      release_failed: ends[0].failed,
      paused_after_ms: paused?.after_ms ?? null,
      paused_reason: paused?.reason ?? null,
      in_flight_at_pause: paused?.in_flight ?? null,
      frames_after_pause: paused ? final.update_frames - paused.frames : null,
      cpu,
    };
    o.log(
      `  rollout: ${allSettledMs === null ? 'not settled in time' : `settled in ${allSettledMs} ms`}; ` +
        `${results.on_target}/${o.devices} on the target; at most ${maxServer} in flight (server), ` +
        `${maxClients} applying (devices); frames per device ${JSON.stringify(final.frames_per_device)}; ` +
        `${final.completions} installed, ${final.failures} failed, ${results.blocked} in the penalty box` +
        (paused ? `; paused after ${paused.after_ms} ms with ${paused.in_flight} in flight` : ''),
    );
    const perUpdate = (s: number | null) =>
      s === null || final.update_frames === 0 ? '–' : `${((1000 * s) / final.update_frames).toFixed(1)} ms`;
    o.log(
      `  rollout CPU per update: server ${perUpdate(cpu.server_s)}, devices ${perUpdate(cpu.devices_s)}, ` +
        `PostgreSQL ${perUpdate(cpu.database_s)}; ${describeLoad(machine)}`,
    );
    await Promise.all(workers.map((w) => w.send('stop')));
    return results;
  } finally {
    if (sampler) clearInterval(sampler);
    await Promise.all(workers.map(stopWorker));
  }
}
