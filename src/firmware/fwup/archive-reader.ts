import { open as openFile, type FileHandle } from 'node:fs/promises';
import { crc32 } from 'node:zlib';
import * as yauzl from 'yauzl';
import { FirmwareFormatError } from './firmware-format-error';
import { parseMetaConf, type FwupMetadata } from './meta-conf';
import { computeMetaUuid } from './meta-uuid';
import { ED25519_SIGNATURE_SIZE } from './signature';

export const META_CONF_NAME = 'meta.conf';
export const SIGNATURE_NAME = 'meta.conf.ed25519';
/** fwup reads at most 50 000 bytes of meta.conf and refuses anything under 10 bytes or not below that limit. */
export const META_CONF_MIN_SIZE = 10;
export const META_CONF_MAX_SIZE = 49_999;
/** fwup archives hold a handful of resources; this only bounds the work spent on a hostile central directory. */
export const MAX_ARCHIVE_ENTRIES = 4096;

/** Deflate cannot expand data by more than about 1032:1; a larger declared ratio is a lie (a zip bomb). */
const MAX_DEFLATE_RATIO = 1032;
const MAX_META_CONF_COMPRESSED_SIZE = 64 * 1024;
const MAX_SIGNATURE_COMPRESSED_SIZE = 256;

const LOCAL_HEADER_SIGNATURE = 0x04034b50;
const EMPTY_ARCHIVE_SIGNATURE = 0x06054b50;
const LOCAL_HEADER_SIZE = 30;
const FLAG_DATA_DESCRIPTOR = 0x0008;
/** A data descriptor holds a CRC and two sizes of 4 or 8 bytes, optionally preceded by a 4-byte signature. */
const DATA_DESCRIPTOR_SIZES = [12, 16, 20, 24];
const STORED = 0;
const EXTENDED_TIMESTAMP_ID = 0x5455;
const DEFLATED = 8;

export interface FirmwareArchiveEntry {
  readonly name: string;
  readonly compressedSize: number;
  readonly uncompressedSize: number;
  /** 0 stored, 8 deflated (the only methods accepted). */
  readonly compressionMethod: number;
}

export interface FirmwareArchive {
  readonly tool: 'fwup';
  /** Size of the whole file in bytes. */
  readonly size: number;
  /** Every entry, in the order in which they are stored (the order fwup reads them). */
  readonly entries: readonly FirmwareArchiveEntry[];
  /** The raw meta.conf bytes: what the signature covers and what the uuid is computed from. */
  readonly metaConf: Buffer;
  /** The 64-byte `meta.conf.ed25519`, which a signed archive stores as its first entry; null when unsigned. */
  readonly signature: Buffer | null;
  /** fwup's `meta-uuid`, computed from meta.conf. */
  readonly uuid: string;
  /** meta.conf's settings; `creationDate` falls back to the meta.conf entry's modification time, as in fwup. */
  readonly metadata: FwupMetadata;
}

/** Whether a file starting with these bytes is an fwup archive: a zip whose first bytes are a local file header. */
export function hasFwupSignature(head: Uint8Array): boolean {
  return (
    head.length >= 4 &&
    Buffer.from(head.buffer, head.byteOffset, 4).readUInt32LE(0) === LOCAL_HEADER_SIGNATURE
  );
}

interface LocatedEntry extends FirmwareArchiveEntry {
  readonly entry: yauzl.Entry;
  readonly offset: number;
}

/**
 * Reads an fwup `.fw` archive: only its central directory, its local headers and the `meta.conf` and
 * `meta.conf.ed25519` entries, never the resources, so the file may be of any size. Does not check the signature.
 *
 * Every malformed file gives a `FirmwareFormatError`; an error of the file system itself (missing file,
 * permissions, I/O) is thrown as it is.
 */
export async function readFirmwareArchive(filePath: string): Promise<FirmwareArchive> {
  const file = await openFile(filePath, 'r');
  try {
    const { size } = await file.stat();
    await checkZipStart(file, size);
    const zipfile = await openZip(filePath);
    try {
      return await readArchive(zipfile, file, size);
    } finally {
      zipfile.close();
    }
  } finally {
    await file.close();
  }
}

