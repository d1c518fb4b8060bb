/**
 * Writes ESP-IDF application images for tests, with the byte layout esptool's elf2image produces: the 24-byte
 * esp_image_header_t, segments (the first one starting with the 256-byte esp_app_desc_t), the checksum byte padded
 * to 16 bytes, optionally the appended SHA-256, and optionally a Secure Boot v2 signature sector (the image padded
 * to 4 KiB with 0xFF, then a block of magic 0xE7, version, image digest, key material and signature, CRC32).
 */
import { createHash, randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { crc32 } from 'node:zlib';

export interface EspImageOptions {
  projectName?: string;
  /** PROJECT_VER as written into the app descriptor (at most 31 bytes). */
  version?: string;
  idfVersion?: string;
  chipId?: number;
  /** app_elf_sha256; 32 random bytes by default. */
  elfSha256?: Buffer;
  secureVersion?: number;
  /** Bytes of code after the descriptor in the first segment, and in a second segment. */
  rodataSize?: number;
  codeSize?: number;
  hashAppended?: boolean;
  /** Overwrite the app descriptor magic (0xABCD5432). */
  descriptorMagic?: number;
  /** Append a Secure Boot v2 signature sector: 0x02 RSA-3072, 0x03 ECDSA. */
  secureBoot?: { version: 0x02 | 0x03; tamper?: 'crc' | 'digest' | 'image' };
}

export interface BuiltEspImage {
  bytes: Buffer;
  /** The uuid fleethub derives: the first 16 bytes of app_elf_sha256, 8-4-4-4-12. */
  uuid: string;
  elfSha256: Buffer;
}

function fixed(text: string, width: number): Buffer {
  const out = Buffer.alloc(width);
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length >= width) throw new Error(`"${text}" does not fit ${width - 1} bytes`);
  bytes.copy(out);
  return out;
}

function pseudoRandom(size: number, seed: number): Buffer {
  const out = Buffer.alloc(size);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < size; i += 1) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

export function uuidOf(elfSha256: Buffer): string {
  const hex = elfSha256.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

export function buildEspImage(options: EspImageOptions = {}): BuiltEspImage {
  const elfSha256 = options.elfSha256 ?? randomBytes(32);
  const desc = Buffer.alloc(256);
  desc.writeUInt32LE(options.descriptorMagic ?? 0xabcd5432, 0);
  desc.writeUInt32LE(options.secureVersion ?? 0, 4);
  fixed(options.version ?? '1.0.0', 32).copy(desc, 16);
  fixed(options.projectName ?? 'blinky', 32).copy(desc, 48);
  fixed('12:34:56', 16).copy(desc, 80);
  fixed('Nov 22 2026', 16).copy(desc, 96);
  fixed(options.idfVersion ?? 'v5.3.1', 32).copy(desc, 128);
  elfSha256.copy(desc, 160);

  const segments = [
    { load: 0x3f400020, data: Buffer.concat([desc, pseudoRandom(options.rodataSize ?? 1000, 7)]) },
    { load: 0x40080000, data: pseudoRandom(options.codeSize ?? 3000, 11) },
  ];
  const header = Buffer.alloc(24);
  header[0] = 0xe9;
  header[1] = segments.length;
  header[2] = 2; // DIO
  header[3] = 0x20; // 40 MHz, 4 MB
  header.writeUInt32LE(0x40081234, 4);
  header[8] = 0xee;
  header.writeUInt16LE(options.chipId ?? 0x0000, 12);
  header.writeUInt16LE(0xffff, 17);
  header[23] = options.hashAppended === false ? 0 : 1;

  const parts: Buffer[] = [header];
  let checksum = 0xef;
  for (const { load, data } of segments) {
    const segmentHeader = Buffer.alloc(8);
    segmentHeader.writeUInt32LE(load, 0);
    segmentHeader.writeUInt32LE(data.length, 4);
    parts.push(segmentHeader, data);
    for (const byte of data) checksum ^= byte;
  }
  let length = parts.reduce((n, p) => n + p.length, 0);
  const padding = 15 - (length % 16);
  parts.push(Buffer.alloc(padding), Buffer.from([checksum]));
  length += padding + 1;
  if (options.hashAppended !== false) {
    parts.push(createHash('sha256').update(Buffer.concat(parts)).digest());
  }
  let image = Buffer.concat(parts);

  if (options.secureBoot) {
    const pad = (4096 - (image.length % 4096)) % 4096;
    image = Buffer.concat([image, Buffer.alloc(pad, 0xff)]);
    const sector = Buffer.alloc(4096, 0xff);
    const block = sector.subarray(0, 1216);
    block.fill(0);
    block[0] = 0xe7;
    block[1] = options.secureBoot.version;
    createHash('sha256').update(image).digest().copy(block, 4);
    pseudoRandom(1196 - 36, 13).copy(block, 36); // public key material and signature
    if (options.secureBoot.tamper === 'digest') block[10] ^= 0xff;
    block.writeUInt32LE(crc32(block.subarray(0, 1196)), 1196);
    if (options.secureBoot.tamper === 'crc') block[500] ^= 0x01;
    if (options.secureBoot.tamper === 'image') image[image.length - 5000] ^= 0x01;
    image = Buffer.concat([image, sector]);
  }
  return { bytes: image, uuid: uuidOf(elfSha256), elfSha256 };
}

export async function writeEspImage(path: string, options: EspImageOptions = {}): Promise<BuiltEspImage> {
  const built = buildEspImage(options);
  await writeFile(path, built.bytes);
  return built;
}
