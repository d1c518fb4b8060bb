import semver from 'semver';
import { FirmwareFormatError } from './firmware-format-error';
import { Lexer, type StringToken, syntaxError, type Token } from './meta-conf';

/**
 * What an fwup `meta.conf` says about delta updates, read as NervesHub reads it (its `Confuse.Fwup` feature
 * usage): which resources a task may write from a delta (`delta-source-raw-*` with `raw_write`,
 * `delta-source-fat-*` with `fat_write`), which resources the upgrade tasks use at all, and the oldest fwup that
 * can apply a delta of this firmware.
 */
export interface DeltaFeatures {
  /** Some resource can be written from a raw or FAT delta: the firmware is delta-updatable. */
  readonly deltaCapable: boolean;
  /** Resources named by an `on-resource` with a `delta-source-*` setting in any task (sorted, once each). */
  readonly deltaResources: readonly string[];
  /** Resources named by an `on-resource` of an `upgrade` or `upgrade.*` task (sorted, once each). */
  readonly upgradeResources: readonly string[];
  readonly rawDeltas: boolean;
  readonly fatDeltas: boolean;
  readonly encryption: boolean;
  readonly encryptedDeltas: boolean;
  /** The oldest fwup that applies a delta of this firmware (see `deltaFwupVersion`). */
  readonly deltaFwupVersion: string;
  /** `block-cache-size-mb`, when set: the source window xdelta3 may use (`-B`). */
  readonly blockCacheSizeMb: number | null;
  /** Per resource, whether it is written raw / to FAT in some task (the source side of `compatibleSource`). */
  readonly writes: ReadonlyMap<string, { raw: boolean; fat: boolean }>;
  /** Per resource, whether some task writes it from a raw / FAT delta. */
  readonly deltaWrites: ReadonlyMap<string, { raw: boolean; fat: boolean; encrypted: boolean }>;
}

/** fwup releases that brought each feature (Confuse.Fwup's table). */
export const FWUP_VERSIONS = {
  minimum: '0.2.0',
  encryption: '1.5.0',
  rawDeltas: '1.6.0',
  fatDeltas: '1.10.0',
  encryptedDeltas: '1.13.0',
} as const;

type ConfNode =
  | { kind: 'option'; name: string; values: string[] }
  | { kind: 'call'; name: string; args: string[] }
  | { kind: 'section'; name: string; title: string | null; children: ConfNode[] };

const MAX_DEPTH = 16;

/** A schema-less tree of a meta.conf: options, calls and sections, in order (libconfuse's statement forms). */
class TreeParser {
  private readonly lexer: Lexer;

  constructor(src: Buffer) {
    this.lexer = new Lexer(src);
  }

  parse(): ConfNode[] {
    return this.statements(0);
  }

  private next(): Token {
    for (;;) {
      const token = this.lexer.next();
      if (token.kind !== 'comment') return token;
    }
  }

  private statements(depth: number): ConfNode[] {
    const nodes: ConfNode[] = [];
    for (;;) {
      const token = this.next();
      if (token.kind === 'end') {
        if (depth > 0) throw syntaxError(token.line, "missing '}' at the end of the file");
        return nodes;
      }
      if (token.kind === '}') {
        if (depth === 0) throw syntaxError(token.line, "unexpected '}'");
        return nodes;
      }
      if (token.kind !== 'string') throw syntaxError(token.line, 'expected an option name');
      nodes.push(this.statement(token, depth));
    }
  }

  private statement(nameToken: StringToken, depth: number): ConfNode {
    const name = text(nameToken);
    const token = this.next();
    if (token.kind === '=' || token.kind === '+=') {
      const value = this.next();
      if (value.kind === 'string') return { kind: 'option', name, values: [text(value)] };
      if (value.kind === '{') return { kind: 'option', name, values: this.list('}') };
      throw syntaxError(value.line, 'expected a value');
    }
    if (token.kind === '(') return { kind: 'call', name, args: this.list(')') };
    if (depth + 1 > MAX_DEPTH) throw syntaxError(token.line, 'sections are nested too deeply');
    if (token.kind === '{')
      return { kind: 'section', name, title: null, children: this.statements(depth + 1) };
    if (token.kind === 'string') {
      const brace = this.next();
      if (brace.kind !== '{') throw syntaxError(brace.line, `expected '{' after the title of '${name}'`);
      return { kind: 'section', name, title: text(token), children: this.statements(depth + 1) };
    }
    throw syntaxError(token.line, `expected '=' after option '${name}'`);
  }

  private list(close: '}' | ')'): string[] {
    const values: string[] = [];
    let expectValue = true;
    for (;;) {
      const token = this.next();
      if (token.kind === close) return values;
      if (expectValue && token.kind === 'string') {
        values.push(text(token));
        expectValue = false;
      } else if (!expectValue && token.kind === ',') {
        expectValue = true;
      } else {
        throw syntaxError(token.line, 'unexpected token in a list');
      }
    }
  }
}

