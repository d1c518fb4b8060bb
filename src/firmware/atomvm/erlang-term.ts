/*
 * A small decoder of the Erlang external term format, for the terms AtomVM's packbeam stores in
 * `<app>/priv/application.bin` (`term_to_binary({application, Name, Props})`). It decodes integers, atoms,
 * strings, binaries, tuples and lists, and skips floats, big integers and maps (an application's `env` may hold
 * them). Anything else, a truncated term, trailing bytes or nesting deeper than MAX_TERM_DEPTH is an
 * `ErlangTermError`.
 */

export type ErlangTerm =
  | { readonly type: 'integer'; readonly value: number }
  | { readonly type: 'atom'; readonly value: string }
  /** STRING_EXT: a list of bytes. */
  | { readonly type: 'bytes'; readonly value: Buffer }
  | { readonly type: 'binary'; readonly value: Buffer }
  | { readonly type: 'tuple'; readonly elements: readonly ErlangTerm[] }
  | { readonly type: 'list'; readonly elements: readonly ErlangTerm[]; readonly tail: ErlangTerm }
  | { readonly type: 'nil' }
  /** A float, big integer or map: well-formed, not needed. */
  | { readonly type: 'other' };

export class ErlangTermError extends Error {
  override readonly name = 'ErlangTermError';
}

export const MAX_TERM_DEPTH = 64;
const VERSION = 131;
const COMPRESSED = 80;

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

/** Decodes a whole `term_to_binary` result (version byte 131, one term, nothing after it). */
export function decodeErlangTerm(bytes: Buffer): ErlangTerm {
  const reader = new Reader(bytes);
  const version = reader.u8();
  if (version !== VERSION)
    throw new ErlangTermError(`does not start with version byte 131 (found ${version})`);
  if (bytes[1] === COMPRESSED) throw new ErlangTermError('is a compressed term, which is not supported');
  const term = decode(reader, 0);
  if (reader.remaining !== 0) throw new ErlangTermError(`has ${reader.remaining} bytes after the term`);
  return term;
}

/** A count of elements that each need at least `minBytes` bytes cannot exceed what is left. */
function checkCount(reader: Reader, count: number, minBytes: number): void {
  if (count * minBytes > reader.remaining) throw new ErlangTermError('the term is truncated');
}

function decode(reader: Reader, depth: number): ErlangTerm {
  if (depth > MAX_TERM_DEPTH) throw new ErlangTermError(`nests deeper than ${MAX_TERM_DEPTH} levels`);
  const tag = reader.u8();
  switch (tag) {
    case 97: // SMALL_INTEGER_EXT
      return { type: 'integer', value: reader.u8() };
    case 98: // INTEGER_EXT
      return { type: 'integer', value: reader.take(4).readInt32BE(0) };
    case 100: // ATOM_EXT (Latin-1)
      return { type: 'atom', value: reader.take(reader.u16()).toString('latin1') };
    case 115: // SMALL_ATOM_EXT (Latin-1)
      return { type: 'atom', value: reader.take(reader.u8()).toString('latin1') };
    case 118: // ATOM_UTF8_EXT
      return { type: 'atom', value: reader.take(reader.u16()).toString('utf8') };
    case 119: // SMALL_ATOM_UTF8_EXT
      return { type: 'atom', value: reader.take(reader.u8()).toString('utf8') };
    case 106: // NIL_EXT
      return { type: 'nil' };
    case 107: // STRING_EXT
      return { type: 'bytes', value: reader.take(reader.u16()) };
    case 109: // BINARY_EXT
      return { type: 'binary', value: reader.take(reader.u32()) };
    case 104: // SMALL_TUPLE_EXT
      return { type: 'tuple', elements: decodeMany(reader, reader.u8(), depth) };
    case 105: // LARGE_TUPLE_EXT
      return { type: 'tuple', elements: decodeMany(reader, reader.u32(), depth) };
    case 108: {
      // LIST_EXT: length, elements, tail
      const elements = decodeMany(reader, reader.u32(), depth);
      return { type: 'list', elements, tail: decode(reader, depth + 1) };
    }
    case 70: // NEW_FLOAT_EXT
      reader.take(8);
      return { type: 'other' };
    case 99: // FLOAT_EXT
      reader.take(31);
      return { type: 'other' };
    case 110: // SMALL_BIG_EXT
      reader.take(reader.u8() + 1);
      return { type: 'other' };
    case 111: // LARGE_BIG_EXT
      reader.take(reader.u32() + 1);
      return { type: 'other' };
    case 116: {
      // MAP_EXT
      const pairs = reader.u32();
      checkCount(reader, pairs, 2);
      decodeMany(reader, pairs * 2, depth);
      return { type: 'other' };
    }
    default:
      throw new ErlangTermError(`holds an unsupported term (tag ${tag})`);
  }
}

function decodeMany(reader: Reader, count: number, depth: number): ErlangTerm[] {
  checkCount(reader, count, 1);
  const elements: ErlangTerm[] = [];
  for (let i = 0; i < count; i += 1) elements.push(decode(reader, depth + 1));
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
    case 'tuple':
    case 'other':
      return null;
  }
}
