/**
 * Issue #16 part 4: the local firmware download path at fleet scale. One signed firmware (a stored resource of
 * `sizeMib` MiB) is uploaded through the API; its signed link (made with the server's own signer and key, the
 * link a device gets in its `update` message) is downloaded `count` times at once by `download-client.ts`, half
 * of the downloads stopping midway and resuming with `Range`. The same file behind the same link is served by the
 * floor (`floor-server.ts`: bare `node:http` + `fs.createReadStream`) and by a fresh fleethub process, one after
 * the other; meanwhile autocannon sends `GET /api/users/me` to the server under load at low concurrency, and the
 * server's RSS is sampled from /proc.
 */
import { spawn } from 'node:child_process';
import { createHash, type KeyObject, randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open, rm } from 'node:fs/promises';
import http from 'node:http';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import autocannon from 'autocannon';
import type { Client } from 'pg';
import { ServerKeyService } from '../src/device-auth/server-key.service';
import { DownloadLinkSigner } from '../src/gateway/download-links';
import type { DownloadClientResult, DownloadClientSpec } from './download-client';
import type { buildSignedFw } from './fw';
import { describeLoad, type LoadWindow } from './machine-load';
import { BUILD_DIR, sleep } from './paths';
import { procStat, request, type Started, stopProcess } from './processes';
import type { Log, SeedInfo } from './seed';
import type { Goal } from './sockets';

/** The goals of the issue. */
export const GOAL_RATIO = 0.8;
export const GOAL_RSS_GROWTH_MIB = 64;
/** Seconds of users/me load before the RSS baseline (see measureServer). */
const WARM_UP_SECONDS = 3;
export const GOAL_USERS_ME_P99_MS = 50;

/** Clients sending `GET /api/users/me` back to back while the downloads run. */
const USERS_ME_CONNECTIONS = 2;

export interface DownloadServerRun {
  client: DownloadClientResult;
  /** Bytes received ÷ wall time. */
  mib_per_s: number;
  rss_before_mib: number;
  rss_peak_mib: number;
  rss_after_mib: number;
  rss_growth_mib: number;
  /** The server process's CPU time over the downloads (100 = one core). */
  server_cpu_percent: number;
  users_me: {
    requests: number;
    p50_ms: number;
    p99_ms: number;
    max_ms: number;
    errors: number;
    non_2xx: number;
  };
  machine: LoadWindow;
  /**
   * fleethub only: the largest V8 heap spaces and external memory its `/metrics` reported (sampled every second
   * during the downloads), where RSS growth goes.
   */
  memory_mib?: { before: HeapFigures; peak: HeapFigures };
}

export interface HeapFigures {
  new_space: number;
  old_space: number;
  external: number;
  heap_total: number;
}

/** fleethub's heap spaces and external memory from its `/metrics` (prom-client's default metrics). */
async function heapFigures(server: Started): Promise<HeapFigures | null> {
  const text = (await request(`${server.url}/metrics`).catch(() => null))?.text;
  if (!text) return null;
  const value = (pattern: RegExp) => mib(Number(pattern.exec(text)?.[1] ?? 0));
  return {
    new_space: value(/^nodejs_heap_space_size_total_bytes\{space="new"\} (\d+)/m),
    old_space: value(/^nodejs_heap_space_size_total_bytes\{space="old"\} (\d+)/m),
    external: value(/^nodejs_external_memory_bytes (\d+)/m),
    heap_total: value(/^nodejs_heap_size_total_bytes (\d+)/m),
  };
}

export interface DownloadResults {
  count: number;
  size_mib: number;
  /** The .fw file's size (the resource plus the archive's signature and meta.conf). */
  file_bytes: number;
  /** The file's SHA-256 equals the one fleethub recorded at upload. */
  sha256_matches_server: boolean;
  floor: DownloadServerRun | null;
  fleethub: DownloadServerRun | null;
  ratio_to_floor: number | null;
  error: string | null;
}

export interface DownloadsOptions {
  info: SeedInfo;
  db: Client;
  log: Log;
  startFleethub: (name: string) => Promise<Started>;
  /** The floor, with these variables added to its environment; null: fleethub only (`--no-floor`, experiments). */
  startFloor: ((env: Record<string, string>) => Promise<Started>) | null;
  /** fleethub's FLEETHUB_DATA_DIR (the secret key, the firmware files). */
  serverDataDir: string;
  benchData: string;
  buildSignedFw: typeof buildSignedFw;
  signingKey: KeyObject;
  watchLoad: () => { stop(): LoadWindow };
  count: number;
  sizeMib: number;
}

