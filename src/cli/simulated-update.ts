import { createHash, type Hash } from 'node:crypto';
import { open } from 'node:fs/promises';

/**
 * The parts of a simulated device's firmware update that need no socket: downloading and verifying the file,
 * the deterministic choice of failing devices and apply times, and the counters a load test reads.
 */

/** NervesHub hashes firmware in 1 MiB parts for `partials_checksums` (device-protocol.md 3.2). */
export const PART_SIZE = 1024 * 1024;
/** NervesHubLink's downloader gives up on a connection that sends nothing for this long. */
export const DOWNLOAD_IDLE_TIMEOUT_MS = 60_000;

/** What the `update` frame says about the file (each optional, as NervesHubLink's `UpdateInfo`). */
export interface ExpectedFirmware {
  size: number | null;
  /** SHA-256 of the whole file, hex (any case). */
  sha256: string | null;
  /** SHA-256 of each PART_SIZE part, hex (any case). */
  partSha256: string[] | null;
}

export type DownloadResult =
  | { ok: true; bytes: number; verified: ('size' | 'sha256' | 'parts')[] }
  | { ok: false; bytes: number; kind: 'download' | 'verification'; reason: string };

/** The file checks an `update` payload names: `size`, `checksum`, `partials_checksums`; anything else is null. */
export function expectedFirmware(payload: Record<string, unknown>): ExpectedFirmware {
  const hex = (v: unknown) => (typeof v === 'string' && /^[0-9a-fA-F]{64}$/.test(v) ? v.toLowerCase() : null);
  const parts = Array.isArray(payload.partials_checksums) ? payload.partials_checksums.map(hex) : null;
  return {
    size:
      typeof payload.size === 'number' && Number.isSafeInteger(payload.size) && payload.size >= 0
        ? payload.size
        : null,
    sha256: hex(payload.checksum),
    partSha256: parts && parts.length > 0 && parts.every((p) => p !== null) ? parts : null,
  };
}

/**
 * Streams `url` (redirects followed, nothing kept but hashes) and checks what the frame said about it, as
 * NervesHubLink's downloader and parts updater do: a status ≥ 400 or a missing `content-length` fails the
 * download; fewer or more bytes than announced, a part or a whole-file SHA-256 that differs fail the update.
 * `onBytes` sees the running count and the expected total after every chunk.
 */