async function checkZipStart(file: FileHandle, size: number): Promise<void> {
  if (size === 0) throw new FirmwareFormatError('is empty');
  const head = Buffer.alloc(4);
  const { bytesRead } = await file.read(head, 0, 4, 0);
  if (bytesRead === 4 && head.readUInt32LE(0) === EMPTY_ARCHIVE_SIGNATURE) {
    throw new FirmwareFormatError(`has no ${META_CONF_NAME} (the zip archive is empty)`);
  }
  if (!hasFwupSignature(head.subarray(0, bytesRead))) throw new FirmwareFormatError('is not a zip archive');
}

function openZip(filePath: string): Promise<yauzl.ZipFile> {
  const options = {
    lazyEntries: true,
    autoClose: false,
    decodeStrings: true,
    validateEntrySizes: true,
    strictFileNames: true,
  };
  return new Promise((resolve, reject) => {
    yauzl.open(filePath, options, (err, zipfile) => {
      if (err) reject(asFormatError(err, 'is not a valid zip archive (it may be truncated)'));
      else resolve(zipfile);
    });
  });
}

async function readArchive(zipfile: yauzl.ZipFile, file: FileHandle, size: number): Promise<FirmwareArchive> {
  if (zipfile.entryCount > MAX_ARCHIVE_ENTRIES) {
    throw new FirmwareFormatError(
      `has too many entries (${zipfile.entryCount}; at most ${MAX_ARCHIVE_ENTRIES})`,
    );
  }
  const centralDirectoryOffset = centralDirectoryStart(zipfile, size);
  const entries = await readCentralDirectory(zipfile);
  const located = entries.map(checkEntry);
  checkUniqueNames(located);
  located.sort((a, b) => a.offset - b.offset);
  await checkLayout(file, located, centralDirectoryOffset);

  const signatureIndex = located.findIndex((e) => e.name === SIGNATURE_NAME);
  if (signatureIndex > 0) throw new FirmwareFormatError(`${SIGNATURE_NAME} is not the first entry`);
  const signed = signatureIndex === 0;
  const metaIndex = located.findIndex((e) => e.name === META_CONF_NAME);
  if (metaIndex < 0) throw new FirmwareFormatError(`has no ${META_CONF_NAME}`);
  if (metaIndex !== (signed ? 1 : 0)) {
    throw new FirmwareFormatError(
      signed
        ? `${META_CONF_NAME} does not directly follow ${SIGNATURE_NAME}`
        : `${META_CONF_NAME} is not the first entry`,
    );
  }

  const signature = signed ? await readSignature(zipfile, located[0]) : null;
  const metaEntry = located[metaIndex];
  const metaConf = await readMetaConf(zipfile, metaEntry);
  const uuid = computeMetaUuid(metaConf);
  const parsed = parseMetaConf(metaConf);
  if (parsed.uuid !== null && parsed.uuid !== uuid) {
    throw new FirmwareFormatError(`${META_CONF_NAME} sets meta-uuid, which fwup computes itself`);
  }
  if (parsed.nickname !== null) {
    throw new FirmwareFormatError(`${META_CONF_NAME} sets meta-nickname, which fwup computes itself`);
  }
  const metadata: FwupMetadata = {
    ...parsed,
    creationDate: parsed.creationDate ?? (await modificationTime(file, metaEntry)),
  };

  return {
    tool: 'fwup',
    size,
    entries: located.map(({ name, compressedSize, uncompressedSize, compressionMethod }) => ({
      name,
      compressedSize,
      uncompressedSize,
      compressionMethod,
    })),
    metaConf,
    signature,
    uuid,
    metadata,
  };
}

/** yauzl keeps the central directory offset as its read cursor until the first entry is read. */
function centralDirectoryStart(zipfile: yauzl.ZipFile, size: number): number {
  const cursor: unknown = (zipfile as unknown as { readEntryCursor: unknown }).readEntryCursor;
  return typeof cursor === 'number' && cursor <= size ? cursor : size;
}

function readCentralDirectory(zipfile: yauzl.ZipFile): Promise<yauzl.Entry[]> {
  return new Promise((resolve, reject) => {
    const entries: yauzl.Entry[] = [];
    zipfile.on('error', (err: unknown) => reject(asFormatError(err, 'is a damaged zip archive')));
    zipfile.on('entry', (entry: yauzl.Entry) => {
      entries.push(entry);
      zipfile.readEntry();
    });
    zipfile.once('end', () => resolve(entries));
    zipfile.readEntry();
  });
}

