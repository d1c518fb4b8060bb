/**
 * Deployment group scenarios (issue #15, item 6), run by bench.ts after the device sockets:
 *  - rollout: N connected simulated devices that install at once (apply time 0), a group of them created active
 *    with `concurrent_updates` C (bench/rollout.ts measures);
 *  - rollout with failures: the same with 5 % of the devices failing their update and a low `failure_threshold`:
 *    the failed devices go to the penalty box, the group pauses itself; measured until its updates in flight end;
 *  - membership: a group change over the seeded product (1,000,000 devices in the full run) through the API,
 *    timed, with the device list's latency measured at an evenly spaced rate while it runs (paced-load.ts).
 * Each rollout runs in a product of its own (`bench-rollout-<harness pid>-<n>`, removed afterwards) on a fresh server.
 */
import { randomBytes, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Client } from 'pg';
import type { buildSignedFw } from './fw';
import { startPacedLoad } from './paced-load';
import type { Measurement } from './report';
import { describeLoad } from './machine-load';
import { type RolloutResults, rolloutScenario } from './rollout';
import type { Log, SeedInfo } from './seed';
import { dropSocketProduct, type Goal } from './sockets';
import { request, type Started } from './processes';

/** The firmware the rollout devices start on: the bench firmware's platform and architecture (bench/fw.ts). */
const START_FIRMWARE = {
  uuid: '00000000-0000-4000-8000-00000000b001',
  version: '1.0.0',
  platform: 'rpi4',
  architecture: 'aarch64',
};
const GOAL_ROLLOUT_MS = 60_000;
const GOAL_MEMBERSHIP_MS = 10_000;
const GOAL_LIST_P99_MS = 100;

export interface RolloutRun {
  name: 'rollout' | 'rollout_failures';
  concurrent_updates: number;
  failure_threshold: number | null;
  results: RolloutResults | null;
  error: string | null;
}

export interface MembershipChange {
  change: string;
  status: number;
  /** The PATCH request's time: the group change and the recomputation commit in it. */
  ms: number;
  /** Devices in the group after the change. */
  members: number;
  /** The device list, page 1, measured while the change ran. */
  device_list: Measurement | null;
}

export interface DeploymentResults {
  rollouts: RolloutRun[];
  membership: {
    devices: number;
    /** The device list's offered load while each change ran (requests per second). */
    list_rate: number;
    changes: MembershipChange[];
    error: string | null;
  } | null;
}

export const rolloutProductName = (n: number) => `bench-rollout-${process.pid}-${n}`;

/** Removes a rollout product: its groups (their releases hold its firmware), then as a socket product. */
export async function dropRolloutProduct(db: Client, orgId: string, name: string): Promise<void> {
  await db.query(
    `DELETE FROM deployment_groups WHERE product_id IN (SELECT id FROM products WHERE org_id = $1 AND name = $2)`,
    [orgId, name],
  );
  await dropSocketProduct(db, orgId, name);
}

/** Rollout products of harness processes that are gone (an interrupted run). */
export async function dropStaleRolloutProducts(db: Client, orgId: string, log: Log): Promise<void> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT name FROM products WHERE org_id = $1 AND name LIKE 'bench-rollout-%'`,
    [orgId],
  );
  for (const { name } of rows) {
    const pid = Number(/^bench-rollout-(\d+)-\d+$/.exec(name)?.[1] ?? 0);
    if (pid !== 0 && readProc(pid)) continue;
    log(`  removing ${name}, left by an interrupted run`);
    await dropRolloutProduct(db, orgId, name);
  }
}

function readProc(pid: number): boolean {
  try {
    readFileSync(`/proc/${pid}/stat`);
    return true;
  } catch {
    return false;
  }
}

interface Api {
  call(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ status: number; json: unknown; text: string }>;
}

function api(server: Started, token: string): Api {
  return {
    call: (method, path, body) =>
      request(`${server.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        ...(body !== undefined && { body: JSON.stringify(body) }),
      }),
  };
}

