/**
 * A signed fwup-format .fw for the upload scenario, in the layout test/support/fw-builder.ts writes:
 * `meta.conf.ed25519` (stored) first, `meta.conf` (deflated), then `data/rootfs.img` (stored; pseudo-random,
 * streamed, never whole in memory). The resource's BLAKE2b in meta.conf is a placeholder (the server does not
 * recompute it; fw-builder's `hashResources: false`).
 */
import { createHash, type KeyObject, sign } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ZipFile } from 'yazl';

const CHUNK = 1024 * 1024;
const FWUP_EPOCH = new Date(Date.UTC(1980, 0, 1));

/** How a chunk of another version differs: unchanged, 4 KiB of it rewritten, or new throughout. */
export type ChunkChange = false | 'rewritten' | 'new';

function* chunks(size: number, changed: (chunk: number) => ChunkChange = () => false): Generator<Buffer> {
  const base = Buffer.alloc(CHUNK);
  let seed = createHash('sha256').update('rootfs.img').digest();
  for (let i = 0; i < CHUNK; i += seed.length) {
    seed = createHash('sha256').update(seed).digest();
    seed.copy(base, i);
  }
  let remaining = size;
  for (let n = 0; remaining > 0; n++) {
    const out = Buffer.from(base.subarray(0, Math.min(CHUNK, remaining)));
    if (out.length >= 4) out.writeUInt32LE(n, 0);
    // A changed chunk: 4 KiB of it rewritten (a new version of some files), or all of it new (new files).
    const change = changed(n);
    const [from, to] = change === 'new' ? [0, out.length] : change === 'rewritten' ? [4096, 8192] : [0, 0];
    for (let i = from; i + 32 <= Math.min(to, out.length); i += 32) {
      createHash('sha256').update(`changed ${n} ${i}`).digest().copy(out, i);
    }
    yield out;
    remaining -= out.length;
  }
}

export interface FwSpec {
  product: string;
  version: string;
  /** Bytes of the stored resource. */
  size: number;
  privateKey: KeyObject;
  /** Which 1 MiB chunks differ from the base content (another version of the firmware), and how; default none. */
  changed?: (chunk: number) => ChunkChange;
  /** Declare `rootfs.img` delta-capable (`delta-source-raw-*` in the upgrade task), as a delta-ready firmware. */
  delta?: boolean;
}

/** Writes the archive to `path`; its size in bytes. */
export async function buildSignedFw(
  path: string,
  { product, version, size, privateKey, changed, delta }: FwSpec,
): Promise<{ path: string; size: number }> {
  const metaConf = Buffer.from(
    `meta-product=${product}\nmeta-description="Bench firmware"\nmeta-version=${version}\n` +
      `meta-author="Bench"\nmeta-platform=rpi4\nmeta-architecture=aarch64\n` +
      `file-resource rootfs.img {\nlength=${size}\nblake2b-256=${'0'.repeat(64)}\n}\n` +
      `task "upgrade" {\non-resource rootfs.img {\n` +
      (delta ? `delta-source-raw-offset=0\ndelta-source-raw-count=${Math.ceil(size / 512)}\n` : '') +
      `funlist={2,raw_write,0}\n}\n}\n`,
  );
  const zip = new ZipFile();
  zip.addBuffer(sign(null, metaConf, privateKey), 'meta.conf.ed25519', {
    compress: false,
    mtime: FWUP_EPOCH,
  });
  zip.addBuffer(metaConf, 'meta.conf', { compress: true, mtime: new Date() });
  zip.addReadStream(Readable.from(chunks(size, changed)), 'data/rootfs.img', {
    compress: false,
    mtime: FWUP_EPOCH,
    size,
  });
  zip.end();
  await pipeline(zip.outputStream, createWriteStream(path));
  return { path, size: (await stat(path)).size };
}
