/*
 * The Erlang external term format (`term_to_binary`), the part fleethub reads and writes: AtomVM's
 * `<app>/priv/application.bin` (`{application, Name, Props}`) and the NH1 token payload (`{identifier,
 * signed_at_ms, max_age_s}`). The decoder reads integers, big integers, atoms, strings, binaries, tuples, lists
 * and maps, and skips floats; anything else, a truncated term, trailing bytes or nesting deeper than the
 * caller's limit is an `ErlangTermError`. A caller may narrow the tags it accepts.
 */

export type ErlangTerm =
  | { readonly type: 'integer'; readonly value: number }
  /** SMALL_BIG_EXT or LARGE_BIG_EXT as sent: the sign byte (0 positive) and the little-endian magnitude. */
  | { readonly type: 'bigInteger'; readonly sign: number; readonly digits: Buffer }
  | { readonly type: 'atom'; readonly value: string }
  /** STRING_EXT: a list of bytes. */
  | { readonly type: 'bytes'; readonly value: Buffer }
  | { readonly type: 'binary'; readonly value: Buffer }
  | { readonly type: 'tuple'; readonly elements: readonly ErlangTerm[] }
  | { readonly type: 'list'; readonly elements: readonly ErlangTerm[]; readonly tail: ErlangTerm }
  | { readonly type: 'nil' }
  | { readonly type: 'map'; readonly pairs: readonly (readonly [ErlangTerm, ErlangTerm])[] }
  /** A float: well-formed, not needed. */
  | { readonly type: 'other' };

export class ErlangTermError extends Error {
  override readonly name = 'ErlangTermError';
}

/** The tags of the external term format that this module knows. */
export const TermTag = {
  VERSION: 131,
  COMPRESSED: 80,
  NEW_FLOAT: 70,
  SMALL_INTEGER: 97,
  INTEGER: 98,
  FLOAT: 99,
  ATOM: 100,
  SMALL_TUPLE: 104,
  LARGE_TUPLE: 105,
  NIL: 106,
  STRING: 107,
  LIST: 108,
  BINARY: 109,
  SMALL_BIG: 110,
  LARGE_BIG: 111,
  SMALL_ATOM: 115,
  MAP: 116,
  ATOM_UTF8: 118,
  SMALL_ATOM_UTF8: 119,
} as const;

export const MAX_TERM_DEPTH = 64;

export interface DecodeOptions {
  /** A term nested deeper than this is refused (the whole term is depth 0); MAX_TERM_DEPTH by default. */
  readonly maxDepth?: number;
  /** The only tags accepted (others are "unsupported"); every tag this module knows by default. */
  readonly tags?: ReadonlySet<number>;
}

class Reader {
  offset = 0;
  constructor(private readonly bytes: Buffer) {}

  get remaining(): number {
    return this.bytes.length - this.offset;
  }

  take(length: number): Buffer {
    if (length > this.remaining) throw new ErlangTermError('the term is truncated');
    const slice = this.bytes.subarray(this.offset, this.offset + length);
    this.offset += length;
    return slice;
  }

  u8(): number {
    return this.take(1)[0];
  }
  u16(): number {
    return this.take(2).readUInt16BE(0);
  }
  u32(): number {
    return this.take(4).readUInt32BE(0);
  }
}

interface Limits {
  readonly maxDepth: number;
  readonly tags: ReadonlySet<number> | null;
}

/** Decodes a whole `term_to_binary` result (version byte 131, one term, nothing after it). */
export function decodeErlangTerm(bytes: Buffer, options: DecodeOptions = {}): ErlangTerm {
  const limits: Limits = { maxDepth: options.maxDepth ?? MAX_TERM_DEPTH, tags: options.tags ?? null };
  const reader = new Reader(bytes);
  const version = reader.u8();
  if (version !== TermTag.VERSION)
    throw new ErlangTermError(`does not start with version byte 131 (found ${version})`);
  if (bytes[1] === TermTag.COMPRESSED)
    throw new ErlangTermError('is a compressed term, which is not supported');
  const term = decode(reader, 0, limits);
  if (reader.remaining !== 0) throw new ErlangTermError(`has ${reader.remaining} bytes after the term`);
  return term;
}

/** A count of elements that each need at least `minBytes` bytes cannot exceed what is left. */
function checkCount(reader: Reader, count: number, minBytes: number): void {
  if (count * minBytes > reader.remaining) throw new ErlangTermError('the term is truncated');
}

