/**
 * Writes real fwup-format `.fw` archives for tests: `meta.conf.ed25519` first (when signed, stored), then
 * `meta.conf` (deflated) in the text format fwup writes, then the `data/<name>` resources. Resources are generated
 * and streamed, so a 200 MiB firmware never sits in memory.
 */
import { blake2b } from '@noble/hashes/blake2';
import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  sign,
  type KeyObject,
} from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { readFile, stat, truncate, writeFile } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ZipFile } from 'yazl';

export interface FwupKeyPair {
  readonly privateKey: KeyObject;
  /** The public key as fwup prints it (`fwup-key.pub`): padded base64 of the raw 32 bytes, 44 characters. */
  readonly publicKey: string;
}

export function generateFwupKeyPair(): FwupKeyPair {
  const { privateKey } = generateKeyPairSync('ed25519');
  return { privateKey, publicKey: fwupPublicKey(privateKey) };
}

/** A fixed key pair from a 32-byte seed (or a string hashed into one), for reproducible archives. */
export function fwupKeyPairFromSeed(seed: Uint8Array | string): FwupKeyPair {
  const raw = typeof seed === 'string' ? createHash('sha256').update(seed).digest() : Buffer.from(seed);
  if (raw.length !== 32) throw new Error('an ed25519 seed is 32 bytes');
  const pkcs8 = Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), raw]);
  const privateKey = createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' });
  return { privateKey, publicKey: fwupPublicKey(privateKey) };
}

/** fwup's base64 form of an ed25519 key (public, or the public half of a private one). */
export function fwupPublicKey(key: KeyObject): string {
  const publicKey = key.type === 'private' ? createPublicKey(key) : key;
  const spki = publicKey.export({ format: 'der', type: 'spki' });
  return spki.subarray(spki.length - 32).toString('base64');
}

export function signMetaConf(metaConf: Uint8Array, privateKey: KeyObject): Buffer {
  return sign(null, metaConf, privateKey);
}

/** `meta-*` values; `null` leaves the line out. */
export interface FwMeta {
  product?: string | null;
  description?: string | null;
  version?: string | null;
  author?: string | null;
  platform?: string | null;
  architecture?: string | null;
  creationDate?: string | null;
  fwupVersion?: string | null;
  vcsIdentifier?: string | null;
  misc?: string | null;
}

export const DEFAULT_FW_META: Readonly<Required<FwMeta>> = {
  product: 'demo_product',
  description: 'A demo firmware',
  version: '1.0.0',
  author: 'The Fleet Team',
  platform: 'rpi4',
  architecture: 'aarch64',
  creationDate: null,
  fwupVersion: null,
  vcsIdentifier: null,
  misc: null,
};

export interface FwResource {
  /** Stored as `data/<name>`. */
  name: string;
  /** Explicit contents; otherwise `size` bytes of deterministic pseudo-random data are generated. */
  content?: Buffer | string;
  size?: number;
  /** Deflate the resource, as fwup does (default true). Pseudo-random data does not shrink; false is faster. */
  compress?: boolean;
}

export type FwTamper =
  /** Sign, then flip one bit of the signature. */
  | 'wrong-signature'
  /** Store meta.conf before meta.conf.ed25519. */
  | 'signature-not-first'
  /** Leave meta.conf out (the signature, if any, stays). */
  | 'no-meta-conf'
  /** Write a plain text file instead of a zip. */
  | 'not-a-zip'
  /** Cut the finished archive in half. */
  | 'truncated';

export interface ExtraEntry {
  name: string;
  content?: Buffer | string;
  /** An empty directory entry (`name/`). */
  directory?: boolean;
  compress?: boolean;
  /** Before the signature and meta.conf, between the two, or after the resources (default). */
  position?: 'start' | 'after-signature' | 'end';
}

