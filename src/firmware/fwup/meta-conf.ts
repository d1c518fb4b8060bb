import { FirmwareFormatError } from './firmware-format-error';
import { UNTERMINATED_STRING } from '../firmware.errors';

/**
 * The `meta-*` settings of an fwup `meta.conf`, decoded. A setting that meta.conf does not contain is null.
 * Unknown `meta-*` settings and every other setting or section (`file-resource`, `task`, `mbr`, ...) are skipped,
 * as fwup itself ignores options it does not know.
 */
export interface FwupMetadata {
  /** Update tool of the archive; a meta.conf always belongs to fwup. */
  readonly tool: 'fwup';
  readonly product: string | null;
  readonly description: string | null;
  readonly version: string | null;
  readonly author: string | null;
  readonly platform: string | null;
  readonly architecture: string | null;
  readonly vcsIdentifier: string | null;
  readonly misc: string | null;
  /**
   * `meta-creation-date` when meta.conf sets it (fwup before 1.2 did). Newer fwup derives the date from the
   * meta.conf entry's modification time instead: `readFirmwareArchive` fills that in.
   */
  readonly creationDate: string | null;
  /** `meta-fwup-version`, written by old fwup versions only. */
  readonly fwupVersion: string | null;
  /**
   * `meta-uuid` as written in meta.conf. fwup never writes it and refuses a meta.conf that sets it; the uuid of a
   * firmware is `computeMetaUuid(metaConf)`.
   */
  readonly uuid: string | null;
  /** `meta-nickname` as written in meta.conf; like `uuid`, fwup computes it and refuses a meta.conf that sets it. */
  readonly nickname: string | null;
}

type MetadataField = Exclude<keyof FwupMetadata, 'tool'>;

const META_KEYS: Readonly<Record<string, MetadataField>> = {
  'meta-product': 'product',
  'meta-description': 'description',
  'meta-version': 'version',
  'meta-author': 'author',
  'meta-platform': 'platform',
  'meta-architecture': 'architecture',
  'meta-vcs-identifier': 'vcsIdentifier',
  'meta-misc': 'misc',
  'meta-creation-date': 'creationDate',
  'meta-fwup-version': 'fwupVersion',
  'meta-uuid': 'uuid',
  'meta-nickname': 'nickname',
};

/** fwup's own sections nest three levels deep; anything much deeper is not a meta.conf. */
const MAX_SECTION_DEPTH = 16;

export type Punctuation = '{' | '}' | '(' | ')' | '=' | '+=' | ',';

export type Token =
  | {
      readonly kind: 'string';
      readonly bytes: Buffer;
      readonly usesEnvironment: boolean;
      readonly line: number;
    }
  | { readonly kind: Punctuation; readonly line: number }
  | { readonly kind: 'comment'; readonly line: number }
  | { readonly kind: 'end'; readonly line: number };

export type StringToken = Extract<Token, { kind: 'string' }>;

const SPACE = 0x20;
const TAB = 0x09;
const LF = 0x0a;
const CR = 0x0d;
const QUOTE = 0x22;
const APOSTROPHE = 0x27;
const BACKSLASH = 0x5c;
const HASH = 0x23;
const SLASH = 0x2f;
const STAR = 0x2a;
const PLUS = 0x2b;
const EQUALS = 0x3d;
const DOLLAR = 0x24;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;

const PUNCTUATION: Readonly<Record<number, Punctuation>> = {
  [OPEN_BRACE]: '{',
  [CLOSE_BRACE]: '}',
  0x28: '(',
  0x29: ')',
  [EQUALS]: '=',
  0x2c: ',',
};

/** Bytes that end an unquoted string (libconfuse's lexer). */
const UNQUOTED_STOP = new Set([
  SPACE,
  HASH,
  QUOTE,
  APOSTROPHE,
  TAB,
  LF,
  CR,
  EQUALS,
  OPEN_BRACE,
  CLOSE_BRACE,
  0x28, // (
  0x29, // )
  PLUS,
  0x2c, // ,
  STAR,
]);

const SIMPLE_ESCAPES: Readonly<Record<number, number>> = {
  0x6e: 0x0a, // \n
  0x72: 0x0d, // \r
  0x62: 0x08, // \b
  0x66: 0x0c, // \f
  0x61: 0x07, // \a
  0x65: 0x1b, // \e
  0x74: 0x09, // \t
  0x76: 0x0b, // \v
};

