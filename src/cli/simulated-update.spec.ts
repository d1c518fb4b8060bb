import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  ApplyingGauge,
  applyTime,
  describeUpdateStats,
  downloadFirmware,
  expectedFirmware,
  type ExpectedFirmware,
  failsUpdate,
  PART_SIZE,
  updateStats,
} from './simulated-update';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('downloadFirmware', () => {
  // 2.5 parts: the last part is short.
  const file = randomBytes(PART_SIZE * 2 + PART_SIZE / 2);
  const good: ExpectedFirmware = {
    size: file.length,
    sha256: sha(file).toUpperCase(),
    partSha256: [0, 1, 2].map((i) => sha(file.subarray(i * PART_SIZE, (i + 1) * PART_SIZE)).toUpperCase()),
  };
  let server: Server;
  let base: string;
  const seen: Record<string, string | undefined>[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      seen.push({ ua: req.headers['user-agent'], retry: String(req.headers['x-retry-number']) });
      switch (req.url ?? '') {
        case '/fw':
          res.writeHead(200, { 'content-length': file.length });
          // In several writes, so that chunks straddle part boundaries.
          for (let i = 0; i < file.length; i += 300_000) res.write(file.subarray(i, i + 300_000));
          res.end();
          return;
        case '/redirect':
          res.writeHead(302, { location: '/fw' });
          res.end();
          return;
        case '/corrupt': {
          const bad = Buffer.from(file);
          bad[PART_SIZE + 10] ^= 0xff;
          res.writeHead(200, { 'content-length': bad.length });
          res.end(bad);
          return;
        }
        case '/short':
          res.writeHead(200, { 'content-length': file.length });
          res.write(file.subarray(0, 1000), () => res.destroy());
          return;
        case '/chunked':
          res.writeHead(200, { 'transfer-encoding': 'chunked' });
          res.end(file);
          return;
        default:
          res.writeHead(404, { 'content-length': 0 });
          res.end();
      }
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  it('streams the file, checks size, every part and the whole SHA-256, and reports bytes as they come', async () => {
    const progress: number[] = [];
    const result = await downloadFirmware(`${base}/fw`, good, { onBytes: (n) => progress.push(n) });
    expect(result).toEqual({ ok: true, bytes: file.length, verified: ['size', 'parts', 'sha256'] });
    expect(progress.length).toBeGreaterThan(1);
    expect(progress.at(-1)).toBe(file.length);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(seen.at(-1)).toEqual({ ua: 'NHL/simulator', retry: '0' });
  });

  it('follows a redirect to the file', async () => {
    await expect(downloadFirmware(`${base}/redirect`, good)).resolves.toMatchObject({ ok: true });
  });

  it('checks what the frame gives and nothing else', async () => {
    await expect(
      downloadFirmware(`${base}/fw`, { size: null, sha256: good.sha256, partSha256: null }),
    ).resolves.toEqual({ ok: true, bytes: file.length, verified: ['sha256'] });
    await expect(
      downloadFirmware(`${base}/corrupt`, { size: file.length, sha256: null, partSha256: null }),
    ).resolves.toEqual({ ok: true, bytes: file.length, verified: ['size'] });
  });

  it('fails a corrupted part as the parts updater does, before the rest arrives', async () => {
    const result = await downloadFirmware(`${base}/corrupt`, good);
    expect(result).toMatchObject({
      ok: false,
      kind: 'verification',
      reason: 'Update failed : {:part_verification_failed, 1}',
    });
    expect(result.bytes).toBeLessThan(file.length);
  });

  it('fails a whole-file checksum that differs', async () => {
    await expect(downloadFirmware(`${base}/corrupt`, { ...good, partSha256: null })).resolves.toEqual({
      ok: false,
      bytes: file.length,
      kind: 'verification',
      reason: 'Update failed : checksum mismatch',
    });
  });

  it('fails a file whose size is not the one the frame announced', async () => {
    await expect(downloadFirmware(`${base}/fw`, { ...good, size: file.length + 1 })).resolves.toEqual({
      ok: false,
      bytes: 0,
      kind: 'verification',
      reason: `Update failed : size mismatch (${file.length} bytes offered, ${file.length + 1} expected)`,
    });
  });

  it('fails a body shorter than its content-length', async () => {
    await expect(downloadFirmware(`${base}/short`, good)).resolves.toMatchObject({
      ok: false,
      kind: 'download',
    });
  });

  it('fails without a content-length, and on an HTTP error', async () => {
    await expect(downloadFirmware(`${base}/chunked`, good)).resolves.toEqual({
      ok: false,
      bytes: 0,
      kind: 'download',
      reason: 'Download failed : no content-length',
    });
    await expect(downloadFirmware(`${base}/missing`, good)).resolves.toEqual({
      ok: false,
      bytes: 0,
      kind: 'download',
      reason: 'Download failed : {:http_error, 404}',
    });
  });

  it('stops when aborted', async () => {
    const abort = new AbortController();
    abort.abort(new Error('stopped'));
    await expect(downloadFirmware(`${base}/fw`, good, { signal: abort.signal })).resolves.toEqual({
      ok: false,
      bytes: 0,
      kind: 'download',
      reason: 'Download failed : stopped',
    });
  });
});

describe('expectedFirmware', () => {
  it('reads size, checksum and part checksums (any case), and null for what is missing or malformed', () => {
    const h = 'AB'.repeat(32);
    expect(expectedFirmware({ size: 10, checksum: h, partials_checksums: [h] })).toEqual({
      size: 10,
      sha256: h.toLowerCase(),
      partSha256: [h.toLowerCase()],
    });
    expect(expectedFirmware({})).toEqual({ size: null, sha256: null, partSha256: null });
    expect(expectedFirmware({ size: '10', checksum: 'xyz', partials_checksums: [h, 'no'] })).toEqual({
      size: null,
      sha256: null,
      partSha256: null,
    });
  });
});

describe('fail share and apply time', () => {
  const ids = Array.from({ length: 10_000 }, (_, i) => `sim-${i}`);
  const uuid = '11111111-2222-4333-8444-555555555555';

  it('fails a fixed set of devices for a seed and firmware, close to the share', () => {
    const failing = ids.filter((id) => failsUpdate('s', id, uuid, 0.05));
    expect(failing.length).toBeGreaterThan(400);
    expect(failing.length).toBeLessThan(600);
    expect(ids.filter((id) => failsUpdate('s', id, uuid, 0.05))).toEqual(failing);
    expect(ids.filter((id) => failsUpdate('other', id, uuid, 0.05))).not.toEqual(failing);
    // A larger share fails the same devices and more.
    const more = ids.filter((id) => failsUpdate('s', id, uuid, 0.2));
    expect(failing.every((id) => more.includes(id))).toBe(true);
    expect(ids.some((id) => failsUpdate('s', id, uuid, 0))).toBe(false);
    expect(ids.every((id) => failsUpdate('s', id, uuid, 1))).toBe(true);
  });

  it('spreads apply times within the jitter, the same on every run', () => {
    const times = ids.slice(0, 1000).map((id) => applyTime('s', id, uuid, 1000, 0.5));
    expect(Math.min(...times)).toBeGreaterThanOrEqual(500);
    expect(Math.max(...times)).toBeLessThanOrEqual(1500);
    expect(new Set(times).size).toBeGreaterThan(100);
    expect(ids.slice(0, 1000).map((id) => applyTime('s', id, uuid, 1000, 0.5))).toEqual(times);
    expect(applyTime('s', 'a', uuid, 1000, 0)).toBe(1000);
    expect(applyTime('s', 'a', uuid, 0, 0.5)).toBe(0);
  });
});

describe('updateStats', () => {
  it('sums the counters and counts devices by update frames received', () => {
    const gauge = new ApplyingGauge();
    gauge.begin();
    gauge.begin();
    gauge.end();
    const zero = { updateFrames: 0, downloads: 0, bytes: 0, installed: 0, failed: 0 };
    const stats = updateStats(
      [
        zero,
        { updateFrames: 1, downloads: 1, bytes: 100, installed: 1, failed: 0 },
        { updateFrames: 1, downloads: 1, bytes: 50, installed: 0, failed: 1 },
        { updateFrames: 3, downloads: 1, bytes: 100, installed: 1, failed: 0 },
      ],
      gauge,
    );
    expect(stats).toEqual({
      devices: 4,
      update_frames: 5,
      frames_per_device: { '0': 1, '1': 2, '3': 1 },
      max_frames_per_device: 3,
      downloads: 3,
      bytes: 250,
      completions: 2,
      failures: 1,
      applying_now: 1,
      max_applying: 2,
    });
    expect(describeUpdateStats(stats)).toBe(
      'updates: 5 frame(s) (devices × frames: 1×0, 2×1, 1×3), 3 download(s), 250 byte(s), 2 installed, 1 failed, ' +
        'at most 2 applying at once',
    );
  });
});