function checkEntry(entry: yauzl.Entry): LocatedEntry {
  const name = entry.fileName;
  if (name.endsWith('/')) throw new FirmwareFormatError(`contains a directory entry (${name})`);
  if (entry.isEncrypted()) throw new FirmwareFormatError(`contains an encrypted entry (${name})`);
  if (entry.compressionMethod !== STORED && entry.compressionMethod !== DEFLATED) {
    throw new FirmwareFormatError(`uses an unsupported compression method for ${name}`);
  }
  const { compressedSize, uncompressedSize, compressionMethod } = entry;
  const impossible =
    compressionMethod === STORED
      ? compressedSize !== uncompressedSize
      : uncompressedSize > compressedSize * MAX_DEFLATE_RATIO + 1024;
  if (impossible) throw new FirmwareFormatError(`declares an impossible size for ${name}`);
  return {
    name,
    compressedSize,
    uncompressedSize,
    compressionMethod,
    entry,
    offset: entry.relativeOffsetOfLocalHeader,
  };
}

function checkUniqueNames(entries: readonly LocatedEntry[]): void {
  const seen = new Set<string>();
  for (const { name } of entries) {
    if (seen.has(name)) throw new FirmwareFormatError(`contains ${name} more than once`);
    seen.add(name);
  }
}

/**
 * fwup reads an archive front to back through its local headers, while this reader trusts the central directory.
 * Requiring the entries to be packed back to back from offset 0 up to the central directory, with local names
 * matching, makes both views the same: no hidden, overlapping or out-of-place entries.
 */
async function checkLayout(
  file: FileHandle,
  entries: readonly LocatedEntry[],
  centralDirectoryOffset: number,
): Promise<void> {
  let expectedOffset = 0;
  let allowedGaps = [0];
  for (const located of entries) {
    if (!allowedGaps.some((gap) => expectedOffset + gap === located.offset)) {
      throw new FirmwareFormatError(
        `is a damaged zip archive: ${located.name} is not where the previous entry ends`,
      );
    }
    const header = Buffer.alloc(LOCAL_HEADER_SIZE);
    const { bytesRead } = await file.read(header, 0, LOCAL_HEADER_SIZE, located.offset);
    if (bytesRead !== LOCAL_HEADER_SIZE || header.readUInt32LE(0) !== LOCAL_HEADER_SIGNATURE) {
      throw new FirmwareFormatError(`is a damaged zip archive: no local header for ${located.name}`);
    }
    const nameLength = header.readUInt16LE(26);
    const extraLength = header.readUInt16LE(28);
    const localName = Buffer.alloc(nameLength);
    await file.read(localName, 0, nameLength, located.offset + LOCAL_HEADER_SIZE);
    if (!localName.equals(rawFileName(located.entry))) {
      throw new FirmwareFormatError(
        `is a damaged zip archive: the local header of ${located.name} names another file`,
      );
    }
    expectedOffset = located.offset + LOCAL_HEADER_SIZE + nameLength + extraLength + located.compressedSize;
    allowedGaps =
      (located.entry.generalPurposeBitFlag & FLAG_DATA_DESCRIPTOR) !== 0 ? DATA_DESCRIPTOR_SIZES : [0];
  }
  if (!allowedGaps.some((gap) => expectedOffset + gap === centralDirectoryOffset)) {
    throw new FirmwareFormatError(
      'is a damaged zip archive: its entries do not end where the central directory starts',
    );
  }
}

function rawFileName(entry: yauzl.Entry): Buffer {
  const raw: unknown = (entry as unknown as { fileNameRaw?: unknown }).fileNameRaw;
  return Buffer.isBuffer(raw) ? raw : Buffer.from(entry.fileName, 'utf8');
}

async function readSignature(zipfile: yauzl.ZipFile, located: LocatedEntry): Promise<Buffer> {
  if (
    located.uncompressedSize !== ED25519_SIGNATURE_SIZE ||
    located.compressedSize > MAX_SIGNATURE_COMPRESSED_SIZE
  ) {
    throw new FirmwareFormatError(`${SIGNATURE_NAME} is not ${ED25519_SIGNATURE_SIZE} bytes`);
  }
  return readEntryData(zipfile, located);
}

