import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import * as yauzl from 'yauzl';
import { ZipFile } from 'yazl';
import { deltaIncompatibilities, type DeltaFeatures, readDeltaFeatures } from '../fwup/delta-features';
import type { Xdelta3 } from './xdelta3';

/** Below this a resource is copied: a VCDIFF's own overhead would be larger (NervesHub's limit). */
export const DELTA_OVERHEAD_LIMIT = 22;
/** fwup archives hold a handful of entries; this bounds the work a hostile archive could cause. */
const MAX_ENTRIES = 4096;
const CHUNK_BYTES = 1024 * 1024;

/**
 * Why a build failed. `permanent`: the pair can never give a delta (the target has no delta-capable resource,
 * the source cannot serve as its base, the delta would not be smaller), so it is not retried.
 */
export class DeltaBuildError extends Error {
  constructor(
    message: string,
    readonly permanent: boolean,
  ) {
    super(message);
  }
}

export interface BuiltDelta {
  /** The delta `.fw` (in the work directory). */
  path: string;
  size: number;
  sourceSize: number;
  targetSize: number;
  sha256: string;
  /** SHA-256 of each 1 MiB part (the `update` message's `partials_checksums`). */
  chunkSha256: string[];
  /** The oldest fwup that applies it (the target meta.conf's delta features). */
  fwupVersion: string;
  /** The resources sent as VCDIFF, in archive order. */
  encoded: string[];
}

export interface ExtractedEntry {
  name: string;
  path: string;
  size: number;
  compressed: boolean;
  mtime: Date;
}

/** Extracts every file entry of the zip at `zipPath` into `dir`, named by position (never by the entry's name). */
export async function extractZip(zipPath: string, dir: string): Promise<ExtractedEntry[]> {
  await mkdir(dir, { recursive: true });
  const zip = await new Promise<yauzl.ZipFile>((resolve, reject) =>
    yauzl.open(zipPath, { lazyEntries: true, autoClose: false }, (err, file) =>
      err ? reject(err) : resolve(file),
    ),
  );
  const entries: ExtractedEntry[] = [];
  try {
    await new Promise<void>((resolve, reject) => {
      zip.on('error', reject);
      zip.on('end', () => resolve());
      zip.on('entry', (entry: yauzl.Entry) => {
        if (entry.fileName.endsWith('/')) return zip.readEntry();
        if (entries.length >= MAX_ENTRIES) return reject(new DeltaBuildError('too many zip entries', true));
        const path = join(dir, String(entries.length));
        entries.push({
          name: entry.fileName,
          path,
          size: entry.uncompressedSize,
          compressed: entry.compressionMethod !== 0,
          mtime: entry.getLastModDate(),
        });
        zip.openReadStream(entry, (err, stream) => {
          if (err) return reject(err);
          pipeline(stream, createWriteStream(path)).then(() => zip.readEntry(), reject);
        });
      });
      zip.readEntry();
    });
  } finally {
    zip.close();
  }
  return entries;
}

async function hashFile(path: string): Promise<{ sha256: string; chunkSha256: string[] }> {
  const whole = createHash('sha256');
  const chunks: string[] = [];
  let chunk = createHash('sha256');
  let inChunk = 0;
  for await (const data of createReadStream(path, { highWaterMark: CHUNK_BYTES }) as AsyncIterable<Buffer>) {
    whole.update(data);
    let offset = 0;
    while (offset < data.length) {
      const take = Math.min(CHUNK_BYTES - inChunk, data.length - offset);
      chunk.update(data.subarray(offset, offset + take));
      inChunk += take;
      offset += take;
      if (inChunk === CHUNK_BYTES) {
        chunks.push(chunk.digest('hex'));
        chunk = createHash('sha256');
        inChunk = 0;
      }
    }
  }
  if (inChunk > 0) chunks.push(chunk.digest('hex'));
  return { sha256: whole.digest('hex'), chunkSha256: chunks };
}