/** Uploads a small signed firmware of `product` (bench/fw.ts: rpi4, aarch64); its uuid. */
async function uploadFirmware(
  server: Started,
  info: SeedInfo,
  product: string,
  version: string,
  build: typeof buildSignedFw,
  signingKey: KeyObject,
  benchData: string,
): Promise<string> {
  const fwPath = join(benchData, `bench-deploy-${process.pid}-${randomBytes(4).toString('hex')}.fw`);
  await build(fwPath, { product, version, size: 16 * 1024, privateKey: signingKey });
  const head = `--b\r\nContent-Disposition: form-data; name="firmware"; filename="d.fw"\r\nContent-Type: application/octet-stream\r\n\r\n`;
  const body = Buffer.concat([Buffer.from(head), readFileSync(fwPath), Buffer.from('\r\n--b--\r\n')]);
  await rm(fwPath, { force: true });
  const res = await request(
    `${server.url}/api/orgs/${encodeURIComponent(info.org)}/products/${encodeURIComponent(product)}/firmwares`,
    {
      method: 'POST',
      headers: {
        authorization: `Bearer ${info.token}`,
        'content-type': 'multipart/form-data; boundary=b',
        'content-length': String(body.length),
      },
      body,
    },
  );
  if (res.status !== 201) throw new Error(`upload firmware: ${res.status} ${res.text.slice(0, 200)}`);
  return (res.json as { data: { uuid: string } }).data.uuid;
}

export interface RolloutOptions {
  server: Started;
  info: SeedInfo;
  db: Client;
  log: Log;
  productName: string;
  devices: number;
  concurrentUpdates: number;
  /** Share of devices whose update fails (0: none). */
  failShare: number;
  /** The group's failure_threshold; null: NervesHub's default (50). With failures: the group pauses itself. */
  failureThreshold: number | null;
  buildSignedFw: typeof buildSignedFw;
  signingKey: KeyObject;
  benchData: string;
  /** PostgreSQL's postmaster when it runs on this machine. */
  databaseRoot: number | null;
  /**
   * Someone watching the rollout (bench/console.ts: the group's page in a browser). The group is then created
   * inactive once the fleet has joined, `watch` is awaited (the group's name given), and the rollout starts by
   * turning the group on: the page is open and steady before the first update is claimed.
   */
  watch?: (group: string) => Promise<void>;
}

/** The deployment group every rollout creates (in its own product). */
export const ROLLOUT_GROUP = 'bench';

/** One rollout in its own product: devices connect on 1.0.0, then the active group on 2.0.0 is created. */
export async function runRollout(o: RolloutOptions): Promise<RolloutResults> {
  const { info } = o;
  const http = api(o.server, info.token);
  const products = `/api/orgs/${encodeURIComponent(info.org)}/products`;
  const base = `${products}/${encodeURIComponent(o.productName)}`;
  let res = await http.call('POST', products, { name: o.productName });
  if (res.status !== 201) throw new Error(`create product: ${res.status} ${res.text.slice(0, 200)}`);
  const productId = (
    await o.db.query<{ id: string }>(`SELECT id FROM products WHERE org_id = $1 AND name = $2`, [
      info.orgId,
      o.productName,
    ])
  ).rows[0].id;
  res = await http.call('POST', `${base}/shared_secrets`);
  if (res.status !== 201) throw new Error(`create shared secret: ${res.status} ${res.text.slice(0, 200)}`);
  const { key, secret } = (res.json as { data: { key: string; secret: string } }).data;
  const target = await uploadFirmware(
    o.server,
    info,
    o.productName,
    '2.0.0',
    o.buildSignedFw,
    o.signingKey,
    o.benchData,
  );
  const createGroup = async (active: boolean) => {
    const created = await http.call('POST', `${base}/deployments`, {
      name: ROLLOUT_GROUP,
      firmware: target,
      conditions: { version: '~> 1.0', tags: [] },
      is_active: active,
      concurrent_updates: o.concurrentUpdates,
      ...(o.failureThreshold !== null && { failure_threshold: o.failureThreshold }),
    });
    if (created.status !== 201) {
      throw new Error(`create deployment group: ${created.status} ${created.text.slice(0, 300)}`);
    }
  };
  const { watch } = o;
  return rolloutScenario({
    url: o.server.url,
    db: o.db,
    orgId: info.orgId,
    productId,
    key,
    secret,
    devices: o.devices,
    update: {
      applyMs: 0,
      applyJitter: 0,
      failShare: o.failShare,
      seed: 'bench',
      firmware: { ...START_FIRMWARE, product: o.productName },
    },
    targetUuid: target,
    untilPaused: o.failureThreshold !== null,
    timeoutMs: 180_000,
    log: o.log,
    serverPid: o.server.child.pid ?? 0,
    databaseRoot: o.databaseRoot,
    ...(watch && {
      beforeStart: async () => {
        await createGroup(false);
        await watch(ROLLOUT_GROUP);
      },
    }),
    startRollout: async () => {
      if (!watch) return createGroup(true);
      const turned = await http.call('PATCH', `${base}/deployments/${ROLLOUT_GROUP}`, { state: 'on' });
      if (turned.status !== 200) {
        throw new Error(`turn the deployment group on: ${turned.status} ${turned.text.slice(0, 300)}`);
      }
    },
  });
}