async function readMetaConf(zipfile: yauzl.ZipFile, located: LocatedEntry): Promise<Buffer> {
  if (
    located.uncompressedSize > META_CONF_MAX_SIZE ||
    located.compressedSize > MAX_META_CONF_COMPRESSED_SIZE
  ) {
    throw new FirmwareFormatError(
      `${META_CONF_NAME} is too large (${located.uncompressedSize} bytes; fwup accepts at most ${META_CONF_MAX_SIZE})`,
    );
  }
  if (located.uncompressedSize < META_CONF_MIN_SIZE) {
    throw new FirmwareFormatError(`${META_CONF_NAME} is too small (${located.uncompressedSize} bytes)`);
  }
  return readEntryData(zipfile, located);
}

/** Reads an entry whose declared size has been bounded, checking the size and CRC-32 of what comes out. */
function readEntryData(zipfile: yauzl.ZipFile, located: LocatedEntry): Promise<Buffer> {
  const damaged = (err: unknown): Error => asFormatError(err, `${located.name} cannot be read`);
  return new Promise((resolve, reject) => {
    zipfile.openReadStream(located.entry, (err, stream) => {
      if (err) {
        reject(damaged(err));
        return;
      }
      const chunks: Buffer[] = [];
      let total = 0;
      stream.on('data', (chunk: Buffer) => {
        total += chunk.length;
        if (total > located.uncompressedSize) stream.destroy(new Error('too many bytes'));
        else chunks.push(chunk);
      });
      stream.on('error', (streamErr) => reject(damaged(streamErr)));
      stream.on('end', () => {
        const data = Buffer.concat(chunks);
        if (data.length !== located.uncompressedSize) reject(damaged(new Error('size mismatch')));
        else if (crc32(data) !== located.entry.crc32) reject(damaged(new Error('CRC-32 mismatch')));
        else resolve(data);
      });
    });
  });
}

/**
 * The meta.conf entry's modification time in fwup's creation date format. fwup reads the local header (not the
 * central directory): its extended timestamp, else its DOS time, taken here as UTC.
 */
async function modificationTime(file: FileHandle, located: LocatedEntry): Promise<string | null> {
  const header = Buffer.alloc(LOCAL_HEADER_SIZE);
  await file.read(header, 0, LOCAL_HEADER_SIZE, located.offset);
  const extra = Buffer.alloc(header.readUInt16LE(28));
  await file.read(extra, 0, extra.length, located.offset + LOCAL_HEADER_SIZE + header.readUInt16LE(26));
  let date: Date | null = null;
  for (let p = 0; p + 4 <= extra.length; p += 4 + extra.readUInt16LE(p + 2)) {
    const id = extra.readUInt16LE(p);
    const length = extra.readUInt16LE(p + 2);
    if (id === EXTENDED_TIMESTAMP_ID && length >= 5 && p + 9 <= extra.length && (extra[p + 4] & 1) === 1) {
      date = new Date(extra.readInt32LE(p + 5) * 1000);
      break;
    }
  }
  if (date === null) {
    const time = header.readUInt16LE(10);
    const day = header.readUInt16LE(12);
    const [year, month, dayOfMonth] = [(day >> 9) + 1980, (day >> 5) & 0x0f, day & 0x1f];
    if (dayOfMonth >= 1 && month >= 1 && month <= 12) {
      date = new Date(
        Date.UTC(year, month - 1, dayOfMonth, time >> 11, (time >> 5) & 0x3f, (time & 0x1f) * 2),
      );
    }
  }
  if (date === null || Number.isNaN(date.getTime())) return null;
  return date.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function asFormatError(err: unknown, prefix: string): Error {
  if (err instanceof FirmwareFormatError) return err;
  const code = (err as { code?: unknown } | null)?.code;
  // File system errors (ENOENT, EIO...) are not about the archive's contents.
  if (err instanceof Error && typeof code === 'string' && /^E[A-Z]+$/.test(code)) return err;
  const detail = err instanceof Error ? err.message : String(err);
  return new FirmwareFormatError(`${prefix}: ${detail}`, { cause: err });
}
