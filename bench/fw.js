/* eslint-disable -- plain Node.js (CommonJS) harness, outside the TypeScript build; the repository's type-aware rules target the TypeScript sources. */
'use strict';
/**
 * A signed fwup-format .fw for the upload scenario, in the layout test/support/fw-builder.ts writes:
 * `meta.conf.ed25519` (stored) first, `meta.conf` (deflated), then `data/rootfs.img` (stored; pseudo-random,
 * streamed, never whole in memory). The resource's BLAKE2b in meta.conf is a placeholder (the server does not
 * recompute it; fw-builder's `hashResources: false`).
 */
const { createHash, sign } = require('node:crypto');
const { createWriteStream } = require('node:fs');
const { stat } = require('node:fs/promises');
const { Readable } = require('node:stream');
const { pipeline } = require('node:stream/promises');
const { ZipFile } = require('yazl');

const CHUNK = 1024 * 1024;
const FWUP_EPOCH = new Date(Date.UTC(1980, 0, 1));

function* chunks(size) {
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
    yield out;
    remaining -= out.length;
  }
}

async function buildSignedFw(path, { product, version, size, privateKey }) {
  const metaConf = Buffer.from(
    `meta-product=${product}\nmeta-description="Bench firmware"\nmeta-version=${version}\n` +
      `meta-author="Bench"\nmeta-platform=rpi4\nmeta-architecture=aarch64\n` +
      `file-resource rootfs.img {\nlength=${size}\nblake2b-256=${'0'.repeat(64)}\n}\n` +
      `task "upgrade" {\non-resource rootfs.img {\nfunlist={2,raw_write,0}\n}\n}\n`,
  );
  const zip = new ZipFile();
  zip.addBuffer(sign(null, metaConf, privateKey), 'meta.conf.ed25519', {
    compress: false,
    mtime: FWUP_EPOCH,
  });
  zip.addBuffer(metaConf, 'meta.conf', { compress: true, mtime: new Date() });
  zip.addReadStream(Readable.from(chunks(size)), 'data/rootfs.img', {
    compress: false,
    mtime: FWUP_EPOCH,
    size,
  });
  zip.end();
  await pipeline(zip.outputStream, createWriteStream(path));
  return { path, size: (await stat(path)).size };
}

module.exports = { buildSignedFw };