export interface MembershipOptions {
  server: Started;
  info: SeedInfo;
  db: Client;
  log: Log;
  devices: number;
  /** Connections (at most) of the paced device-list load for the device list while a change runs. */
  connections: number;
  /**
   * The device list's offered load while a change runs, in requests per second (all connections together). A
   * fixed rate, as a dashboard or a CI job asks: a closed loop as fast as it can go would measure how the two
   * cores are shared between the load and the change, not whether the list stays quick while the change runs.
   */
  listRate: number;
  buildSignedFw: typeof buildSignedFw;
  signingKey: KeyObject;
  benchData: string;
}

/**
 * Membership recomputation over the seeded product: an inactive group `~> 1.0` (every device with firmware, two
 * thirds of the seed) is turned on (its devices join), then its condition narrowed to `~> 1.3` (most leave), then
 * turned off (its members stay: an inactive group keeps its devices, as NervesHub's does); each PATCH timed, the device list (page 1) measured at an evenly spaced rate while it runs.
 * The group and its firmware are removed at the end.
 */
export async function membershipScenario(o: MembershipOptions): Promise<MembershipChange[]> {
  const { info } = o;
  const http = api(o.server, info.token);
  const base = `/api/orgs/${encodeURIComponent(info.org)}/products/${encodeURIComponent(info.product)}`;
  const uuid = await uploadFirmware(
    o.server,
    info,
    info.product,
    `9.${Date.now()}.0`,
    o.buildSignedFw,
    o.signingKey,
    o.benchData,
  );
  const name = `bench-membership-${process.pid}`;
  // Each run leaves ~670,000 dead membership rows behind (its group is deleted at the end). In a database that
  // stays up, autovacuum reclaims them; the benchmark's starts and stops, and without this the next run's
  // recomputation walked ever more dead index entries (5.1 → 7.6 s over four runs) while autovacuum, when it
  // came, competed with the measurement for the cores.
  await o.db.query('VACUUM (ANALYZE) deployment_group_members');
  try {
    const created = await http.call('POST', `${base}/deployments`, {
      name,
      firmware: uuid,
      conditions: { version: '~> 1.0', tags: [] },
      is_active: false,
    });
    if (created.status !== 201)
      throw new Error(`create group: ${created.status} ${created.text.slice(0, 300)}`);
    const members = async () =>
      (
        await o.db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM deployment_group_members m JOIN deployment_groups g ON g.id = m.deployment_group_id
            WHERE g.product_id = $1 AND g.name = $2`,
          [info.productId, name],
        )
      ).rows[0].n;
    const changes: MembershipChange[] = [];
    const change = async (label: string, body: unknown) => {
      const list = startList(o.server, `${base}/devices`, info.token, o.connections, o.listRate);
      await new Promise((resolve) => setTimeout(resolve, 500));
      const t0 = performance.now();
      const res = await http.call('PATCH', `${base}/deployments/${name}`, body);
      const ms = Math.round(performance.now() - t0);
      const measured = await list.stop();
      const row: MembershipChange = {
        change: label,
        status: res.status,
        ms,
        members: await members(),
        device_list: measured,
      };
      o.log(
        `  membership: ${label}: ${res.status} in ${ms} ms, ${row.members} members; device list while it ran: ` +
          `${measured ? `p99 ${measured.latency_ms.p99} ms, ${measured.requests_per_s} req/s, non-2xx ${measured.non_2xx}` : 'none'}`,
      );
      changes.push(row);
    };
    await change('turned on: devices join (version ~> 1.0)', { is_active: true });
    await change('condition narrowed to ~> 1.3: devices leave', { conditions: { version: '~> 1.3' } });
    await change('turned off: members stay (as in NervesHub)', { is_active: false });
    return changes;
  } finally {
    await http.call('DELETE', `${base}/deployments/${name}`);
    await http.call('DELETE', `${base}/firmwares/${uuid}`);
  }
}

/** The device list at `rate` requests per second, evenly spaced (bench/paced-load.ts), until stopped. */
function startList(server: Started, path: string, token: string, connections: number, rate: number) {
  return startPacedLoad(server.url + path, { authorization: `Bearer ${token}` }, rate, connections);
}

/** The goals of issue #15, item 6, judged on what was measured. */
export function deploymentGoals(r: DeploymentResults | null, quick: boolean): Goal[] {
  if (!r) return [];
  const goals: Goal[] = [];
  const scale = quick ? ' (quick: not the 10,000 / 500 of the goal)' : '';
  const plain = r.rollouts.find((x) => x.name === 'rollout');
  if (plain) {
    const x = plain.results;
    const oneEach =
      x !== null &&
      Object.keys(x.frames_per_device).length === 1 &&
      x.frames_per_device['1'] === x.devices &&
      x.update_frames === x.devices;
    goals.push({
      goal: `rollout of ${n(x?.devices)} devices, concurrent_updates ${plain.concurrent_updates}: in flight never above ${plain.concurrent_updates}${scale}`,
      met: x !== null && x.max_in_flight_server <= plain.concurrent_updates,
      detail: x
        ? `at most ${x.max_in_flight_server} in flight (group's pending updates, sampled every 50 ms); ${x.max_applying_clients} applying (devices, upper bound)`
        : `failed: ${plain.error}`,
    });
    goals.push({
      goal: 'rollout: every device receives exactly one update frame',
      met: oneEach,
      detail: x
        ? `${x.update_frames} frames for ${x.devices} devices; frames per device ${JSON.stringify(x.frames_per_device)}`
        : `failed: ${plain.error}`,
    });
    goals.push({
      goal: `rollout: the whole fleet on the new release within ${GOAL_ROLLOUT_MS / 1000} s${scale}`,
      met:
        x !== null &&
        x.all_settled_ms !== null &&
        x.all_settled_ms <= GOAL_ROLLOUT_MS &&
        x.on_target === x.devices,
      detail: x
        ? `${x.on_target}/${x.devices} on the release in ${x.all_settled_ms === null ? '(not within the time limit)' : `${(x.all_settled_ms / 1000).toFixed(1)} s`}`
        : `failed: ${plain.error}`,
    });
  }
  const failing = r.rollouts.find((x) => x.name === 'rollout_failures');
  if (failing) {
    const x = failing.results;
    goals.push({
      goal: `rollout with ${x ? Math.round(x.fail_share * 100) : '?'} % failing devices, failure_threshold ${failing.failure_threshold}: failed devices in the penalty box, the group pauses itself`,
      met:
        x !== null &&
        x.paused_after_ms !== null &&
        x.blocked === x.failures &&
        x.failures > 0 &&
        x.frames_after_pause === 0 &&
        x.max_frames_per_device <= 1,
      detail: x
        ? `${x.failures} failed, ${x.blocked} in the penalty box, release failed_count ${x.release_failed}; ` +
          (x.paused_after_ms === null
            ? 'did NOT pause'
            : `paused ${(x.paused_after_ms / 1000).toFixed(1)} s after the start with ${x.in_flight_at_pause} in flight, ` +
              `${x.frames_after_pause} frames after; ${x.completions} installed before it stopped`)
        : `failed: ${failing.error}`,
    });
  }
  if (r.membership) {
    const m = r.membership;
    goals.push({
      goal: `membership recomputation for a group change over ${n(m.devices)} devices: under ${GOAL_MEMBERSHIP_MS / 1000} s`,
      met: m.changes.length > 0 && m.changes.every((c) => c.status === 200 && c.ms < GOAL_MEMBERSHIP_MS),
      detail:
        m.error !== null
          ? `failed: ${m.error}`
          : m.changes
              .map((c) => `${c.change}: ${(c.ms / 1000).toFixed(1)} s (${n(c.members)} members after)`)
              .join('; '),
    });
    goals.push({
      goal: `device list p99 under ${GOAL_LIST_P99_MS} ms while membership is recomputed`,
      met:
        m.changes.length > 0 &&
        m.changes.every(
          (c) =>
            c.device_list !== null &&
            c.device_list.latency_ms.p99 < GOAL_LIST_P99_MS &&
            c.device_list.non_2xx === 0,
        ),
      detail:
        m.error !== null
          ? `failed: ${m.error}`
          : m.changes
              .map((c) =>
                c.device_list
                  ? `${c.change.split(':')[0]}: p99 ${c.device_list.latency_ms.p99} ms (${c.device_list.requests_total} requests)`
                  : `${c.change.split(':')[0]}: no request completed`,
              )
              .join('; '),
    });
  }
  return goals;
}

