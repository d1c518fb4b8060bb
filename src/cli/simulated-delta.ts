import { blake2b } from '@noble/hashes/blake2';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { ZipFile } from 'yazl';
import { type ExtractedEntry, extractZip } from '../firmware/deltas/build-delta';
import { VCDIFF_MAGIC, type Xdelta3 } from '../firmware/deltas/xdelta3';
import { readDeltaFeatures, readResourceDigests } from '../firmware/fwup/delta-features';
import { verifyMetaSignature } from '../firmware/fwup/signature';

/**
 * What a simulated device's fwup does with a downloaded `.fw` before it "writes" it: checks meta.conf's signature
 * with the public keys the server sent, rebuilds each resource sent as a VCDIFF delta from the same resource of
 * the firmware it runs (`xdelta3 -d`, as fwup applies `delta-source-*`), and checks every resource against the
 * length and BLAKE2b-256 the signed meta.conf gives. The result is the full image, kept as the device's firmware
 * (the base of its next delta).
 */
export type InstallResult = { ok: true; delta: boolean } | { ok: false; reason: string };

async function isVcdiff(path: string): Promise<boolean> {
  const file = await open(path, 'r');
  try {
    const head = Buffer.alloc(VCDIFF_MAGIC.length);
    const { bytesRead } = await file.read(head, 0, head.length, 0);
    return bytesRead === head.length && head.equals(VCDIFF_MAGIC);
  } finally {
    await file.close();
  }
}

async function blake2b256(path: string): Promise<{ hex: string; length: number }> {
  const state = blake2b.create({ dkLen: 32 });
  let length = 0;
  for await (const chunk of createReadStream(path) as AsyncIterable<Buffer>) {
    state.update(chunk);
    length += chunk.length;
  }
  return { hex: Buffer.from(state.digest()).toString('hex'), length };
}

/**
 * Installs `downloaded` on a device running the firmware file `running` (null: none kept), writing the full image
 * to `out`. `keys`: the fwup public keys (base64) the server sent; none: the signature is not checked.
 */
export async function installFirmwareFile(options: {
  downloaded: string;
  running: string | null;
  keys: readonly string[];
  xdelta3: Xdelta3;
  workDir: string;
  out: string;
}): Promise<InstallResult> {
  const fail = (reason: string): InstallResult => ({ ok: false, reason: `FWUP error : ${reason}` });
  let entries: ExtractedEntry[];
  try {
    entries = await extractZip(options.downloaded, join(options.workDir, 'new'));
  } catch (err) {
    return fail(`not a firmware archive (${(err as Error).message})`);
  }
  const metaConfEntry = entries.find((e) => e.name === 'meta.conf');
  if (!metaConfEntry) return fail('no meta.conf');
  const metaConf = await readFile(metaConfEntry.path);
  if (options.keys.length > 0) {
    const signature = entries.find((e) => e.name === 'meta.conf.ed25519');
    const keys = options.keys.map((key, i) => ({ name: String(i), key }));
    if (!signature || verifyMetaSignature(metaConf, await readFile(signature.path), keys) === null)
      return fail('firmware signature invalid');
  }
  let deltaResources: readonly string[];
  let digests: ReturnType<typeof readResourceDigests>;
  try {
    deltaResources = readDeltaFeatures(metaConf).deltaResources;
    digests = readResourceDigests(metaConf);
  } catch (err) {
    return fail(`meta.conf: ${(err as Error).message}`);
  }
  let base: Map<string, ExtractedEntry> | null = null;
  let delta = false;
  const installed: ExtractedEntry[] = [];
  for (const [index, entry] of entries.entries()) {
    const resource = entry.name.startsWith('data/') ? entry.name.slice('data/'.length) : null;
    let path = entry.path;
    if (resource !== null && deltaResources.includes(resource) && (await isVcdiff(entry.path))) {
      if (options.running === null)
        return fail(`${resource} is a delta and no firmware to apply it to is kept`);
      base ??= new Map(
        (await extractZip(options.running, join(options.workDir, 'base'))).map((e) => [e.name, e]),
      );
      const source = base.get(entry.name);
      if (!source) return fail(`${resource} is a delta and the running firmware has no ${resource}`);
      path = join(options.workDir, 'decoded', String(index));
      await mkdir(join(options.workDir, 'decoded'), { recursive: true });
      try {
        await options.xdelta3.decode(source.path, entry.path, path);
      } catch (err) {
        return fail(`${resource}: ${(err as Error).message}`);
      }
      delta = true;
    }
    if (resource !== null) {
      const want = digests.get(resource);
      if (!want) return fail(`${resource} is not a file-resource of meta.conf`);
      const got = await blake2b256(path);
      if (
        (want.length !== null && got.length !== want.length) ||
        (want.blake2b256 !== null && got.hex !== want.blake2b256)
      )
        return fail(`${resource} does not match meta.conf (length or blake2b-256)`);
    }
    installed.push({ ...entry, path });
  }
  const zip = new ZipFile();
  for (const entry of installed)
    zip.addFile(entry.path, entry.name, { compress: entry.compressed, mtime: entry.mtime });
  zip.end();
  await pipeline(zip.outputStream, createWriteStream(options.out));
  return { ok: true, delta };
}