function decode(reader: Reader, depth: number, limits: Limits): ErlangTerm {
  if (depth > limits.maxDepth) throw new ErlangTermError(`nests deeper than ${limits.maxDepth} levels`);
  const tag = reader.u8();
  if (limits.tags !== null && !limits.tags.has(tag)) {
    throw new ErlangTermError(`holds an unsupported term (tag ${tag})`);
  }
  switch (tag) {
    case TermTag.SMALL_INTEGER:
      return { type: 'integer', value: reader.u8() };
    case TermTag.INTEGER:
      return { type: 'integer', value: reader.take(4).readInt32BE(0) };
    case TermTag.ATOM: // Latin-1
      return { type: 'atom', value: reader.take(reader.u16()).toString('latin1') };
    case TermTag.SMALL_ATOM: // Latin-1
      return { type: 'atom', value: reader.take(reader.u8()).toString('latin1') };
    case TermTag.ATOM_UTF8:
      return { type: 'atom', value: reader.take(reader.u16()).toString('utf8') };
    case TermTag.SMALL_ATOM_UTF8:
      return { type: 'atom', value: reader.take(reader.u8()).toString('utf8') };
    case TermTag.NIL:
      return { type: 'nil' };
    case TermTag.STRING:
      return { type: 'bytes', value: reader.take(reader.u16()) };
    case TermTag.BINARY:
      return { type: 'binary', value: reader.take(reader.u32()) };
    case TermTag.SMALL_TUPLE:
      return { type: 'tuple', elements: decodeMany(reader, reader.u8(), depth, limits) };
    case TermTag.LARGE_TUPLE:
      return { type: 'tuple', elements: decodeMany(reader, reader.u32(), depth, limits) };
    case TermTag.LIST: {
      // length, elements, tail
      const elements = decodeMany(reader, reader.u32(), depth, limits);
      return { type: 'list', elements, tail: decode(reader, depth + 1, limits) };
    }
    case TermTag.NEW_FLOAT:
      reader.take(8);
      return { type: 'other' };
    case TermTag.FLOAT:
      reader.take(31);
      return { type: 'other' };
    case TermTag.SMALL_BIG:
    case TermTag.LARGE_BIG: {
      const digits = reader.take((tag === TermTag.SMALL_BIG ? reader.u8() : reader.u32()) + 1);
      return { type: 'bigInteger', sign: digits[0], digits: digits.subarray(1) };
    }
    case TermTag.MAP: {
      const count = reader.u32();
      checkCount(reader, count, 2);
      const pairs: [ErlangTerm, ErlangTerm][] = [];
      for (let i = 0; i < count; i += 1) {
        pairs.push([decode(reader, depth + 1, limits), decode(reader, depth + 1, limits)]);
      }
      return { type: 'map', pairs };
    }
    default:
      throw new ErlangTermError(`holds an unsupported term (tag ${tag})`);
  }
}

function decodeMany(reader: Reader, count: number, depth: number, limits: Limits): ErlangTerm[] {
  checkCount(reader, count, 1);
  const elements: ErlangTerm[] = [];
  for (let i = 0; i < count; i += 1) elements.push(decode(reader, depth + 1, limits));
  return elements;
}

/** The text of a string-like term (charlist, STRING_EXT bytes, binary as UTF-8, or an atom); null otherwise. */
export function termText(term: ErlangTerm): string | null {
  switch (term.type) {
    case 'nil':
      return '';
    case 'bytes':
      return term.value.toString('latin1');
    case 'binary':
      return term.value.toString('utf8');
    case 'atom':
      return term.value;
    case 'list': {
      if (term.tail.type !== 'nil') return null;
      let text = '';
      for (const element of term.elements) {
        if (element.type !== 'integer' || element.value < 0 || element.value > 0x10ffff) return null;
        text += String.fromCodePoint(element.value);
      }
      return text;
    }
    case 'integer':
    case 'bigInteger':
    case 'tuple':
    case 'map':
    case 'other':
      return null;
  }
}

/** The value of an integer term (big integers included), or null for anything else. */
export function termInteger(term: ErlangTerm): bigint | null {
  if (term.type === 'integer') return BigInt(term.value);
  if (term.type !== 'bigInteger' || term.sign > 1) return null;
  const magnitude =
    term.digits.length === 0 ? 0n : BigInt(`0x${Buffer.from(term.digits).reverse().toString('hex')}`);
  return term.sign === 1 ? -magnitude : magnitude;
}

// ---- encoding: what fleethub writes (the NH1 payload) ----

/** An integer as `term_to_binary` writes it: SMALL_INTEGER_EXT, INTEGER_EXT or SMALL_BIG_EXT. */
export function encodeInteger(value: number): Buffer {
  if (!Number.isSafeInteger(value) || value < 0)
    throw new RangeError('a non-negative safe integer is required');
  if (value <= 0xff) return Buffer.from([TermTag.SMALL_INTEGER, value]);
  if (value <= 0x7fffffff) {
    const out = Buffer.alloc(5);
    out[0] = TermTag.INTEGER;
    out.writeInt32BE(value, 1);
    return out;
  }
  const digits: number[] = [];
  for (let rest = BigInt(value); rest > 0n; rest >>= 8n) digits.push(Number(rest & 0xffn));
  return Buffer.from([TermTag.SMALL_BIG, digits.length, 0, ...digits]);
}

/** BINARY_EXT. */
export function encodeBinary(bytes: Buffer): Buffer {
  const header = Buffer.alloc(5);
  header[0] = TermTag.BINARY;
  header.writeUInt32BE(bytes.length, 1);
  return Buffer.concat([header, bytes]);
}

/** SMALL_TUPLE_EXT of already encoded elements (at most 255). */
export function encodeTuple(elements: readonly Buffer[]): Buffer {
  if (elements.length > 0xff) throw new RangeError('a small tuple has at most 255 elements');
  return Buffer.concat([Buffer.from([TermTag.SMALL_TUPLE, elements.length]), ...elements]);
}

/** A whole `term_to_binary` result: the version byte and one encoded term. */
export function termToBinary(term: Buffer): Buffer {
  return Buffer.concat([Buffer.from([TermTag.VERSION]), term]);
}