const mib = (bytes: number) => Number((bytes / 1024 / 1024).toFixed(1));

async function sha256Of(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Uploads the .fw at `path` through the API, streamed; its uuid. */
async function upload(server: Started, info: SeedInfo, path: string, size: number): Promise<string> {
  const boundary = `----bench${randomBytes(8).toString('hex')}`;
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="firmware"; filename="download.fw"\r\n` +
      `Content-Type: application/octet-stream\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  const body = new PassThrough();
  body.write(head);
  const file = createReadStream(path);
  file.on('end', () => body.end(tail));
  file.pipe(body, { end: false });
  const res = await request(
    `${server.url}/api/orgs/${encodeURIComponent(info.org)}/products/${encodeURIComponent(info.product)}/firmwares`,
    {
      method: 'POST',
      headers: {
        authorization: `Bearer ${info.token}`,
        'content-type': `multipart/form-data; boundary=${boundary}`,
        'content-length': String(head.length + size + tail.length),
      },
      body,
    },
  );
  if (res.status !== 201) throw new Error(`upload firmware: ${res.status} ${res.text.slice(0, 200)}`);
  return (res.json as { data: { uuid: string } }).data.uuid;
}

/** Runs download-client.js; its result. */
function runClient(spec: DownloadClientSpec): Promise<DownloadClientResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [join(BUILD_DIR, 'bench/download-client.js'), JSON.stringify(spec)],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.on('exit', (code) => {
      if (code === 0) resolve(JSON.parse(out) as DownloadClientResult);
      else reject(new Error(`download client exited (${code}): ${err.slice(-500)}`));
    });
  });
}

/** One GET, its body as bytes. */
function getBytes(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { headers }, (res) => {
        const parts: Buffer[] = [];
        res.on('data', (chunk: Buffer) => parts.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts) }),
        );
      })
      .on('error', reject);
  });
}

/** What the contract fixes, before measuring: a range (206, Content-Range, the file's bytes), a forged link (403). */
async function checkServer(label: string, url: string, size: number, head: Buffer): Promise<void> {
  const ranged = await getBytes(url, { range: `bytes=0-${head.length - 1}` });
  const forged = await getBytes(url.replace(/signature=[^&]+/, 'signature=AAAA'));
  if (
    ranged.status !== 206 ||
    ranged.headers['content-range'] !== `bytes 0-${head.length - 1}/${size}` ||
    !ranged.body.equals(head) ||
    forged.status !== 403
  ) {
    throw new Error(
      `${label}: range answered ${ranged.status} ${ranged.headers['content-range']} (${ranged.body.length} bytes), forged link ${forged.status}`,
    );
  }
}