export async function downloadFirmware(
  url: string,
  expected: ExpectedFirmware,
  options: {
    signal?: AbortSignal;
    idleTimeoutMs?: number;
    onBytes?: (received: number, total: number) => void;
    /** Keep the bytes in this file too (a device that applies deltas keeps what it installs). */
    saveTo?: string;
  } = {},
): Promise<DownloadResult> {
  const idle = new AbortController();
  const idleMs = options.idleTimeoutMs ?? DOWNLOAD_IDLE_TIMEOUT_MS;
  let timer: NodeJS.Timeout | null = null;
  const touch = () => {
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => idle.abort(new Error(`no data for ${idleMs} ms`)), idleMs);
  };
  const signal = options.signal ? AbortSignal.any([options.signal, idle.signal]) : idle.signal;
  let received = 0;
  const fail = (kind: 'download' | 'verification', reason: string): DownloadResult => ({
    ok: false,
    bytes: received,
    kind,
    reason,
  });
  touch();
  try {
    let res: Response;
    try {
      res = await fetch(url, {
        headers: {
          'content-type': 'application/octet-stream',
          'x-retry-number': '0',
          'user-agent': 'NHL/simulator',
        },
        redirect: 'follow',
        signal,
      });
    } catch (err) {
      return fail('download', `Download failed : ${reasonOf(err, signal)}`);
    }
    const length = res.headers.get('content-length');
    if (res.status >= 400 || !res.body) {
      await res.body?.cancel().catch(() => undefined);
      return fail('download', `Download failed : {:http_error, ${res.status}}`);
    }
    if (length === null || !/^\d+$/.test(length)) {
      await res.body.cancel().catch(() => undefined);
      return fail('download', 'Download failed : no content-length');
    }
    const total = Number(length);
    if (expected.size !== null && total !== expected.size) {
      await res.body.cancel().catch(() => undefined);
      return fail(
        'verification',
        `Update failed : size mismatch (${total} bytes offered, ${expected.size} expected)`,
      );
    }
    const whole = createHash('sha256');
    // Checksums are compared case-insensitively (the server sends upper-case hex).
    const parts = expected.partSha256?.map((p) => p.toLowerCase()) ?? null;
    const wholeSha256 = expected.sha256?.toLowerCase() ?? null;
    let part: Hash = createHash('sha256');
    let partFill = 0;
    let partIndex = 0;
    const endPart = (): string | null => {
      const digest = part.digest('hex');
      const want = parts?.[partIndex];
      const bad =
        want !== undefined && want !== digest
          ? `Update failed : {:part_verification_failed, ${partIndex}}`
          : null;
      partIndex++;
      part = createHash('sha256');
      partFill = 0;
      return bad;
    };
    const saved = options.saveTo ? await open(options.saveTo, 'w') : null;
    try {
      for await (const value of res.body) {
        touch();
        const chunk = value as Uint8Array;
        received += chunk.length;
        if (saved) await saved.write(chunk);
        if (received > total) {
          await res.body.cancel().catch(() => undefined);
          return fail('verification', `Update failed : size mismatch (more than ${total} bytes)`);
        }
        whole.update(chunk);
        if (parts) {
          let offset = 0;
          while (offset < chunk.length) {
            const take = Math.min(PART_SIZE - partFill, chunk.length - offset);
            part.update(chunk.subarray(offset, offset + take));
            partFill += take;
            offset += take;
            if (partFill === PART_SIZE) {
              const bad = endPart();
              if (bad) {
                await res.body.cancel().catch(() => undefined);
                return fail('verification', bad);
              }
            }
          }
        }
        options.onBytes?.(received, total);
      }
    } catch (err) {
      return fail('download', `Download failed : ${reasonOf(err, signal)}`);
    } finally {
      await saved?.close();
    }
    if (received !== total) return fail('download', 'Download failed : :incomplete_download');
    const verified: ('size' | 'sha256' | 'parts')[] = [];
    if (expected.size !== null) verified.push('size');
    if (parts) {
      if (partFill > 0) {
        const bad = endPart();
        if (bad) return fail('verification', bad);
      }
      if (partIndex !== parts.length)
        return fail(
          'verification',
          `Update failed : ${partIndex} parts downloaded, ${parts.length} checksums sent`,
        );
      verified.push('parts');
    }
    if (wholeSha256 !== null) {
      if (whole.digest('hex') !== wholeSha256)
        return fail('verification', 'Update failed : checksum mismatch');
      verified.push('sha256');
    }
    return { ok: true, bytes: received, verified };
  } finally {
    if (timer) clearTimeout(timer);
  }
}

function reasonOf(err: unknown, signal: AbortSignal): string {
  if (signal.aborted) return String(signal.reason instanceof Error ? signal.reason.message : signal.reason);
  const cause = (err as { cause?: { code?: unknown; message?: unknown } }).cause;
  if (cause && typeof cause.code === 'string') return cause.code;
  return err instanceof Error ? err.message : String(err);
}

/** A number in [0, 1) fixed by the seed and the parts (the first 48 bits of their SHA-256). */
export function seededFraction(seed: string, ...parts: string[]): number {
  const digest = createHash('sha256')
    .update([seed, ...parts].join('\0'))
    .digest();
  return digest.readUIntBE(0, 6) / 2 ** 48;
}

/**
 * Whether this device fails the update to this firmware: a fixed choice for a seed, device and firmware, so that
 * a rerun fails the same devices and a device retried later (after the penalty box) fails the same way.
 */
export function failsUpdate(seed: string, identifier: string, firmwareUuid: string, share: number): boolean {
  return share > 0 && seededFraction(seed, 'fail', identifier, firmwareUuid) < share;
}

