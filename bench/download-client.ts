/**
 * The `downloads` scenario's client, a child process of the harness (so that its reading does not delay the
 * harness's latency measurement): `count` downloads of one signed link started at once, each on its own
 * connection, the bytes counted and dropped. Every second download stops at a seeded point in the middle of the
 * file and resumes with `Range: bytes=<bytes received>-`, as a device does after losing its connection; a sample
 * of the downloads is hashed (SHA-256 over the first part and the resumed part) and compared with the file's.
 *
 * argv[2]: JSON `DownloadClientSpec`. Prints one line of JSON, `DownloadClientResult`, when all have ended.
 */
import { createHash, type Hash } from 'node:crypto';
import http from 'node:http';

export interface DownloadClientSpec {
  /** The signed link (absolute). */
  url: string;
  count: number;
  /** The file's size in bytes. */
  size: number;
  sha256: string;
  /** Seed of the stop points. */
  seed: number;
  /** Every `hashEvery`-th download is hashed (the first one included). */
  hashEvery: number;
}

export interface DownloadClientResult {
  count: number;
  completed: number;
  resumed: number;
  /** Bytes received, including those of downloads that failed. */
  bytes: number;
  /** First request sent → last download ended. */
  wall_ms: number;
  /** Per download (completed ones), start → last byte. */
  download_ms: { p50: number; p99: number; max: number };
  hashed: number;
  hash_mismatches: number;
  /** Downloads that failed, by reason (at most a few examples each). */
  failures: Record<string, number>;
  /** Connection attempts retried (refused or reset before the answer: the server's accept queue was full). */
  connect_retries: number;
  client_cpu_seconds: number;
}

/** mulberry32: a small seeded generator, so that both servers see the same stop points. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

class DownloadError extends Error {}

const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
let connectRetries = 0;

/**
 * One GET from `offset` (a `Range` when > 0): the bytes go to `onData`; ends early (destroying the request) when
 * `stopAt` bytes of the file have arrived. Resolves with the offset reached.
 */
function fetchPart(
  spec: DownloadClientSpec,
  offset: number,
  stopAt: number,
  onData: (chunk: Buffer) => void,
  attempt = 0,
): Promise<number> {
  return new Promise((resolve, reject) => {
    let position = offset;
    let answered = false;
    let stopped = false;
    const headers = offset > 0 ? { range: `bytes=${offset}-` } : {};
    const req = http.get(spec.url, { agent, headers }, (res) => {
      answered = true;
      const expected = offset > 0 ? 206 : 200;
      const range = `bytes ${offset}-${spec.size - 1}/${spec.size}`;
      if (
        res.statusCode !== expected ||
        Number(res.headers['content-length']) !== spec.size - offset ||
        (offset > 0 && res.headers['content-range'] !== range)
      ) {
        res.resume();
        reject(
          new DownloadError(
            `status ${res.statusCode}, content-length ${res.headers['content-length']}, content-range ${res.headers['content-range']}`,
          ),
        );
        return;
      }
      res.on('data', (chunk: Buffer) => {
        if (stopped) return;
        onData(chunk);
        position += chunk.length;
        if (position >= stopAt && position < spec.size) {
          stopped = true;
          req.destroy();
          resolve(position);
        }
      });
      res.on('end', () => {
        if (stopped) return;
        if (position === spec.size) resolve(position);
        else reject(new DownloadError(`ended at ${position} of ${spec.size}`));
      });
      res.on('error', (err) => {
        if (!stopped) reject(new DownloadError(`response: ${err.message}`));
      });
    });
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (stopped) return;
      const retriable = !answered && (err.code === 'ECONNRESET' || err.code === 'ECONNREFUSED');
      if (retriable && attempt < 5) {
        connectRetries += 1;
        setTimeout(() => {
          fetchPart(spec, offset, stopAt, onData, attempt + 1).then(resolve, reject);
        }, 200);
      } else reject(new DownloadError(`request: ${err.code ?? err.message}`));
    });
  });
}

async function main(): Promise<void> {
  const spec = JSON.parse(process.argv[2]) as DownloadClientSpec;
  const next = random(spec.seed);
  const plans = Array.from({ length: spec.count }, (_, i) => ({
    // Every second download stops between 10 % and 90 % of the file.
    stopAt: i % 2 === 1 ? Math.floor(spec.size * (0.1 + 0.8 * next())) : spec.size,
    hashed: i % spec.hashEvery === 0,
  }));
  const failures: Record<string, number> = {};
  const durations: number[] = [];
  let bytes = 0;
  let resumed = 0;
  let mismatches = 0;
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  await Promise.all(
    plans.map(async ({ stopAt, hashed }) => {
      const hash: Hash | null = hashed ? createHash('sha256') : null;
      const onData = (chunk: Buffer) => {
        bytes += chunk.length;
        hash?.update(chunk);
      };
      const begun = performance.now();
      try {
        let reached = await fetchPart(spec, 0, stopAt, onData);
        if (reached < spec.size) {
          resumed += 1;
          reached = await fetchPart(spec, reached, spec.size, onData);
        }
        durations.push(performance.now() - begun);
        if (hash && hash.digest('hex') !== spec.sha256) mismatches += 1;
      } catch (err) {
        const reason = err instanceof DownloadError ? err.message : String(err);
        failures[reason] = (failures[reason] ?? 0) + 1;
      }
    }),
  );
  const wall = performance.now() - started;
  const cpu = process.cpuUsage(cpuBefore);
  durations.sort((a, b) => a - b);
  const at = (q: number) =>
    durations.length
      ? Math.round(durations[Math.min(durations.length - 1, Math.floor(q * durations.length))])
      : 0;
  const result: DownloadClientResult = {
    count: spec.count,
    completed: durations.length,
    resumed,
    bytes,
    wall_ms: Math.round(wall),
    download_ms: { p50: at(0.5), p99: at(0.99), max: at(1) },
    hashed: plans.filter((p) => p.hashed).length,
    hash_mismatches: mismatches,
    failures,
    connect_retries: connectRetries,
    client_cpu_seconds: Number(((cpu.user + cpu.system) / 1e6).toFixed(2)),
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(
      `download client: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exit(1);
  });
}