async function features(entries: ExtractedEntry[], side: string): Promise<DeltaFeatures> {
  const metaConf = entries.find((e) => e.name === 'meta.conf');
  if (!metaConf) throw new DeltaBuildError(`the ${side} firmware has no meta.conf`, true);
  return readDeltaFeatures(await readFile(metaConf.path));
}

/**
 * Builds the fwup delta from `sourcePath` to `targetPath` (both `.fw` files) in `workDir`, as NervesHub builds it:
 * the target's entries in the target's order; its `meta.conf` and `meta.conf.ed25519` byte for byte (the
 * signature still verifies); each resource that an upgrade task may write from a delta, present in the source
 * and at least 22 bytes, encoded with `xdelta3 -A -S` against the source's resource when that is smaller; the
 * resources no upgrade task uses left out; everything else copied.
 */
export async function buildDelta(
  xdelta3: Xdelta3,
  sourcePath: string,
  targetPath: string,
  workDir: string,
  signal?: AbortSignal,
): Promise<BuiltDelta> {
  const [sourceSize, targetSize] = [(await stat(sourcePath)).size, (await stat(targetPath)).size];
  let source: ExtractedEntry[];
  let target: ExtractedEntry[];
  try {
    source = await extractZip(sourcePath, join(workDir, 'source'));
    target = await extractZip(targetPath, join(workDir, 'target'));
  } catch (err) {
    if (err instanceof DeltaBuildError) throw err;
    throw new DeltaBuildError(`a firmware could not be unpacked: ${(err as Error).message}`, true);
  }
  let targetFeatures: DeltaFeatures;
  let sourceFeatures: DeltaFeatures;
  try {
    targetFeatures = await features(target, 'target');
    sourceFeatures = await features(source, 'source');
  } catch (err) {
    if (err instanceof DeltaBuildError) throw err;
    throw new DeltaBuildError(`meta.conf: ${(err as Error).message}`, true);
  }
  if (!targetFeatures.deltaCapable) {
    throw new DeltaBuildError('the target firmware has no delta-capable resource (no delta-source-*)', true);
  }
  const problems = deltaIncompatibilities(sourceFeatures, targetFeatures);
  if (problems.length > 0) throw new DeltaBuildError(problems.join('; '), true);

  const sourceByName = new Map(source.map((entry) => [entry.name, entry]));
  const outDir = join(workDir, 'out');
  await mkdir(outDir, { recursive: true });
  const window = targetFeatures.blockCacheSizeMb ? targetFeatures.blockCacheSizeMb * 1024 * 1024 : null;
  const zip = new ZipFile();
  const encoded: string[] = [];
  for (const [index, entry] of target.entries()) {
    const resource = entry.name.startsWith('data/') ? entry.name.slice('data/'.length) : null;
    if (resource !== null && !targetFeatures.upgradeResources.includes(resource)) continue;
    const base = sourceByName.get(entry.name);
    if (
      resource !== null &&
      targetFeatures.deltaResources.includes(resource) &&
      base !== undefined &&
      entry.size >= DELTA_OVERHEAD_LIMIT
    ) {
      const out = join(outDir, String(index));
      await xdelta3.encode(base.path, entry.path, out, { sourceWindow: window, signal });
      if ((await stat(out)).size < entry.size) {
        zip.addFile(out, entry.name, { compress: true, mtime: entry.mtime });
        encoded.push(resource);
        continue;
      }
    }
    zip.addFile(entry.path, entry.name, { compress: entry.compressed, mtime: entry.mtime });
  }
  if (encoded.length === 0) {
    zip.end();
    throw new DeltaBuildError('no resource is smaller as a delta (no changes in delta)', true);
  }
  const path = join(workDir, 'delta.fw');
  zip.end();
  await pipeline(zip.outputStream, createWriteStream(path));
  const { size } = await stat(path);
  if (size >= targetSize) {
    throw new DeltaBuildError(
      `the delta (${size} bytes) is not smaller than the target (${targetSize})`,
      true,
    );
  }
  return {
    path,
    size,
    sourceSize,
    targetSize,
    ...(await hashFile(path)),
    fwupVersion: targetFeatures.deltaFwupVersion,
    encoded,
  };
}
