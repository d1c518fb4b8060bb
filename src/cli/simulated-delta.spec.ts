import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildFw, generateFwupKeyPair } from '../../test/support/fw-builder';
import { ensureXdelta3 } from '../../test/support/xdelta3';
import { buildDelta, DeltaBuildError, extractZip } from '../firmware/deltas/build-delta';
import { Xdelta3 } from '../firmware/deltas/xdelta3';
import { installFirmwareFile } from './simulated-delta';

function bytes(seed: string, length: number): Buffer {
  const out = Buffer.alloc(length);
  let block = createHash('sha256').update(seed).digest();
  for (let i = 0; i < length; i += block.length) {
    block.copy(out, i);
    block = createHash('sha256').update(block).digest();
  }
  return out;
}

const ROOTFS_1 = bytes('one', 128 * 1024);
const ROOTFS_2 = Buffer.concat([
  ROOTFS_1.subarray(0, 60_000),
  Buffer.from('changed'),
  ROOTFS_1.subarray(60_000),
]);

describe('fwup deltas: the build and the simulated device that applies them', () => {
  const xdelta3 = new Xdelta3();
  const key = generateFwupKeyPair();
  let dir: string;
  let v1: string;
  let v2: string;
  let delta: string;

  const fw = (path: string, version: string, rootfs: Buffer, deltaResources = ['rootfs.img']) =>
    buildFw(path, {
      signWith: key.privateKey,
      meta: { version },
      resources: [
        { name: 'rootfs.img', content: rootfs },
        { name: 'tiny.bin', content: 'short' },
      ],
      deltaResources: [...deltaResources, 'tiny.bin'],
    });

  beforeAll(async () => {
    ensureXdelta3();
    dir = await mkdtemp(join(tmpdir(), 'fleethub-delta-spec-'));
    v1 = (await fw(join(dir, 'v1.fw'), '1.0.0', ROOTFS_1)).path;
    v2 = (await fw(join(dir, 'v2.fw'), '2.0.0', ROOTFS_2)).path;
    const built = await buildDelta(xdelta3, v1, v2, join(dir, 'build'));
    delta = built.path;
    // Under 22 bytes, a resource is copied (NervesHub's limit): only the root filesystem is encoded.
    expect(built.encoded).toEqual(['rootfs.img']);
    expect(built.fwupVersion).toBe('1.6.0');
    expect(built.size).toBeLessThan(built.targetSize / 4);
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('rebuilds the target from the running firmware and checks it against the signed meta.conf', async () => {
    const out = join(dir, 'installed.fw');
    const result = await installFirmwareFile({
      downloaded: delta,
      running: v1,
      keys: [key.publicKey],
      xdelta3,
      workDir: join(dir, 'work-ok'),
      out,
    });
    expect(result).toEqual({ ok: true, delta: true });
    const entries = await extractZip(out, join(dir, 'check'));
    expect((await readFile(entries.find((e) => e.name === 'data/rootfs.img')!.path)).equals(ROOTFS_2)).toBe(
      true,
    );
    // A full file installs as it is.
    const full = await installFirmwareFile({
      downloaded: v2,
      running: null,
      keys: [key.publicKey],
      xdelta3,
      workDir: join(dir, 'work-full'),
      out: join(dir, 'full.fw'),
    });
    expect(full).toEqual({ ok: true, delta: false });
  });

  it('fails without a base, against the wrong base, or with another key', async () => {
    const attempt = (running: string | null, keys: string[], name: string) =>
      installFirmwareFile({
        downloaded: delta,
        running,
        keys,
        xdelta3,
        workDir: join(dir, name),
        out: join(dir, `${name}.fw`),
      });
    expect(await attempt(null, [key.publicKey], 'no-base')).toEqual({
      ok: false,
      reason: expect.stringContaining('no firmware to apply it to'),
    });
    expect(await attempt(v2, [key.publicKey], 'wrong-base')).toEqual({
      ok: false,
      reason: expect.stringMatching(/FWUP error : rootfs.img/),
    });
    expect(await attempt(v1, [generateFwupKeyPair().publicKey], 'wrong-key')).toEqual({
      ok: false,
      reason: 'FWUP error : firmware signature invalid',
    });
  });

  it('refuses, for good, a pair that can never give a delta', async () => {
    const plain = (await fw(join(dir, 'plain.fw'), '3.0.0', ROOTFS_2, [])).path;
    const noDelta = await buildDelta(xdelta3, v1, plain, join(dir, 'build-plain')).catch(
      (err: unknown) => err,
    );
    // tiny.bin is declared but too small: nothing is smaller as a delta.
    expect(noDelta).toEqual(expect.objectContaining({ permanent: true }));
    expect(noDelta).toBeInstanceOf(DeltaBuildError);
    const same = await buildDelta(xdelta3, v2, v2, join(dir, 'build-same'));
    expect(same.encoded).toEqual(['rootfs.img']);
  });
});