async function measureServer(
  label: string,
  server: Started,
  o: DownloadsOptions,
  spec: DownloadClientSpec,
): Promise<DownloadServerRun> {
  const pid = server.child.pid;
  // Warm-up: the download path's code loaded, the file in the page cache, and the API's own load (users/me, as
  // measured below) for a few seconds, so that the young generation it grows to anyway is in the baseline: the
  // growth measured is what the downloads add to a server that has been serving.
  await runClient({ ...spec, count: 4, hashEvery: 1 });
  await new Promise<void>((resolve, reject) =>
    autocannon(
      {
        url: `${server.url}/api/users/me`,
        connections: USERS_ME_CONNECTIONS,
        duration: WARM_UP_SECONDS,
        headers: { authorization: `Bearer ${o.info.token}` },
      },
      (err: Error | null) => (err ? reject(err) : resolve()),
    ),
  );
  // fleethub's heap spaces before and at their largest (sampled every second): where its RSS growth goes.
  const heapBefore = label === 'fleethub' ? await heapFigures(server) : null;
  await sleep(1000);
  const before = procStat(pid);
  let peak = before.rss;
  const sampler = setInterval(() => {
    peak = Math.max(peak, procStat(pid).rss);
  }, 50);
  const window = o.watchLoad();
  let stopCannon = () => {};
  const cannon = new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(
      {
        url: `${server.url}/api/users/me`,
        connections: USERS_ME_CONNECTIONS,
        duration: 3600,
        timeout: 30,
        headers: { authorization: `Bearer ${o.info.token}` },
      },
      (err: Error | null, result) => (err ? reject(err) : resolve(result)),
    );
    stopCannon = () => instance.stop();
  });
  const heapPeak: HeapFigures = { new_space: 0, old_space: 0, external: 0, heap_total: 0 };
  const scrape = async () => {
    const now = await heapFigures(server);
    if (now)
      for (const k of Object.keys(heapPeak) as (keyof HeapFigures)[])
        heapPeak[k] = Math.max(heapPeak[k], now[k]);
  };
  const memory = heapBefore && { before: heapBefore, peak: heapPeak };
  const scraper = memory ? setInterval(() => void scrape(), 1000) : undefined;
  const started = Date.now();
  const client = await runClient(spec).finally(() => {
    stopCannon();
    clearInterval(scraper);
  });
  const seconds = (Date.now() - started) / 1000;
  const users = await cannon;
  clearInterval(sampler);
  const machine = window.stop();
  const after = procStat(pid);
  peak = Math.max(peak, after.rss);
  const run: DownloadServerRun = {
    client,
    mib_per_s: Number((client.bytes / 1024 / 1024 / (client.wall_ms / 1000)).toFixed(1)),
    rss_before_mib: mib(before.rss),
    rss_peak_mib: mib(peak),
    rss_after_mib: mib(after.rss),
    rss_growth_mib: mib(peak - before.rss),
    server_cpu_percent: Math.round((100 * (after.cpuSeconds - before.cpuSeconds)) / seconds),
    users_me: {
      requests: users.requests.total,
      p50_ms: users.latency.p50,
      p99_ms: users.latency.p99,
      max_ms: users.latency.max,
      errors: users.errors + users.timeouts,
      non_2xx: users.non2xx,
    },
    machine,
    ...(memory && { memory_mib: memory }),
  };
  o.log(
    `  ${label.padEnd(8)} ${client.completed}/${client.count} complete (${client.resumed} resumed, ${client.hashed} hashed, ` +
      `${client.hash_mismatches} mismatches, failures ${JSON.stringify(client.failures)}) in ${(client.wall_ms / 1000).toFixed(1)} s: ` +
      `${run.mib_per_s} MiB/s; RSS ${run.rss_before_mib} → peak ${run.rss_peak_mib} MiB (+${run.rss_growth_mib}); ` +
      `cpu ${run.server_cpu_percent}%, client cpu ${client.client_cpu_seconds} s; users/me p50 ${run.users_me.p50_ms} ms ` +
      `p99 ${run.users_me.p99_ms} ms (${run.users_me.requests} requests, ${run.users_me.errors} errors, ${run.users_me.non_2xx} non-2xx); ` +
      `${memory ? `heap/external (MiB) before ${JSON.stringify(memory.before)}, max ${JSON.stringify(memory.peak)}; ` : ''}${describeLoad(machine)}`,
  );
  return run;
}