function text(token: StringToken): string {
  return token.bytes.toString('latin1');
}

interface ResourceUse {
  rawOffset: boolean;
  rawCount: boolean;
  rawOptionsCipher: boolean;
  rawOptionsSecret: boolean;
  rawWrite: boolean;
  rawWriteCipher: boolean;
  rawWriteSecret: boolean;
  fatOffset: boolean;
  fatPath: boolean;
  fatWrite: boolean;
  anyDeltaSource: boolean;
}

const newUse = (): ResourceUse => ({
  rawOffset: false,
  rawCount: false,
  rawOptionsCipher: false,
  rawOptionsSecret: false,
  rawWrite: false,
  rawWriteCipher: false,
  rawWriteSecret: false,
  fatOffset: false,
  fatPath: false,
  fatWrite: false,
  anyDeltaSource: false,
});

/**
 * The functions of an `on-resource` body: `raw_write(...)` as written in a source fwup.conf, or fwup's compiled
 * form `funlist = {"<argc>", "<name>", <args>..., "<argc>", "<name>", ...}` as meta.conf holds it.
 */
function functionsOf(children: ConfNode[]): { name: string; args: string[] }[] {
  const functions: { name: string; args: string[] }[] = [];
  for (const node of children) {
    if (node.kind === 'call') functions.push({ name: node.name, args: node.args });
    if (node.kind === 'option' && node.name === 'funlist') {
      const list = node.values;
      for (let i = 0; i < list.length;) {
        const argc = Number(list[i]);
        if (!Number.isInteger(argc) || argc < 1 || i + argc >= list.length + 1) break;
        functions.push({ name: list[i + 1] ?? '', args: list.slice(i + 2, i + 1 + argc) });
        i += 1 + argc;
      }
    }
  }
  return functions;
}

function resourceUse(children: ConfNode[], use: ResourceUse): void {
  for (const node of children) {
    if (node.kind !== 'option') continue;
    const value = node.values.join(',');
    if (node.name.startsWith('delta-source-')) use.anyDeltaSource = true;
    if (node.name === 'delta-source-raw-offset') use.rawOffset = true;
    if (node.name === 'delta-source-raw-count') use.rawCount = true;
    if (node.name === 'delta-source-raw-options') {
      use.rawOptionsCipher = value.includes('cipher=');
      use.rawOptionsSecret = value.includes('secret=');
    }
    if (node.name === 'delta-source-fat-offset') use.fatOffset = true;
    if (node.name === 'delta-source-fat-path') use.fatPath = true;
  }
  for (const fn of functionsOf(children)) {
    if (fn.name === 'raw_write') {
      const options = fn.args.join(',');
      use.rawWrite = true;
      use.rawWriteCipher = options.includes('cipher=');
      use.rawWriteSecret = options.includes('secret=');
    }
    if (fn.name === 'fat_write') use.fatWrite = true;
  }
}

const rawDeltaValid = (u: ResourceUse) =>
  u.rawWrite &&
  u.rawOffset &&
  u.rawCount &&
  (!u.rawWriteCipher || (u.rawWriteSecret && u.rawOptionsCipher && u.rawOptionsSecret));
const fatDeltaValid = (u: ResourceUse) => u.fatWrite && u.fatOffset && u.fatPath;

function maxVersion(versions: string[]): string {
  return versions.reduce((a, b) => (semver.gt(b, a) ? b : a));
}

