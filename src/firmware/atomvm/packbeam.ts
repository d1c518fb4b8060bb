import { open, type FileHandle } from 'node:fs/promises';
import { PACKBEAM_MAGIC } from '../formats/detect-format';
import { readAt } from '../formats/read-exactly';
import { FirmwareFormatError } from '../fwup/firmware-format-error';
import { ED25519_SIGNATURE_SIZE } from '../fwup/signature';
import {
  decodeErlangTerm,
  ErlangTermError,
  type ErlangTerm,
  termText,
} from '../../common/erlang-term/erlang-term';

/*
 * An AtomVM packbeam (AtomVM src/libAtomVM/avmpack.c, atomvm_packbeam):
 *
 *   "#!/usr/bin/env AtomVM\n\0\0"                     24 bytes
 *   entries, each:  size u32 | flags u32 | reserved u32  (big-endian; size covers the whole entry)
 *                   name, NUL-terminated, padded with NULs so that the data starts on a 4-byte boundary
 *                   data
 *   until an entry whose size or flags word is 0 (the `end` entry).
 *
 * Plain files (as opposed to BEAM modules) hold a 4-byte big-endian length and then their bytes. The reader walks
 * the headers with positioned reads, so the file may be of any size, and reads only two entries' data:
 * the first `<app>/priv/application.bin` and `nerves_hub/signature`.
 */

export const PACKBEAM_ENTRY_HEADER_SIZE = 12;
/** Bounds the work spent on a hostile file; real packbeams hold a few hundred modules. */
export const MAX_PACKBEAM_ENTRIES = 65_536;
export const MAX_ENTRY_NAME_LENGTH = 255;
export const MAX_APPLICATION_BIN_SIZE = 64 * 1024;
export const SIGNATURE_ENTRY_NAME = 'nerves_hub/signature';
/** `"NH1"`, format version 1, then the 64-byte ed25519 signature of every byte before the signature entry. */
export const SIGNATURE_PREFIX = Buffer.from('NH1\x01', 'latin1');
export const SIGNATURE_PAYLOAD_SIZE = SIGNATURE_PREFIX.length + ED25519_SIGNATURE_SIZE;

export interface PackbeamEntry {
  readonly name: string;
  readonly flags: number;
  /** Offset of the entry's header in the file. */
  readonly offset: number;
  /** The entry's size word: header, name and data. */
  readonly size: number;
}

export interface PackbeamSignature {
  /** The 64-byte ed25519 signature. */
  readonly signature: Buffer;
  /** How many bytes from the start of the file it covers: everything before the signature entry. */
  readonly signedLength: number;
}

export interface Packbeam {
  readonly tool: 'atomvm';
  readonly size: number;
  /** Every entry before the end entry, in file order. */
  readonly entries: readonly PackbeamEntry[];
  /** The application's name from application.bin. */
  readonly application: string;
  /** `vsn` as written; not normalised. */
  readonly version: string;
  readonly description: string | null;
  readonly signature: PackbeamSignature | null;
}

const malformed = (detail: string) => new FirmwareFormatError(`is a malformed packbeam: ${detail}`);

/**
 * Reads an AtomVM packbeam's entry headers, its application.bin and its signature entry. Does not verify the
 * signature. A malformed file gives a `FirmwareFormatError`; an error of the file system itself is thrown as is.
 */
export async function readPackbeam(filePath: string): Promise<Packbeam> {
  const file = await open(filePath, 'r');
  try {
    const { size } = await file.stat();
    const magic = await readAt(file, 0, PACKBEAM_MAGIC.length);
    if (!magic.equals(PACKBEAM_MAGIC)) {
      throw new FirmwareFormatError(
        'is not an AtomVM packbeam (it does not start with "#!/usr/bin/env AtomVM")',
      );
    }
    return await walk(file, size);
  } finally {
    await file.close();
  }
}

interface DataEntry extends PackbeamEntry {
  /** Offset of the entry's data (after the padded name). */
  readonly dataOffset: number;
}

async function walk(file: FileHandle, size: number): Promise<Packbeam> {
  const entries: DataEntry[] = [];
  let offset = PACKBEAM_MAGIC.length;
  let endOffset: number | null = null;
  while (endOffset === null) {
    if (offset === size) throw malformed('it ends without an end entry');
    if (size - offset < PACKBEAM_ENTRY_HEADER_SIZE) {
      throw malformed(`the entry header at offset ${offset} is cut off by the end of the file`);
    }
    const header = await readAt(file, offset, PACKBEAM_ENTRY_HEADER_SIZE + MAX_ENTRY_NAME_LENGTH + 1);
    const entrySize = header.readUInt32BE(0);
    const flags = header.readUInt32BE(4);
    if (entrySize === 0) {
      endOffset = offset + PACKBEAM_ENTRY_HEADER_SIZE;
      break;
    }
    const entry = parseEntry(header, offset, entrySize, flags, size);
    if (flags === 0) {
      endOffset = offset + entrySize;
      break;
    }
    if (entries.length === MAX_PACKBEAM_ENTRIES) {
      throw malformed(`it has more than ${MAX_PACKBEAM_ENTRIES} entries`);
    }
    entries.push(entry);
    offset += entrySize;
  }

  const signatureIndex = entries.findIndex((e) => e.name === SIGNATURE_ENTRY_NAME);
  let signature: PackbeamSignature | null = null;
  if (signatureIndex >= 0) {
    if (signatureIndex !== entries.length - 1) {
      throw malformed(`${SIGNATURE_ENTRY_NAME} must be the last entry before the end entry`);
    }
    if (endOffset !== size) {
      throw malformed(`${size - endOffset} bytes follow the end entry, outside the signature`);
    }
    const entry = entries[signatureIndex];
    const payload = await readFileData(file, entry, SIGNATURE_PAYLOAD_SIZE);
    if (payload.length !== SIGNATURE_PAYLOAD_SIZE || !payload.subarray(0, 4).equals(SIGNATURE_PREFIX)) {
      throw malformed(
        `${SIGNATURE_ENTRY_NAME} is not "NH1", version 1 and a ${ED25519_SIGNATURE_SIZE}-byte ed25519 signature`,
      );
    }
    signature = { signature: payload.subarray(SIGNATURE_PREFIX.length), signedLength: entry.offset };
  }

  const applicationEntry = entries.find((e) => isApplicationBin(e.name));
  if (!applicationEntry) {
    throw new FirmwareFormatError(
      'is a packbeam without <app>/priv/application.bin, which gives the application name and version ' +
        '(build it with the application, e.g. rebar3 atomvm packbeam)',
    );
  }
  const metadata = applicationMetadata(
    await readFileData(file, applicationEntry, MAX_APPLICATION_BIN_SIZE),
    applicationEntry.name,
  );

  return {
    tool: 'atomvm',
    size,
    entries: entries.map(({ name, flags, offset: at, size: entrySize }) => ({
      name,
      flags,
      offset: at,
      size: entrySize,
    })),
    ...metadata,
    signature,
  };
}