export async function downloadsScenario(o: DownloadsOptions): Promise<DownloadResults> {
  const result: DownloadResults = {
    count: o.count,
    size_mib: o.sizeMib,
    file_bytes: 0,
    sha256_matches_server: false,
    floor: null,
    fleethub: null,
    ratio_to_floor: null,
    error: null,
  };
  const fwPath = join(o.benchData, `bench-download-${process.pid}.fw`);
  let fleethub: Started | undefined;
  let floor: Started | undefined;
  let uuid: string | undefined;
  try {
    const built = await o.buildSignedFw(fwPath, {
      product: o.info.product,
      version: `9.${Date.now()}.1`,
      size: o.sizeMib * 1024 * 1024,
      privateKey: o.signingKey,
    });
    result.file_bytes = built.size;
    const sha256 = await sha256Of(fwPath);
    fleethub = await o.startFleethub('fleethub-downloads');
    uuid = await upload(fleethub, o.info, fwPath, built.size);
    const {
      rows: [row],
    } = await o.db.query<{ id: string; storage_key: string; sha256: string }>(
      `SELECT id, storage_key, sha256 FROM firmwares WHERE product_id = $1 AND uuid = $2`,
      [o.info.productId, uuid],
    );
    result.sha256_matches_server = row.sha256 === sha256;
    // The link a device gets: the server's own signer, with the key it derives from its secret.
    const keys = new ServerKeyService({ secretKey: null, dataDir: o.serverDataDir });
    await keys.load();
    const linkKey = keys.subkey('sign-download-urls');
    // The file name is the firmware's uuid and its tool's extension (the storage key has a random part of its own).
    const link = new DownloadLinkSigner(linkKey, '').url(row.id, `${uuid}.fw`);
    floor = await o.startFloor?.({
      FLOOR_DOWNLOAD_LINK_KEY: linkKey.toString('hex'),
      FLOOR_FIRMWARE_DIR: join(o.serverDataDir, 'firmware'),
    });
    const head = Buffer.alloc(100);
    const file = await open(fwPath);
    await file.read(head, 0, head.length, 0).finally(() => file.close());
    if (floor) await checkServer('floor', floor.url + link, built.size, head);
    await checkServer('fleethub', fleethub.url + link, built.size, head);
    const spec = (server: Started): DownloadClientSpec => ({
      url: server.url + link,
      count: o.count,
      size: built.size,
      sha256,
      seed: 16,
      hashEvery: 100,
    });
    if (floor) {
      result.floor = await measureServer('floor', floor, o, spec(floor));
      await stopProcess(floor.child);
      floor = undefined;
    }
    result.fleethub = await measureServer('fleethub', fleethub, o, spec(fleethub));
    if (result.floor) {
      result.ratio_to_floor = Number((result.fleethub.mib_per_s / result.floor.mib_per_s).toFixed(2));
    }
  } catch (err) {
    o.log(`  downloads failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    result.error = (err instanceof Error ? err.message : String(err)).slice(0, 500);
  } finally {
    if (floor) await stopProcess(floor.child);
    if (fleethub && uuid) {
      await request(
        `${fleethub.url}/api/orgs/${encodeURIComponent(o.info.org)}/products/${encodeURIComponent(o.info.product)}/firmwares/${uuid}`,
        { method: 'DELETE', headers: { authorization: `Bearer ${o.info.token}` } },
      ).catch(() => undefined);
    }
    if (fleethub) await stopProcess(fleethub.child);
    await rm(fwPath, { force: true });
  }
  return result;
}

const correct = (run: DownloadServerRun | null) =>
  run !== null &&
  run.client.completed === run.client.count &&
  run.client.hash_mismatches === 0 &&
  Object.keys(run.client.failures).length === 0;

export function downloadGoals(r: DownloadResults | null): Goal[] {
  if (!r) return [];
  const scale = r.count === 1000 && r.size_mib === 64 ? '' : " (not the goal's 1,000 × 64 MiB)";
  const what = `${r.count.toLocaleString('en')} concurrent downloads of a ${r.size_mib} MiB firmware`;
  const f = r.fleethub;
  const failed = `failed: ${r.error}`;
  return [
    {
      goal: `${what}, half resumed with Range: every download complete, the sampled ones with the file's SHA-256, on both servers`,
      met: correct(r.fleethub) && correct(r.floor) && r.sha256_matches_server,
      detail:
        f && r.floor
          ? [r.floor, f]
              .map(
                (x, i) =>
                  `${i ? 'fleethub' : 'floor'} ${x.client.completed}/${x.client.count} (${x.client.resumed} resumed, ` +
                  `${x.client.hashed - x.client.hash_mismatches}/${x.client.hashed} hashes match)`,
              )
              .join('; ')
          : failed,
    },
    {
      goal: `${what}: aggregate throughput ≥ ${GOAL_RATIO} × floor (bare node:http + fs.createReadStream)${scale}`,
      met: r.ratio_to_floor !== null && r.ratio_to_floor >= GOAL_RATIO,
      detail:
        f && r.floor
          ? `fleethub ${f.mib_per_s} MiB/s, floor ${r.floor.mib_per_s} MiB/s: **${r.ratio_to_floor}**`
          : failed,
    },
    {
      goal: `${what}: server RSS growth < ${GOAL_RSS_GROWTH_MIB} MiB${scale}`,
      met: f !== null && f.rss_growth_mib < GOAL_RSS_GROWTH_MIB,
      detail: f
        ? `${f.rss_before_mib} → peak ${f.rss_peak_mib} MiB (+${f.rss_growth_mib}); the floor +${r.floor?.rss_growth_mib ?? '–'}`
        : failed,
    },
    {
      goal: `GET /api/users/me p99 < ${GOAL_USERS_ME_P99_MS} ms while the downloads run${scale}`,
      met:
        f !== null &&
        f.users_me.p99_ms < GOAL_USERS_ME_P99_MS &&
        f.users_me.non_2xx === 0 &&
        f.users_me.errors === 0,
      detail: f
        ? `p99 ${f.users_me.p99_ms} ms (p50 ${f.users_me.p50_ms}, max ${f.users_me.max_ms}; ${f.users_me.requests} requests at ` +
          `${USERS_ME_CONNECTIONS} connections, ${f.users_me.errors} errors, ${f.users_me.non_2xx} non-2xx)`
        : failed,
    },
  ];
}