/** The apply time of this device for this firmware: `applyMs` ± `jitter` (a fraction), fixed by the seed. */
export function applyTime(
  seed: string,
  identifier: string,
  firmwareUuid: string,
  applyMs: number,
  jitter: number,
): number {
  const spread = Math.min(1, Math.max(0, jitter));
  const factor = 1 - spread + 2 * spread * seededFraction(seed, 'apply', identifier, firmwareUuid);
  return Math.max(0, Math.round(applyMs * factor));
}

/** How many devices of a set (a Simulator, or one load-test process) are applying an update at once. */
export class ApplyingGauge {
  current = 0;
  max = 0;

  begin(): void {
    this.current++;
    if (this.current > this.max) this.max = this.current;
  }

  end(): void {
    this.current--;
  }
}

/** One device's update counters. */
export interface DeviceUpdateCounters {
  /** `update` frames received, whatever the device did with them. */
  updateFrames: number;
  /** Downloads started. */
  downloads: number;
  /** Bytes received by those downloads. */
  bytes: number;
  /** Updates installed (the device rebooted into the new firmware). */
  installed: number;
  /** Updates reported failed (refused, download, verification or a simulated fwup error). */
  failed: number;
}

/** The update counters of a set of devices. */
export interface UpdateStats {
  devices: number;
  update_frames: number;
  /** Devices by the number of update frames they received: `{"0": 10, "1": 9990}`. */
  frames_per_device: Record<string, number>;
  max_frames_per_device: number;
  downloads: number;
  bytes: number;
  completions: number;
  failures: number;
  applying_now: number;
  max_applying: number;
}

export function updateStats(devices: Iterable<DeviceUpdateCounters>, gauge: ApplyingGauge): UpdateStats {
  const stats: UpdateStats = {
    devices: 0,
    update_frames: 0,
    frames_per_device: {},
    max_frames_per_device: 0,
    downloads: 0,
    bytes: 0,
    completions: 0,
    failures: 0,
    applying_now: gauge.current,
    max_applying: gauge.max,
  };
  for (const d of devices) {
    stats.devices++;
    stats.update_frames += d.updateFrames;
    stats.frames_per_device[d.updateFrames] = (stats.frames_per_device[d.updateFrames] ?? 0) + 1;
    stats.max_frames_per_device = Math.max(stats.max_frames_per_device, d.updateFrames);
    stats.downloads += d.downloads;
    stats.bytes += d.bytes;
    stats.completions += d.installed;
    stats.failures += d.failed;
  }
  return stats;
}

/** The update counters of several simulators (the benchmark's client processes) as one. */
export function mergeUpdateStats(all: readonly UpdateStats[]): UpdateStats {
  const out = updateStats([], new ApplyingGauge());
  for (const s of all) {
    out.devices += s.devices;
    out.update_frames += s.update_frames;
    for (const [k, v] of Object.entries(s.frames_per_device))
      out.frames_per_device[k] = (out.frames_per_device[k] ?? 0) + v;
    out.max_frames_per_device = Math.max(out.max_frames_per_device, s.max_frames_per_device);
    out.downloads += s.downloads;
    out.bytes += s.bytes;
    out.completions += s.completions;
    out.failures += s.failures;
    out.applying_now += s.applying_now;
    // Per-process maxima at different moments: their sum bounds the fleet's maximum from above.
    out.max_applying += s.max_applying;
  }
  return out;
}

/** One line for the end of a run. */
export function describeUpdateStats(s: UpdateStats): string {
  const frames = Object.entries(s.frames_per_device)
    .map(([n, count]) => `${count}×${n}`)
    .join(', ');
  return (
    `updates: ${s.update_frames} frame(s) (devices × frames: ${frames}), ${s.downloads} download(s), ` +
    `${s.bytes} byte(s), ${s.completions} installed, ${s.failures} failed, at most ${s.max_applying} applying at once`
  );
}