function parseEntry(
  header: Buffer,
  offset: number,
  entrySize: number,
  flags: number,
  fileSize: number,
): DataEntry {
  if (entrySize < PACKBEAM_ENTRY_HEADER_SIZE + 1) {
    throw malformed(`the entry at offset ${offset} declares ${entrySize} bytes, less than its header`);
  }
  if (entrySize > fileSize - offset) {
    throw malformed(`the entry at offset ${offset} declares ${entrySize} bytes, past the end of the file`);
  }
  const nameArea = header.subarray(PACKBEAM_ENTRY_HEADER_SIZE, Math.min(header.length, entrySize));
  const nul = nameArea.indexOf(0);
  if (nul < 0) {
    throw malformed(
      `the name of the entry at offset ${offset} has no terminating NUL within ` +
        `${Math.min(nameArea.length, MAX_ENTRY_NAME_LENGTH + 1)} bytes`,
    );
  }
  const name = nameArea.subarray(0, nul).toString('utf8');
  const dataStart = (PACKBEAM_ENTRY_HEADER_SIZE + nul + 1 + 3) & ~3;
  if (dataStart > entrySize) {
    throw malformed(`the entry "${name}" at offset ${offset} is too small for its own name`);
  }
  return { name, flags, offset, size: entrySize, dataOffset: offset + dataStart };
}

function isApplicationBin(name: string): boolean {
  const parts = name.split('/');
  return parts.length === 3 && parts[0] !== '' && parts[1] === 'priv' && parts[2] === 'application.bin';
}

/** A plain file entry's bytes: a 4-byte big-endian length, then that many bytes (at most `limit`). */
async function readFileData(file: FileHandle, entry: DataEntry, limit: number): Promise<Buffer> {
  const available = entry.offset + entry.size - entry.dataOffset;
  if (available < 4) throw malformed(`the entry "${entry.name}" has no length word`);
  const length = (await readAt(file, entry.dataOffset, 4)).readUInt32BE(0);
  if (length > available - 4) {
    throw malformed(`the entry "${entry.name}" declares ${length} bytes of data, more than it holds`);
  }
  if (length > limit) throw malformed(`the entry "${entry.name}" is larger than ${limit} bytes`);
  return readAt(file, entry.dataOffset + 4, length);
}

function applicationMetadata(
  data: Buffer,
  entryName: string,
): { application: string; version: string; description: string | null } {
  let term: ErlangTerm;
  try {
    term = decodeErlangTerm(data);
  } catch (err) {
    if (err instanceof ErlangTermError) throw malformed(`${entryName} ${err.message}`);
    throw err;
  }
  const notAnApplication = () =>
    new FirmwareFormatError(`has a ${entryName} that is not {application, Name, [Properties]}`);
  if (term.type !== 'tuple' || term.elements.length !== 3) throw notAnApplication();
  const [tag, name, properties] = term.elements;
  if (tag.type !== 'atom' || tag.value !== 'application' || name.type !== 'atom') throw notAnApplication();
  if (name.value === '') throw new FirmwareFormatError(`has an empty application name in ${entryName}`);
  if (properties.type !== 'list' && properties.type !== 'nil') throw notAnApplication();
  const property = (key: string): ErlangTerm | undefined => {
    if (properties.type !== 'list') return undefined;
    for (const element of properties.elements) {
      if (
        element.type === 'tuple' &&
        element.elements.length === 2 &&
        element.elements[0].type === 'atom' &&
        element.elements[0].value === key
      ) {
        return element.elements[1];
      }
    }
    return undefined;
  };
  const vsn = property('vsn');
  if (vsn === undefined) throw new FirmwareFormatError(`has no vsn in ${entryName}`);
  const version = termText(vsn);
  if (version === null || vsn.type === 'atom') {
    throw new FirmwareFormatError(`has a vsn in ${entryName} that is not a string`);
  }
  const descriptionTerm = property('description');
  const description = descriptionTerm === undefined ? null : termText(descriptionTerm);
  return { application: name.value, version, description: description === '' ? null : description };
}