export interface BuildFwOptions {
  meta?: FwMeta;
  /** Use these bytes as meta.conf instead of rendering `meta` and the resources. */
  metaConf?: string | Buffer;
  /** Sign meta.conf with this ed25519 private key; unsigned when absent (unless a tamper needs a signature). */
  signWith?: KeyObject;
  /** Default: one 1 KiB `rootfs.img`. */
  resources?: FwResource[];
  /** Resources whose upgrade may be written from a raw delta (see renderMetaConf); default none. */
  deltaResources?: string[];
  /**
   * Put each resource's BLAKE2b-256 in meta.conf as fwup does (default true). That reads the generated data once
   * more at about 25 MB/s (BLAKE2b in JavaScript): pass false for very large resources to write a placeholder.
   */
  hashResources?: boolean;
  tamper?: FwTamper;
  extraEntries?: ExtraEntry[];
  /** Modification time of the meta.conf entry (fwup derives `meta-creation-date` from it). Default: now. */
  metaConfMtime?: Date;
}

export interface BuiltFw {
  path: string;
  /** File size in bytes. */
  size: number;
  metaConf: Buffer;
  /** What was stored as meta.conf.ed25519 (after tampering), or null. */
  signature: Buffer | null;
}

const CHUNK_SIZE = 1024 * 1024;
const FWUP_EPOCH = new Date(Date.UTC(1980, 0, 1));

