/**
 * Writes AtomVM packbeams for tests, byte for byte as atomvm_packbeam lays them out: the 24-byte magic, entries of
 * (size, flags, reserved: big-endian u32; a NUL-terminated name padded to 4 bytes; data padded to 4 bytes), and
 * the `end` entry. Plain files hold a 4-byte length before their bytes. `application.bin` is the external term
 * format of `{application, Name, Props}`, encoded here by hand (see `etf`). A signed packbeam carries
 * `nerves_hub/signature` last: "NH1", version 1 and the ed25519 signature of every byte before that entry.
 */
import { sign, type KeyObject } from 'node:crypto';
import { writeFile } from 'node:fs/promises';

export const PACKBEAM_MAGIC = Buffer.from('#!/usr/bin/env AtomVM\n\0\0', 'latin1');
export const BEAM_START_FLAG = 1;
export const BEAM_CODE_FLAG = 2;
export const NORMAL_FILE_FLAG = 4;

/** Hand-written external term format encoders (after the version byte 131). */
export const etf = {
  atom(name: string): Buffer {
    const bytes = Buffer.from(name, 'utf8');
    return bytes.length < 256
      ? Buffer.concat([Buffer.from([119, bytes.length]), bytes])
      : Buffer.concat([Buffer.from([118, bytes.length >> 8, bytes.length & 0xff]), bytes]);
  },
  /** ATOM_EXT (tag 100), what OTP before 26 wrote. */
  latin1Atom(name: string): Buffer {
    const bytes = Buffer.from(name, 'latin1');
    return Buffer.concat([Buffer.from([100, bytes.length >> 8, bytes.length & 0xff]), bytes]);
  },
  /** A charlist: STRING_EXT when every character is a byte, else a LIST of integers. */
  string(text: string): Buffer {
    const codePoints = [...text].map((c) => c.codePointAt(0)!);
    if (codePoints.length === 0) return Buffer.from([106]);
    if (codePoints.every((c) => c < 256) && codePoints.length < 65536) {
      const head = Buffer.from([107, 0, 0]);
      head.writeUInt16BE(codePoints.length, 1);
      return Buffer.concat([head, Buffer.from(codePoints)]);
    }
    return etf.list(codePoints.map((c) => etf.integer(c)));
  },
  binary(bytes: Buffer | string): Buffer {
    const data = Buffer.from(bytes);
    const head = Buffer.from([109, 0, 0, 0, 0]);
    head.writeUInt32BE(data.length, 1);
    return Buffer.concat([head, data]);
  },
  integer(value: number): Buffer {
    if (value >= 0 && value < 256) return Buffer.from([97, value]);
    const out = Buffer.from([98, 0, 0, 0, 0]);
    out.writeInt32BE(value, 1);
    return out;
  },
  tuple(...elements: Buffer[]): Buffer {
    if (elements.length < 256) return Buffer.concat([Buffer.from([104, elements.length]), ...elements]);
    const head = Buffer.from([105, 0, 0, 0, 0]);
    head.writeUInt32BE(elements.length, 1);
    return Buffer.concat([head, ...elements]);
  },
  list(elements: Buffer[], tail: Buffer = Buffer.from([106])): Buffer {
    if (elements.length === 0 && tail.equals(Buffer.from([106]))) return tail;
    const head = Buffer.from([108, 0, 0, 0, 0]);
    head.writeUInt32BE(elements.length, 1);
    return Buffer.concat([head, ...elements, tail]);
  },
  float(value: number): Buffer {
    const out = Buffer.alloc(9);
    out[0] = 70;
    out.writeDoubleBE(value, 1);
    return out;
  },
  map(pairs: [Buffer, Buffer][]): Buffer {
    const head = Buffer.from([116, 0, 0, 0, 0]);
    head.writeUInt32BE(pairs.length, 1);
    return Buffer.concat([head, ...pairs.flat()]);
  },
  /** term_to_binary: the version byte, then the term. */
  encode(term: Buffer): Buffer {
    return Buffer.concat([Buffer.from([131]), term]);
  },
};

/** `{application, Name, [{description, D}, {vsn, V}, ...]}` as `term_to_binary` writes it. */
export function applicationTerm(options: {
  name: string;
  vsn?: string | null;
  description?: string | null;
  extra?: Buffer[];
}): Buffer {
  const props: Buffer[] = [];
  if (options.description !== null) {
    props.push(
      etf.tuple(etf.atom('description'), etf.string(options.description ?? 'An AtomVM application')),
    );
  }
  if (options.vsn !== null) props.push(etf.tuple(etf.atom('vsn'), etf.string(options.vsn ?? '0.1.0')));
  props.push(
    etf.tuple(etf.atom('registered'), etf.list([])),
    etf.tuple(etf.atom('applications'), etf.list([etf.atom('kernel'), etf.atom('stdlib')])),
    etf.tuple(etf.atom('mod'), etf.tuple(etf.atom(`${options.name}_app`), etf.list([]))),
    ...(options.extra ?? []),
  );
  return etf.encode(etf.tuple(etf.atom('application'), etf.atom(options.name), etf.list(props)));
}