const isDigit = (b: number | undefined): boolean => b !== undefined && b >= 0x30 && b <= 0x39;
const isOctal = (b: number | undefined): boolean => b !== undefined && b >= 0x30 && b <= 0x37;
const isHex = (b: number | undefined): boolean =>
  b !== undefined && (isDigit(b) || (b >= 0x41 && b <= 0x46) || (b >= 0x61 && b <= 0x66));

export function syntaxError(line: number, detail: string): FirmwareFormatError {
  return new FirmwareFormatError(`meta.conf has a syntax error on line ${line}: ${detail}`);
}

/**
 * Tokenizer following libconfuse's lexer: unquoted strings, "double-quoted" strings with C escapes, 'single-quoted'
 * strings, `${VAR}` references, `#`, `//` and C comments (`//` starts a comment only where a token would start:
 * `a//b` is one string). Characters the lexer has no rule for (`*`, a lone `+`, CR) are dropped, as libconfuse
 * drops them.
 */
export class Lexer {
  private pos = 0;
  private line = 1;
  /** `${` starts a variable reference only when a `}` follows somewhere. */
  private readonly lastCloseBrace: number;

  constructor(private readonly src: Buffer) {
    this.lastCloseBrace = src.lastIndexOf(CLOSE_BRACE);
  }

  private atEnvironmentReference(): boolean {
    return (
      this.src[this.pos] === DOLLAR &&
      this.src[this.pos + 1] === OPEN_BRACE &&
      this.pos + 2 <= this.lastCloseBrace
    );
  }

  next(): Token {
    const src = this.src;
    for (;;) {
      if (this.pos >= src.length) return { kind: 'end', line: this.line };
      const b = src[this.pos];
      if (b === SPACE || b === TAB) {
        this.pos++;
      } else if (b === LF) {
        this.pos++;
        this.line++;
      } else if (b === HASH) {
        return this.lineComment();
      } else if (b === SLASH && src[this.pos + 1] === SLASH) {
        return this.lineComment();
      } else if (b === SLASH && src[this.pos + 1] === STAR) {
        return this.blockComment();
      } else if (b === QUOTE) {
        return this.doubleQuoted();
      } else if (b === APOSTROPHE) {
        return this.singleQuoted();
      } else if (b === PLUS) {
        this.pos++;
        if (src[this.pos] === EQUALS) {
          this.pos++;
          return { kind: '+=', line: this.line };
        }
      } else if (PUNCTUATION[b] !== undefined) {
        this.pos++;
        return { kind: PUNCTUATION[b], line: this.line };
      } else if (this.atEnvironmentReference()) {
        return this.environmentReference();
      } else if (UNQUOTED_STOP.has(b)) {
        this.pos++;
      } else {
        return this.unquoted();
      }
    }
  }

  private lineComment(): Token {
    const line = this.line;
    const end = this.src.indexOf(LF, this.pos);
    this.pos = end < 0 ? this.src.length : end;
    return { kind: 'comment', line };
  }

  /** Like libconfuse, a comment left open runs to the end of the file. */
  private blockComment(): Token {
    const line = this.line;
    const close = this.src.indexOf('*/', this.pos + 2);
    const end = close < 0 ? this.src.length : close + 2;
    this.line += countLineFeeds(this.src, this.pos, end);
    this.pos = end;
    return { kind: 'comment', line };
  }

  private environmentReference(): Token {
    const line = this.line;
    const end = this.src.indexOf(CLOSE_BRACE, this.pos + 2);
    this.line += countLineFeeds(this.src, this.pos, end);
    this.pos = end + 1;
    return { kind: 'string', bytes: Buffer.alloc(0), usesEnvironment: true, line };
  }

  private unquoted(): Token {
    const start = this.pos;
    let end = start;
    while (end < this.src.length && !UNQUOTED_STOP.has(this.src[end])) end++;
    this.pos = end;
    return { kind: 'string', bytes: this.src.subarray(start, end), usesEnvironment: false, line: this.line };
  }

  private doubleQuoted(): Token {
    const src = this.src;
    const line = this.line;
    const out: number[] = [];
    let usesEnvironment = false;
    this.pos++;
    for (;;) {
      if (this.pos >= src.length) throw syntaxError(line, UNTERMINATED_STRING);
      const b = src[this.pos];
      if (b === QUOTE) {
        this.pos++;
        return { kind: 'string', bytes: Buffer.from(out), usesEnvironment, line };
      }
      if (b === LF) {
        this.line++;
        out.push(b);
        this.pos++;
      } else if (this.atEnvironmentReference()) {
        const end = src.indexOf(CLOSE_BRACE, this.pos + 2);
        this.line += countLineFeeds(src, this.pos, end);
        usesEnvironment = true;
        this.pos = end + 1;
      } else if (b === BACKSLASH) {
        this.escape(out);
      } else {
        out.push(b);
        this.pos++;
      }
    }
  }