/** The quoting fwup applies when writing meta.conf: bare when alphanumeric, `_` and `.` only. */
export function fwupQuote(value: string): string {
  if (/^[A-Za-z0-9_.]+$/.test(value)) return value;
  return `"${value.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

export interface ResourceDigest {
  name: string;
  length: number;
  /** 64 hex characters. */
  blake2b256: string;
}

/**
 * meta.conf as fwup writes it: `meta-*` lines, one `file-resource` block per resource, an `upgrade` task.
 * `deltaResources`: those resources' `on-resource` may be written from a raw delta (`delta-source-raw-offset` and
 * `-count` before the `raw_write`), as a firmware built for delta updates declares it.
 */
export function renderMetaConf(
  meta: FwMeta,
  resources: readonly ResourceDigest[],
  deltaResources: readonly string[] = [],
): string {
  const keys: [keyof FwMeta, string][] = [
    ['product', 'meta-product'],
    ['description', 'meta-description'],
    ['version', 'meta-version'],
    ['author', 'meta-author'],
    ['platform', 'meta-platform'],
    ['architecture', 'meta-architecture'],
    ['creationDate', 'meta-creation-date'],
    ['fwupVersion', 'meta-fwup-version'],
    ['vcsIdentifier', 'meta-vcs-identifier'],
    ['misc', 'meta-misc'],
  ];
  let text = '';
  for (const [field, key] of keys) {
    const value = meta[field];
    if (value !== null && value !== undefined) text += `${key}=${fwupQuote(value)}\n`;
  }
  for (const r of resources) {
    text += `file-resource ${fwupQuote(r.name)} {\nlength=${r.length}\nblake2b-256=${r.blake2b256}\n}\n`;
  }
  text += 'task "upgrade" {\n';
  let offset = 0;
  for (const r of resources) {
    const blocks = Math.ceil(r.length / 512);
    const delta = deltaResources.includes(r.name)
      ? `delta-source-raw-offset=${offset}\ndelta-source-raw-count=${blocks}\n`
      : '';
    text += `on-resource ${fwupQuote(r.name)} {\n${delta}funlist={2,raw_write,${offset}}\n}\n`;
    offset += blocks;
  }
  return `${text}}\n`;
}

function resourceLength(resource: FwResource): number {
  if (resource.content !== undefined) return Buffer.byteLength(resource.content);
  return resource.size ?? 1024;
}

/** Deterministic contents: a 1 MiB pseudo-random block derived from the name, stamped with the chunk number. */
function* resourceChunks(resource: FwResource): Generator<Buffer> {
  if (resource.content !== undefined) {
    yield Buffer.from(resource.content);
    return;
  }
  const base = Buffer.alloc(CHUNK_SIZE);
  let seed = createHash('sha256').update(resource.name).digest();
  for (let i = 0; i < CHUNK_SIZE; i += seed.length) {
    seed = createHash('sha256').update(seed).digest();
    seed.copy(base, i);
  }
  let remaining = resourceLength(resource);
  for (let chunk = 0; remaining > 0; chunk++) {
    const length = Math.min(CHUNK_SIZE, remaining);
    const out = Buffer.from(base.subarray(0, length));
    if (length >= 4) out.writeUInt32LE(chunk, 0);
    yield out;
    remaining -= length;
  }
}

function digestResource(resource: FwResource, hash: boolean): ResourceDigest {
  const length = resourceLength(resource);
  if (!hash) return { name: resource.name, length, blake2b256: '0'.repeat(64) };
  const state = blake2b.create({ dkLen: 32 });
  for (const chunk of resourceChunks(resource)) state.update(chunk);
  return { name: resource.name, length, blake2b256: Buffer.from(state.digest()).toString('hex') };
}

function addExtra(zip: ZipFile, extra: ExtraEntry): void {
  if (extra.directory) zip.addEmptyDirectory(extra.name, { mtime: FWUP_EPOCH });
  else
    zip.addBuffer(Buffer.from(extra.content ?? ''), extra.name, {
      compress: extra.compress ?? false,
      mtime: FWUP_EPOCH,
    });
}

export async function buildFw(path: string, options: BuildFwOptions = {}): Promise<BuiltFw> {
  const resources = options.resources ?? [{ name: 'rootfs.img', size: 1024 }];
  const metaConf =
    options.metaConf !== undefined
      ? Buffer.from(options.metaConf)
      : Buffer.from(
          renderMetaConf(
            { ...DEFAULT_FW_META, ...options.meta },
            resources.map((r) => digestResource(r, options.hashResources ?? true)),
            options.deltaResources,
          ),
        );

  if (options.tamper === 'not-a-zip') {
    const text = Buffer.from(`This is not a firmware archive.\n${metaConf.toString('utf8')}`);
    await writeFile(path, text);
    return { path, size: text.length, metaConf, signature: null };
  }

  const needsSignature = options.tamper === 'wrong-signature' || options.tamper === 'signature-not-first';
  const key = options.signWith ?? (needsSignature ? generateFwupKeyPair().privateKey : undefined);
  let signature = key ? signMetaConf(metaConf, key) : null;
  if (signature && options.tamper === 'wrong-signature') {
    signature = Buffer.from(signature);
    signature[10] ^= 0x01;
  }

  const zip = new ZipFile();
  const extras = options.extraEntries ?? [];
  for (const extra of extras.filter((e) => e.position === 'start')) addExtra(zip, extra);
  const addSignature = (): void => {
    if (signature) zip.addBuffer(signature, 'meta.conf.ed25519', { compress: false, mtime: FWUP_EPOCH });
  };
  const addMetaConf = (): void => {
    if (options.tamper !== 'no-meta-conf') {
      zip.addBuffer(metaConf, 'meta.conf', { compress: true, mtime: options.metaConfMtime ?? new Date() });
    }
  };
  const addBetween = (): void => {
    for (const extra of extras.filter((e) => e.position === 'after-signature')) addExtra(zip, extra);
  };
  if (options.tamper === 'signature-not-first') {
    addMetaConf();
    addSignature();
    addBetween();
  } else {
    addSignature();
    addBetween();
    addMetaConf();
  }
  for (const resource of resources) {
    zip.addReadStream(Readable.from(resourceChunks(resource)), `data/${resource.name}`, {
      compress: resource.compress ?? true,
      mtime: FWUP_EPOCH,
      size: resourceLength(resource),
    });
  }
  for (const extra of extras.filter((e) => (e.position ?? 'end') === 'end')) addExtra(zip, extra);
  zip.end();
  await pipeline(zip.outputStream, createWriteStream(path));

  let { size } = await stat(path);
  if (options.tamper === 'truncated') {
    size = Math.floor(size / 2);
    await truncate(path, size);
  }
  return { path, size, metaConf, signature };
}

/** Central directory fields that `patchZipEntry` can overwrite (the local header is patched to match). */
export interface ZipEntryPatch {
  generalPurposeBitFlag?: number;
  compressionMethod?: number;
  compressedSize?: number;
  uncompressedSize?: number;
  localHeaderOffset?: number;
  crc32?: number;
  /** Must have the same byte length as the old name. */
  fileName?: string;
}

export interface ZipEntryInfo {
  generalPurposeBitFlag: number;
  compressionMethod: number;
  crc32: number;
  compressedSize: number;
  uncompressedSize: number;
  localHeaderOffset: number;
}

/**
 * Rewrites fields of one entry of a small, non-zip64 archive in place, to make malformed archives. Reads the whole
 * file: only for test-sized archives. `patch` may be a function of the entry's current fields.
 */
export async function patchZipEntry(
  path: string,
  name: string,
  patch: ZipEntryPatch | ((entry: ZipEntryInfo) => ZipEntryPatch),
): Promise<void> {
  const zip = await readFile(path);
  const eocd = zip.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  if (eocd < 0) throw new Error('no end of central directory record');
  const count = zip.readUInt16LE(eocd + 10);
  let p = zip.readUInt32LE(eocd + 16);
  for (let i = 0; i < count; i++) {
    const nameLength = zip.readUInt16LE(p + 28);
    const extraLength = zip.readUInt16LE(p + 30);
    const commentLength = zip.readUInt16LE(p + 32);
    if (zip.toString('utf8', p + 46, p + 46 + nameLength) === name) {
      const local = zip.readUInt32LE(p + 42);
      const info: ZipEntryInfo = {
        generalPurposeBitFlag: zip.readUInt16LE(p + 8),
        compressionMethod: zip.readUInt16LE(p + 10),
        crc32: zip.readUInt32LE(p + 16),
        compressedSize: zip.readUInt32LE(p + 20),
        uncompressedSize: zip.readUInt32LE(p + 24),
        localHeaderOffset: local,
      };
      const changes = typeof patch === 'function' ? patch(info) : patch;
      const dataDescriptor = (info.generalPurposeBitFlag & 0x08) !== 0;
      if (changes.generalPurposeBitFlag !== undefined) {
        zip.writeUInt16LE(changes.generalPurposeBitFlag, p + 8);
        zip.writeUInt16LE(changes.generalPurposeBitFlag, local + 6);
      }
      if (changes.compressionMethod !== undefined) {
        zip.writeUInt16LE(changes.compressionMethod, p + 10);
        zip.writeUInt16LE(changes.compressionMethod, local + 8);
      }
      if (changes.crc32 !== undefined) {
        zip.writeUInt32LE(changes.crc32 >>> 0, p + 16);
        if (!dataDescriptor) zip.writeUInt32LE(changes.crc32 >>> 0, local + 14);
      }
      if (changes.compressedSize !== undefined) {
        zip.writeUInt32LE(changes.compressedSize, p + 20);
        if (!dataDescriptor) zip.writeUInt32LE(changes.compressedSize, local + 18);
      }
      if (changes.uncompressedSize !== undefined) {
        zip.writeUInt32LE(changes.uncompressedSize, p + 24);
        if (!dataDescriptor) zip.writeUInt32LE(changes.uncompressedSize, local + 22);
      }
      if (changes.fileName !== undefined) {
        const newName = Buffer.from(changes.fileName);
        if (newName.length !== nameLength) throw new Error('the new name must have the same length');
        newName.copy(zip, p + 46);
        newName.copy(zip, local + 30);
      }
      if (changes.localHeaderOffset !== undefined) zip.writeUInt32LE(changes.localHeaderOffset, p + 42);
      await writeFile(path, zip);
      return;
    }
    p += 46 + nameLength + extraLength + commentLength;
  }
  throw new Error(`no entry named ${name}`);
}