export function renderDownloads(r: DownloadResults, lines: string[]): void {
  lines.push('## Firmware downloads (signed local links)');
  lines.push('');
  lines.push(
    `${r.count.toLocaleString('en')} downloads started at once of one signed .fw (${r.size_mib} MiB resource, ` +
      `${r.file_bytes.toLocaleString('en')} bytes) through the link a device gets in its \`update\` message ` +
      "(the server's own signer and key), each on its own connection, by one client process (`bench/download-client.ts`, " +
      'bytes counted and dropped); every second download stops at a seeded point between 10 % and 90 % of the file and ' +
      'resumes with `Range: bytes=<received>-` (206 and its `Content-Range` checked); one in 100 is hashed and compared ' +
      "with the file's SHA-256. The floor (`bench/floor-server.ts`: bare `node:http`, the link's signature, the storage " +
      'key by id, `fs.createReadStream`) serves the same file behind the same link, then a fresh fleethub process does. ' +
      `Meanwhile autocannon sends \`GET /api/users/me\` to the server under load (${USERS_ME_CONNECTIONS} connections, ` +
      'back to back), and its RSS is sampled every 50 ms from /proc (growth: the peak minus the RSS just before, after ' +
      `a warm-up of 4 downloads and ${WARM_UP_SECONDS} s of the users/me load).`,
  );
  lines.push('');
  if (r.error) lines.push(`Error: \`${r.error.replace(/`/g, "'")}\``, '');
  lines.push(
    '| Server | complete | time | throughput | ratio to floor | RSS before | peak | growth | server CPU | client CPU | users/me p50 / p99 / max | users/me requests | machine |',
  );
  lines.push('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |');
  for (const [label, x] of [
    ['floor', r.floor],
    ['fleethub', r.fleethub],
  ] as const) {
    if (!x) continue;
    lines.push(
      `| ${label} | ${x.client.completed}/${x.client.count} (${x.client.resumed} resumed) | ${(x.client.wall_ms / 1000).toFixed(1)} s | ` +
        `${x.mib_per_s} MiB/s | ${label === 'fleethub' ? `**${r.ratio_to_floor}**` : ''} | ${x.rss_before_mib} MiB | ${x.rss_peak_mib} MiB | ` +
        `${x.rss_growth_mib >= 0 ? '+' : ''}${x.rss_growth_mib} MiB | ${x.server_cpu_percent} % | ${x.client.client_cpu_seconds} s | ` +
        `${x.users_me.p50_ms} / ${x.users_me.p99_ms} / ${x.users_me.max_ms} ms | ${x.users_me.requests} (${x.users_me.errors} errors, ${x.users_me.non_2xx} non-2xx) | ` +
        `load ${x.machine.load_average_1m.start} → ${x.machine.load_average_1m.end}, others ${x.machine.cpu_percent.other} % |`,
    );
  }
  lines.push('');
  const memory = r.fleethub?.memory_mib;
  if (memory) {
    const pair = (k: keyof HeapFigures) => `${memory.before[k]} → ${memory.peak[k]} MiB`;
    lines.push(
      `fleethub's memory by its \`/metrics\` (before → largest during the downloads): V8 young generation ${pair('new_space')}, ` +
        `old generation ${pair('old_space')}, heap total ${pair('heap_total')}, external (buffers) ${pair('external')}.`,
    );
    lines.push('');
  }
  lines.push(
    'Throughput is all bytes received ÷ the time from the first request to the last byte. Client, server and ' +
      'PostgreSQL share the machine, so the client process takes CPU from the server: the ratio, measured under the ' +
      'same conditions, is the comparison.',
  );
  lines.push('');
}