/** Reads a meta.conf's delta features; a meta.conf fwup could not parse is a `FirmwareFormatError`. */
export function readDeltaFeatures(metaConf: Uint8Array | string): DeltaFeatures {
  const src = typeof metaConf === 'string' ? Buffer.from(metaConf, 'utf8') : Buffer.from(metaConf);
  if (src.includes(0)) throw new FirmwareFormatError('meta.conf contains a NUL byte');
  const tree = new TreeParser(src).parse();
  const uses = new Map<string, ResourceUse>();
  const deltaResources = new Set<string>();
  const upgradeResources = new Set<string>();
  for (const task of tree) {
    if (task.kind !== 'section' || task.name !== 'task') continue;
    const title = task.title ?? '';
    const upgrade = title === 'upgrade' || title.startsWith('upgrade.');
    for (const node of task.children) {
      if (node.kind !== 'section' || node.name !== 'on-resource' || node.title === null) continue;
      // One record per resource across tasks, as Confuse keeps it (the flags of every task accumulate).
      const use = uses.get(node.title) ?? newUse();
      const before = use.anyDeltaSource;
      use.anyDeltaSource = false;
      resourceUse(node.children, use);
      if (use.anyDeltaSource) deltaResources.add(node.title);
      use.anyDeltaSource ||= before;
      uses.set(node.title, use);
      if (upgrade) upgradeResources.add(node.title);
    }
  }
  let rawDeltas = false;
  let fatDeltas = false;
  let encryption = false;
  let encryptedDeltas = false;
  const writes = new Map<string, { raw: boolean; fat: boolean }>();
  const deltaWrites = new Map<string, { raw: boolean; fat: boolean; encrypted: boolean }>();
  for (const [resource, use] of uses) {
    const raw = rawDeltaValid(use);
    const fat = fatDeltaValid(use);
    rawDeltas ||= raw;
    fatDeltas ||= fat;
    encryption ||= use.rawWrite && use.rawWriteCipher && use.rawWriteSecret;
    encryptedDeltas ||= use.rawWriteCipher && raw;
    writes.set(resource, { raw: use.rawWrite, fat: use.fatWrite });
    deltaWrites.set(resource, { raw, fat, encrypted: use.rawWriteCipher && use.rawWriteSecret });
  }
  const specified = topLevelValue(tree, 'require-fwup-version');
  const used = [
    ...(rawDeltas ? [FWUP_VERSIONS.rawDeltas] : []),
    ...(fatDeltas ? [FWUP_VERSIONS.fatDeltas] : []),
    ...(encryption ? [FWUP_VERSIONS.encryption] : []),
    ...(encryptedDeltas ? [FWUP_VERSIONS.encryptedDeltas] : []),
  ];
  // Confuse: the newest feature's fwup, or raw deltas' when none is used; never below the meta.conf's own
  // `require-fwup-version` (fwup refuses the archive below it anyway, delta or not).
  const floor = specified && semver.valid(specified) ? [specified] : [];
  const deltaFwupVersion = maxVersion([...(used.length > 0 ? used : [FWUP_VERSIONS.rawDeltas]), ...floor]);
  const cache = Number(topLevelValue(tree, 'block-cache-size-mb'));
  return {
    deltaCapable: rawDeltas || fatDeltas,
    deltaResources: [...deltaResources].sort(),
    upgradeResources: [...upgradeResources].sort(),
    rawDeltas,
    fatDeltas,
    encryption,
    encryptedDeltas,
    deltaFwupVersion,
    blockCacheSizeMb: Number.isInteger(cache) && cache > 0 ? cache : null,
    writes,
    deltaWrites,
  };
}

/** The `file-resource` blocks of a meta.conf: each resource's `length` and `blake2b-256` (hex), when set. */
export function readResourceDigests(
  metaConf: Uint8Array | string,
): Map<string, { length: number | null; blake2b256: string | null }> {
  const src = typeof metaConf === 'string' ? Buffer.from(metaConf, 'utf8') : Buffer.from(metaConf);
  const digests = new Map<string, { length: number | null; blake2b256: string | null }>();
  for (const node of new TreeParser(src).parse()) {
    if (node.kind !== 'section' || node.name !== 'file-resource' || node.title === null) continue;
    const option = (name: string) =>
      node.children.find((child) => child.kind === 'option' && child.name === name) as
        Extract<ConfNode, { kind: 'option' }> | undefined;
    const length = Number(option('length')?.values.join(''));
    digests.set(node.title, {
      length: Number.isSafeInteger(length) ? length : null,
      blake2b256: option('blake2b-256')?.values[0]?.toLowerCase() ?? null,
    });
  }
  return digests;
}

function topLevelValue(tree: ConfNode[], name: string): string | null {
  for (const node of tree) if (node.kind === 'option' && node.name === name) return node.values[0] ?? null;
  return null;
}

/**
 * Why a delta from `source` to `target` could not be applied (Confuse.Fwup's `validate_delta`), or [] when it can:
 * a resource the target writes from a raw (FAT) delta must be written raw (to FAT) by the source.
 */
export function deltaIncompatibilities(source: DeltaFeatures, target: DeltaFeatures): string[] {
  const problems: string[] = [];
  for (const [resource, written] of source.writes) {
    const wanted = target.deltaWrites.get(resource);
    if (!wanted) continue;
    if (wanted.raw && !written.raw)
      problems.push(`${resource}: the target uses raw deltas but the source has no raw write`);
    if (wanted.fat && !written.fat)
      problems.push(`${resource}: the target uses FAT deltas but the source has no FAT write`);
  }
  return problems;
}

/** Whether a device reporting `deviceFwup` (null: unknown, taken as fwup's oldest, as NervesHub does) applies it. */
export function fwupCanApply(deviceFwup: string | null | undefined, required: string): boolean {
  const reported = typeof deviceFwup === 'string' ? semver.valid(deviceFwup.trim()) : null;
  return semver.valid(required) !== null && semver.gte(reported ?? FWUP_VERSIONS.minimum, required);
}