  private escape(out: number[]): void {
    const src = this.src;
    const next = src[this.pos + 1];
    if (next === undefined) throw syntaxError(this.line, UNTERMINATED_STRING);
    if (next === LF) {
      this.line++;
      this.pos += 2;
      return;
    }
    if (isDigit(next)) {
      let digits = 0;
      while (isDigit(src[this.pos + 1 + digits])) digits++;
      let octalDigits = 0;
      while (octalDigits < 3 && isOctal(src[this.pos + 1 + octalDigits])) octalDigits++;
      // libconfuse takes the longest match of `\[0-7]{1,3}` and `\[0-9]+`; the latter is an error.
      if (octalDigits === 0 || digits > octalDigits) {
        throw syntaxError(
          this.line,
          `bad escape sequence '\\${src.toString('latin1', this.pos + 1, this.pos + 1 + digits)}'`,
        );
      }
      const value = parseInt(src.toString('latin1', this.pos + 1, this.pos + 1 + octalDigits), 8);
      if (value > 0xff) throw syntaxError(this.line, 'octal escape sequence out of range');
      out.push(value);
      this.pos += 1 + octalDigits;
      return;
    }
    if (next === 0x78 && isHex(src[this.pos + 2])) {
      const hexDigits = isHex(src[this.pos + 3]) ? 2 : 1;
      out.push(parseInt(src.toString('latin1', this.pos + 2, this.pos + 2 + hexDigits), 16));
      this.pos += 2 + hexDigits;
      return;
    }
    out.push(SIMPLE_ESCAPES[next] ?? next);
    this.pos += 2;
  }

  private singleQuoted(): Token {
    const src = this.src;
    const line = this.line;
    const out: number[] = [];
    this.pos++;
    for (;;) {
      if (this.pos >= src.length) throw syntaxError(line, UNTERMINATED_STRING);
      const b = src[this.pos];
      if (b === APOSTROPHE) {
        this.pos++;
        return { kind: 'string', bytes: Buffer.from(out), usesEnvironment: false, line };
      }
      if (b === BACKSLASH && this.pos + 1 < src.length) {
        const next = src[this.pos + 1];
        if (next === LF) {
          this.line++;
        } else if (next === BACKSLASH || next === APOSTROPHE) {
          out.push(next);
        } else {
          out.push(b, next);
        }
        this.pos += 2;
      } else {
        if (b === LF) this.line++;
        out.push(b);
        this.pos++;
      }
    }
  }
}

function countLineFeeds(src: Buffer, from: number, to: number): number {
  let n = 0;
  for (let i = from; i < to; i++) if (src[i] === LF) n++;
  return n;
}

