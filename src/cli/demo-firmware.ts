/**
 * A small signed fwup `.fw` archive written on the fly for `fleethub demo`: `meta.conf.ed25519` (stored) first,
 * then `meta.conf` and `data/rootfs.img` (deflated), in the layout fwup writes. A minimal zip writer on
 * node:zlib (deflateRaw, crc32), so that the command needs no archive library at run time. Test fixtures build
 * richer archives with test/support/fw-builder.ts.
 */
import { blake2b } from '@noble/hashes/blake2';
import { createHash, createPublicKey, generateKeyPairSync, type KeyObject, sign } from 'node:crypto';
import { crc32, deflateRawSync } from 'node:zlib';

export interface DemoSigningKey {
  privateKey: KeyObject;
  /** As fwup prints it (`fwup-key.pub`): padded base64 of the raw 32-byte ed25519 key. */
  publicKey: string;
}

export function generateDemoSigningKey(): DemoSigningKey {
  const { privateKey } = generateKeyPairSync('ed25519');
  const spki = createPublicKey(privateKey).export({ format: 'der', type: 'spki' });
  return { privateKey, publicKey: spki.subarray(spki.length - 32).toString('base64') };
}

export interface DemoFirmwareMeta {
  product: string;
  version: string;
  platform: string;
  architecture: string;
  author: string;
  description: string;
}

/** fwup's quoting in meta.conf: bare when alphanumeric, `_` and `.` only. */
function quote(value: string): string {
  return /^[A-Za-z0-9_.]+$/.test(value) ? value : `"${value.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

export function renderDemoMetaConf(meta: DemoFirmwareMeta, resource: { name: string; data: Buffer }): string {
  const digest = Buffer.from(blake2b(resource.data, { dkLen: 32 })).toString('hex');
  return [
    `meta-product=${quote(meta.product)}`,
    `meta-description=${quote(meta.description)}`,
    `meta-version=${quote(meta.version)}`,
    `meta-author=${quote(meta.author)}`,
    `meta-platform=${quote(meta.platform)}`,
    `meta-architecture=${quote(meta.architecture)}`,
    `file-resource ${quote(resource.name)} {`,
    `length=${resource.data.length}`,
    `blake2b-256=${digest}`,
    '}',
    'task "upgrade" {',
    `on-resource ${quote(resource.name)} {`,
    'funlist={2,raw_write,0}',
    '}',
    '}',
    '',
  ].join('\n');
}

interface ZipEntry {
  name: string;
  data: Buffer;
  deflate: boolean;
}

/** DOS date and time of 1980-01-01 00:00, fwup's timestamp for everything but meta.conf. */
const DOS_DATE = (0 << 9) | (1 << 5) | 1;
const DOS_TIME = 0;

/** A plain zip (no zip64, no data descriptors): local headers and data, central directory, end record. */
export function writeZip(entries: readonly ZipEntry[]): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  for (const entry of entries) {
    const name = Buffer.from(entry.name, 'utf8');
    const body = entry.deflate ? deflateRawSync(entry.data) : entry.data;
    const crc = crc32(entry.data) >>> 0;
    const method = entry.deflate ? 8 : 0;
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4); // version needed: 2.0
    local.writeUInt16LE(0x0800, 6); // UTF-8 names
    local.writeUInt16LE(method, 8);
    local.writeUInt16LE(DOS_TIME, 10);
    local.writeUInt16LE(DOS_DATE, 12);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(body.length, 18);
    local.writeUInt32LE(entry.data.length, 22);
    local.writeUInt16LE(name.length, 26);
    local.writeUInt16LE(0, 28);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE((3 << 8) | 20, 4); // made by: Unix, 2.0
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(0x0800, 8);
    central.writeUInt16LE(method, 10);
    central.writeUInt16LE(DOS_TIME, 12);
    central.writeUInt16LE(DOS_DATE, 14);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(body.length, 20);
    central.writeUInt32LE(entry.data.length, 24);
    central.writeUInt16LE(name.length, 28);
    central.writeUInt32LE((0o100644 << 16) >>> 0, 38); // external attributes: a regular file, rw-r--r--
    central.writeUInt32LE(offset, 42);
    locals.push(local, name, body);
    centrals.push(central, name);
    offset += local.length + name.length + body.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(entries.length, 8);
  end.writeUInt16LE(entries.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}

/** A signed fwup archive with one small deterministic resource; its meta-uuid differs per version. */
export function buildDemoFirmware(meta: DemoFirmwareMeta, privateKey: KeyObject): Buffer {
  const data = Buffer.alloc(4096);
  let block = createHash('sha256').update(`${meta.product}/${meta.version}`).digest();
  for (let i = 0; i < data.length; i += block.length) {
    block.copy(data, i);
    block = createHash('sha256').update(block).digest();
  }
  return buildSignedFw(meta, { name: 'rootfs.img', data }, privateKey);
}

/** A signed fwup `.fw` of one resource (`fleethub archives build` too), laid out as fwup writes it. */
export function buildSignedFw(
  meta: DemoFirmwareMeta,
  resource: { name: string; data: Buffer },
  privateKey: KeyObject,
): Buffer {
  const data = resource.data;
  const metaConf = Buffer.from(renderDemoMetaConf(meta, resource), 'utf8');
  return writeZip([
    { name: 'meta.conf.ed25519', data: sign(null, metaConf, privateKey), deflate: false },
    { name: 'meta.conf', data: metaConf, deflate: true },
    { name: `data/${resource.name}`, data, deflate: true },
  ]);
}