/** "4.1 / 3.2 / 4.5 ms" (– for a part not measured). */
function cpuPerUpdate(x: RolloutResults): string {
  if (!x.cpu || x.update_frames === 0) return '–';
  const per = (seconds: number | null) =>
    seconds === null ? '–' : ((1000 * seconds) / x.update_frames).toFixed(1);
  return `${per(x.cpu.server_s)} / ${per(x.cpu.devices_s)} / ${per(x.cpu.database_s)} ms`;
}

const n = (x: number | null | undefined) => (typeof x === 'number' ? x.toLocaleString('en') : '–');

/** The deployment section of docs/benchmarks.md. */
export function renderDeployments(r: DeploymentResults, lines: string[]): void {
  lines.push('## Deployment groups');
  lines.push('');
  lines.push(
    'Rollouts: simulated devices (`src/cli/simulator.ts` in the client processes of `bench/sockets.ts`) connect on ' +
      'firmware 1.0.0 in a product of their own, then an active deployment group `~> 1.0` on 2.0.0 (16 KiB signed .fw) is ' +
      'created through the API on a fresh server; the devices download, check and install at once (apply time 0) and ' +
      'join again on 2.0.0. "In flight" is the group\'s pending updates (the orchestrator\'s claims), sampled every 50 ms ' +
      'from the database; update frames are counted by the devices.',
  );
  lines.push('');
  lines.push(
    '| Run | devices | concurrent_updates | failure_threshold | fail share | most in flight | frames per device | on the release | failed / in penalty box | time | paused | CPU per update: server / devices / PostgreSQL | machine |',
  );
  lines.push('| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | --- | ---: | --- |');
  for (const run of r.rollouts) {
    const x = run.results;
    if (!x) {
      lines.push(
        `| ${run.name} | failed: \`${(run.error ?? '').replace(/[`|]/g, "'")}\` | | | | | | | | | | | |`,
      );
      continue;
    }
    lines.push(
      `| ${run.name} | ${n(x.devices)} | ${run.concurrent_updates} | ${run.failure_threshold ?? '50 (default)'} | ${x.fail_share} | ` +
        `${x.max_in_flight_server} | ${JSON.stringify(x.frames_per_device).replace(/"/g, '')} | ${n(x.on_target)} | ` +
        `${x.failures} / ${x.blocked} | ${x.all_settled_ms === null ? 'not within the limit' : `${(x.all_settled_ms / 1000).toFixed(1)} s`} | ` +
        `${x.paused_after_ms === null ? 'no' : `after ${(x.paused_after_ms / 1000).toFixed(1)} s, ${x.in_flight_at_pause} in flight, ${x.frames_after_pause} frames after`} | ` +
        `${cpuPerUpdate(x)} | ${x.cpu ? describeLoad(x.cpu.machine) : '–'} |`,
    );
  }
  lines.push('');
  lines.push(
    '"time": from the group\'s creation request until every device installed or failed and the database shows the ' +
      'installed ones on the release; with failures, until the group paused itself and its updates in flight ended. ' +
      '"frames per device": how many devices received how many update frames ({1: N} = exactly one each). ' +
      '"CPU per update": CPU time from the start until settled, divided by the update frames sent, of the server ' +
      "process, the client processes holding the simulated devices, and every process of PostgreSQL's postmaster; " +
      'with 2 cores, their sum bounds the updates per second (2 s of CPU per second).',
  );
  lines.push('');
  if (r.membership) {
    const m = r.membership;
    lines.push(
      `Membership: a group change over the seeded product (${n(m.devices)} devices) through \`PATCH .../deployments/{name}\` ` +
        '(the change and the set-wise recomputation commit in that request), while a paced client reads the device list ' +
        `(page 1) at ${n(m.list_rate)} requests per second, evenly spaced, each latency counted from the request's due time ` +
        "(`bench/paced-load.ts`; autocannon's rate sends each second's requests as one burst).",
    );
    lines.push('');
    if (m.error) lines.push(`Failed: \`${m.error.replace(/`/g, "'")}\``, '');
    lines.push('| Change | status | time | members after | device list p50 / p99 / max ms | requests |');
    lines.push('| --- | ---: | ---: | ---: | ---: | ---: |');
    for (const c of m.changes) {
      const l = c.device_list;
      lines.push(
        `| ${c.change} | ${c.status} | ${(c.ms / 1000).toFixed(1)} s | ${n(c.members)} | ` +
          `${l ? `${l.latency_ms.p50} / ${l.latency_ms.p99} / ${l.latency_ms.max}` : '–'} | ${l ? n(l.requests_total) : 0} |`,
      );
    }
    lines.push('');
  }
}