function describe(token: Token): string {
  if (token.kind === 'string') return 'a string';
  if (token.kind === 'comment') return 'a comment';
  if (token.kind === 'end') return 'the end of the file';
  return `'${token.kind}'`;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Schema-less parser for the statement forms libconfuse accepts:
 * `name = value`, `name = {v, ...}`, `name += ...`, `name(arg, ...)`, `name { ... }` and `name "title" { ... }`.
 */
class Parser {
  private readonly lexer: Lexer;
  private readonly values = new Map<MetadataField, string>();

  constructor(src: Buffer) {
    this.lexer = new Lexer(src);
  }

  parse(): Map<MetadataField, string> {
    this.statements(0);
    return this.values;
  }

  private statements(depth: number): void {
    for (;;) {
      const token = this.lexer.next();
      if (token.kind === 'comment') continue;
      if (token.kind === 'end') {
        if (depth > 0) throw syntaxError(token.line, "missing '}' at the end of the file");
        return;
      }
      if (token.kind === '}') {
        if (depth === 0) throw syntaxError(token.line, "unexpected '}'");
        return;
      }
      if (token.kind !== 'string')
        throw syntaxError(token.line, `expected an option name, found ${describe(token)}`);
      this.statement(token, depth);
    }
  }

  private statement(nameToken: StringToken, depth: number): void {
    const name = nameToken.bytes.toString('latin1');
    const metaField = depth === 0 ? META_KEYS[name] : undefined;
    const token = this.lexer.next();
    if (token.kind === '=' || token.kind === '+=') {
      const value = this.value();
      if (metaField === undefined) return;
      if (token.kind === '=' && value !== null) {
        this.values.set(metaField, this.decode(name, value));
        return;
      }
    } else if (token.kind === '(') {
      this.list(')');
    } else if (token.kind === '{') {
      this.section(depth, token.line);
    } else if (token.kind === 'string') {
      const brace = this.lexer.next();
      if (brace.kind !== '{')
        throw syntaxError(brace.line, `expected '{' after the title of section '${name}'`);
      this.section(depth, brace.line);
    } else {
      throw syntaxError(token.line, `expected '=' after option '${name}', found ${describe(token)}`);
    }
    if (metaField !== undefined) {
      throw new FirmwareFormatError(`meta.conf: ${name} must be a single string (line ${nameToken.line})`);
    }
  }

  private section(depth: number, line: number): void {
    if (depth + 1 > MAX_SECTION_DEPTH) throw syntaxError(line, 'sections are nested too deeply');
    this.statements(depth + 1);
  }

  /** A scalar value, or null for a `{...}` list. */
  private value(): StringToken | null {
    const token = this.lexer.next();
    if (token.kind === 'string') return token;
    if (token.kind === '{') {
      this.list('}');
      return null;
    }
    throw syntaxError(token.line, `expected a value, found ${describe(token)}`);
  }

  /** Comma-separated strings up to `close`; a trailing comma is accepted, as libconfuse accepts it. */
  private list(close: '}' | ')'): void {
    let expectValue = true;
    for (;;) {
      const token = this.lexer.next();
      if (token.kind === close) return;
      if (expectValue && token.kind === 'string') {
        expectValue = false;
      } else if (!expectValue && token.kind === ',') {
        expectValue = true;
      } else {
        throw syntaxError(token.line, `unexpected ${describe(token)} in a list`);
      }
    }
  }

  private decode(name: string, token: StringToken): string {
    if (token.usesEnvironment) {
      // fwup would substitute the variable from the environment of whoever reads the file.
      throw new FirmwareFormatError(
        `meta.conf: ${name} refers to an environment variable (line ${token.line})`,
      );
    }
    let text: string;
    try {
      text = utf8.decode(token.bytes);
    } catch {
      throw new FirmwareFormatError(`meta.conf: ${name} is not valid UTF-8 (line ${token.line})`);
    }
    if (text.includes('\0')) {
      throw new FirmwareFormatError(`meta.conf: ${name} contains a NUL character (line ${token.line})`);
    }
    return text;
  }
}

/**
 * Parses fwup's meta.conf (libconfuse syntax). Throws `FirmwareFormatError` for anything fwup could not parse, for
 * a `meta-*` setting that is not a single string, and for values that are not plain UTF-8 text.
 */
export function parseMetaConf(metaConf: Uint8Array | string): FwupMetadata {
  const src = typeof metaConf === 'string' ? Buffer.from(metaConf, 'utf8') : Buffer.from(metaConf);
  // libconfuse reads meta.conf as a C string: a NUL byte would silently cut it short.
  if (src.includes(0)) throw new FirmwareFormatError('meta.conf contains a NUL byte');
  const values = new Parser(src).parse();
  const get = (field: MetadataField): string | null => values.get(field) ?? null;
  return {
    tool: 'fwup',
    product: get('product'),
    description: get('description'),
    version: get('version'),
    author: get('author'),
    platform: get('platform'),
    architecture: get('architecture'),
    vcsIdentifier: get('vcsIdentifier'),
    misc: get('misc'),
    creationDate: get('creationDate'),
    fwupVersion: get('fwupVersion'),
    uuid: get('uuid'),
    nickname: get('nickname'),
  };
}

/** Metadata that NervesHub requires of every fwup firmware (besides the computed uuid). */
export const REQUIRED_METADATA_FIELDS = ['product', 'version', 'platform', 'architecture'] as const;

/** The required fields that are missing or blank, in `REQUIRED_METADATA_FIELDS` order. */
export function missingRequiredMetadata(metadata: FwupMetadata): (typeof REQUIRED_METADATA_FIELDS)[number][] {
  return REQUIRED_METADATA_FIELDS.filter((field) => (metadata[field] ?? '').trim() === '');
}