export interface PackbeamEntrySpec {
  name: string;
  flags: number;
  /** The entry's data as stored (for plain files, use `fileData`). */
  data: Buffer;
}

const align4 = (n: number) => (n + 3) & ~3;

/** One entry: header, NUL-terminated name padded to 4 bytes, data padded to 4 bytes. */
export function packbeamEntry({ name, flags, data }: PackbeamEntrySpec): Buffer {
  const nameBytes = Buffer.from(`${name}\0`, 'utf8');
  const headerSize = align4(12 + nameBytes.length);
  const size = headerSize + align4(data.length);
  const out = Buffer.alloc(size);
  out.writeUInt32BE(size, 0);
  out.writeUInt32BE(flags, 4);
  nameBytes.copy(out, 12);
  data.copy(out, headerSize);
  return out;
}

/** A plain file's data: 4-byte big-endian length, then the bytes. */
export function fileData(content: Buffer): Buffer {
  const head = Buffer.alloc(4);
  head.writeUInt32BE(content.length, 0);
  return Buffer.concat([head, content]);
}

export const END_ENTRY = packbeamEntry({ name: 'end', flags: 0, data: Buffer.alloc(0) });

/** A fake BEAM module: "FOR1" IFF container, as packbeam stores modules. */
export function beamModule(name: string, size = 200): PackbeamEntrySpec {
  const body = Buffer.alloc(size, name.length);
  Buffer.from('FOR1').copy(body, 0);
  body.writeUInt32BE(size - 8, 4);
  Buffer.from('BEAM').copy(body, 8);
  return { name: `${name}.beam`, flags: BEAM_CODE_FLAG, data: body };
}

export interface PackbeamOptions {
  application?: string;
  vsn?: string | null;
  description?: string | null;
  /** The application.bin bytes (external term format) instead of `applicationTerm(...)`. */
  applicationBin?: Buffer | null;
  /** Entries before application.bin (default: a start module) and after it. */
  before?: PackbeamEntrySpec[];
  after?: PackbeamEntrySpec[];
  /** Sign with this ed25519 key: a nerves_hub/signature entry before the end entry. */
  signWith?: KeyObject;
  /** Flip one bit of the signature after signing. */
  corruptSignature?: boolean;
  /** Raw bytes of the signature entry's payload (instead of NH1 + version + signature). */
  signaturePayload?: Buffer;
  /** Leave the end entry out. */
  noEnd?: boolean;
  /** Bytes after the end entry. */
  trailing?: Buffer;
}

export interface BuiltPackbeam {
  bytes: Buffer;
  /** Offset of the signature entry (what the signature covers), or null. */
  signedLength: number | null;
}

export function buildPackbeam(options: PackbeamOptions = {}): BuiltPackbeam {
  const application = options.application ?? 'hello';
  const applicationBin =
    options.applicationBin === undefined
      ? applicationTerm({ name: application, vsn: options.vsn, description: options.description })
      : options.applicationBin;
  const entries: PackbeamEntrySpec[] = [
    ...(options.before ?? [{ ...beamModule(application), flags: BEAM_START_FLAG | BEAM_CODE_FLAG }]),
  ];
  if (applicationBin !== null) {
    entries.push({
      name: `${application}/priv/application.bin`,
      flags: NORMAL_FILE_FLAG,
      data: fileData(applicationBin),
    });
  }
  entries.push(...(options.after ?? [beamModule(`${application}_app`)]));
  let bytes = Buffer.concat([PACKBEAM_MAGIC, ...entries.map(packbeamEntry)]);
  let signedLength: number | null = null;
  if (options.signWith || options.signaturePayload) {
    signedLength = bytes.length;
    let payload = options.signaturePayload;
    if (!payload) {
      const signature = sign(null, bytes, options.signWith!);
      if (options.corruptSignature) signature[17] ^= 0x04;
      payload = Buffer.concat([Buffer.from('NH1\x01', 'latin1'), signature]);
    }
    bytes = Buffer.concat([
      bytes,
      packbeamEntry({ name: 'nerves_hub/signature', flags: NORMAL_FILE_FLAG, data: fileData(payload) }),
    ]);
  }
  bytes = Buffer.concat([
    bytes,
    options.noEnd ? Buffer.alloc(0) : END_ENTRY,
    options.trailing ?? Buffer.alloc(0),
  ]);
  return { bytes, signedLength };
}

export async function writePackbeam(path: string, options: PackbeamOptions = {}): Promise<BuiltPackbeam> {
  const built = buildPackbeam(options);
  await writeFile(path, built.bytes);
  return built;
}
