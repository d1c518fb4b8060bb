import { FWUP_RICH, FWUP_SIGNED } from '../../../test/support/fwup-vectors';
import { renderMetaConf } from '../../../test/support/fw-builder';
import { FirmwareFormatError } from './firmware-format-error';
import { missingRequiredMetadata, parseMetaConf, type FwupMetadata } from './meta-conf';

function parseError(text: string | Buffer): FirmwareFormatError {
  try {
    parseMetaConf(text);
  } catch (err) {
    if (err instanceof FirmwareFormatError) return err;
    throw err;
  }
  throw new Error(`parsed without error: ${JSON.stringify(text.toString().slice(0, 200))}`);
}

const EMPTY: FwupMetadata = {
  tool: 'fwup',
  product: null,
  description: null,
  version: null,
  author: null,
  platform: null,
  architecture: null,
  vcsIdentifier: null,
  misc: null,
  creationDate: null,
  fwupVersion: null,
  uuid: null,
  nickname: null,
};

describe('parseMetaConf', () => {
  it('reads the meta.conf written by fwup', () => {
    // The creation date of an archive comes from the zip entry, not from meta.conf (fwup 1.2 and later).
    expect(parseMetaConf(FWUP_SIGNED.metaConf)).toEqual({ ...FWUP_SIGNED.metadata, creationDate: null });
  });

  it('reads a richer fwup meta.conf, with escapes, UTF-8 and sections of every kind', () => {
    expect(parseMetaConf(FWUP_RICH.metaConf)).toEqual({ ...FWUP_RICH.metadata, creationDate: null });
  });

  it('reads every meta-* field, and says the tool is fwup', () => {
    const text = [
      'meta-product = "Product"',
      'meta-description = "Desc"',
      'meta-version = "1.2.3-rc.1"',
      'meta-author = "Me"',
      'meta-platform = rpi4',
      'meta-architecture = aarch64',
      'meta-vcs-identifier = "abc123"',
      'meta-misc = "misc"',
      'meta-creation-date = "2017-01-01T00:00:00Z"',
      'meta-fwup-version = "0.13.0"',
      'meta-uuid = "7c68ba88-9c8c-5f83-2d9e-7a5e6da3a6d9"',
      'meta-nickname = "some-words"',
    ].join('\n');
    expect(parseMetaConf(text)).toEqual({
      tool: 'fwup',
      product: 'Product',
      description: 'Desc',
      version: '1.2.3-rc.1',
      author: 'Me',
      platform: 'rpi4',
      architecture: 'aarch64',
      vcsIdentifier: 'abc123',
      misc: 'misc',
      creationDate: '2017-01-01T00:00:00Z',
      fwupVersion: '0.13.0',
      uuid: '7c68ba88-9c8c-5f83-2d9e-7a5e6da3a6d9',
      nickname: 'some-words',
    });
  });

  it('reads what the test builder renders', () => {
    const text = renderMetaConf(
      { product: 'p', version: '1.0.0', platform: 'x', architecture: 'y', misc: 'a "quoted" \\ value' },
      [{ name: 'rootfs.img', length: 10, blake2b256: 'ab'.repeat(32) }],
    );
    expect(parseMetaConf(text)).toEqual({
      ...EMPTY,
      product: 'p',
      version: '1.0.0',
      platform: 'x',
      architecture: 'y',
      misc: 'a "quoted" \\ value',
    });
  });

  it('returns null for the fields meta.conf does not set, and ignores unknown meta-* settings', () => {
    expect(parseMetaConf('meta-product=x\nmeta-future-thing="y"\nrequire-fwup-version="1.0.0"\n')).toEqual({
      ...EMPTY,
      product: 'x',
    });
    expect(parseMetaConf('')).toEqual(EMPTY);
  });

  it('decodes libconfuse strings: escapes, octal and hex bytes, continuations, single quotes', () => {
    const cases: [string, string][] = [
      ['"a\\nb\\tc\\rd"', 'a\nb\tc\rd'],
      ['"\\a\\b\\f\\v\\e"', '\x07\b\f\v\x1b'],
      ['"q\\"q \\\\ \\$ \\q"', 'q"q \\ $ q'],
      ['"\\101\\x42\\x4"', 'AB\x04'],
      ['"\\303\\251t\\xc3\\xa9"', 'été'],
      ['"line\\\ncontinued"', 'linecontinued'],
      ['"real\nnewline"', 'real\nnewline'],
      ["'single \\' \\\\ \\n'", "single ' \\ \\n"],
      ['bare.value_1', 'bare.value_1'],
      ['1.2.3-rc.1*', '1.2.3-rc.1'], // '*' ends an unquoted string and is dropped, as libconfuse does
      ['a//b', 'a//b'],
      ['/a/b/', '/a/b/'],
      ['"✓ unicode"', '✓ unicode'],
      ['"$HOME and ${ not closed"', '$HOME and ${ not closed'],
    ];
    for (const [source, expected] of cases) {
      expect([source, parseMetaConf(`meta-misc = ${source}\n`).misc]).toEqual([source, expected]);
    }
  });

  it('skips comments, blank lines and CR characters', () => {
    const text = [
      '# a comment',
      '// another one',
      '/* a block',
      '   comment */',
      '////',
      '//no space',
      'meta-product = "p" # trailing',
      'meta-version = 1.0.0 // trailing',
      '/* inline */ meta-platform = rpi4',
      '',
    ].join('\r\n');
    expect(parseMetaConf(text)).toEqual({ ...EMPTY, product: 'p', version: '1.0.0', platform: 'rpi4' });
  });

  it('skips sections, lists, appends and function calls, at any position', () => {
    const text = `
      define(ROOTFS, 1234)
      file-resource "a b" { length = 3 blake2b-256 = "00" }
      task upgrade.a {
        require-uboot-variable(uboot-env, "a", "b",)
        on-init { funlist = {2, info, "{not a brace}"} }
        on-resource "a b" { raw_write(63) }
        reqlist += {}
      }
      mbr "mbr-a" { partition 0 { block-offset = 63 } }
      meta-product = after
      some-list = {a, "b", c,}
      empty {}
    `;
    expect(parseMetaConf(text)).toEqual({ ...EMPTY, product: 'after' });
  });

  it('reads meta-* settings only at the top level', () => {
    expect(parseMetaConf('task x { meta-product = inner }\nmeta-version = 1.0.0')).toEqual({
      ...EMPTY,
      version: '1.0.0',
    });
  });

  it('keeps the last of repeated settings, as libconfuse does', () => {
    expect(parseMetaConf('meta-version = 1.0.0\nmeta-version = 2.0.0').version).toBe('2.0.0');
  });

  it('lets a comment left open run to the end of the file, as libconfuse does', () => {
    expect(parseMetaConf('meta-product = p\n/* never closed\nmeta-version = 1.0.0\n')).toEqual({
      ...EMPTY,
      product: 'p',
    });
  });

  it('accepts quoted option names', () => {
    expect(parseMetaConf('"meta-product" = p').product).toBe('p');
  });

  it('rejects syntax fwup cannot parse, with the line number', () => {
    const cases: [string, RegExp][] = [
      ['meta-product = "unterminated', /line 1: unterminated string/],
      ["meta-product = 'unterminated", /line 1: unterminated string/],
      ['\n\nmeta-product = "x\\', /line 3: unterminated string/],
      ['meta-product "x"', /line 1: expected '\{' after the title of section 'meta-product'/],
      ['meta-product', /line 1: expected '=' after option 'meta-product', found the end of the file/],
      ['meta-product x y', /expected '\{'/],
      ['= x', /expected an option name, found '='/],
      ['}', /unexpected '\}'/],
      ['task a {\n on-init {\n', /line 3: missing '\}'/],
      ['x = ', /expected a value, found the end of the file/],
      ['x = # comment\n y', /expected a value, found a comment/],
      ['meta-misc = //text', /line 1: expected a value, found a comment/],
      ['meta-version = 1.2.3+build', /line 1: expected '=' after option 'build'/],
      ['x = {a b}', /unexpected a string in a list/],
      ['x = {a,,b}', /unexpected ',' in a list/],
      ['f(a b)', /unexpected a string in a list/],
      ['meta-misc = "\\8"', /bad escape sequence '\\8'/],
      ['meta-misc = "\\1234"', /bad escape sequence/],
      ['meta-misc = "\\129"', /bad escape sequence/],
      ['meta-misc = "\\777"', /octal escape sequence out of range/],
      [`${'a {'.repeat(20)}${'}'.repeat(20)}`, /nested too deeply/],
    ];
    for (const [text, message] of cases) {
      const err = parseError(text);
      expect([text, err.message]).toEqual([text, expect.stringMatching(message)]);
      expect(err.message).toMatch(/^meta\.conf has a syntax error on line \d+: /);
    }
  });

  it('rejects meta-* settings that are not a single string', () => {
    for (const text of [
      'meta-product = {a, b}',
      'meta-product += a',
      'meta-product { }',
      'meta-product "t" { }',
      'meta-product(a)',
    ]) {
      expect([text, parseError(text).message]).toEqual([
        text,
        expect.stringMatching(/^meta\.conf: meta-product must be a single string/),
      ]);
    }
  });

  it('rejects values that fwup would take from the environment of the reader', () => {
    expect(parseError('meta-product = ${PRODUCT}').message).toBe(
      'meta.conf: meta-product refers to an environment variable (line 1)',
    );
    expect(parseError('meta-description = "built by ${USER}"').message).toMatch(
      /meta-description refers to an environment/,
    );
    expect(parseError('meta-description = "${X:-default}"').message).toMatch(/environment variable/);
  });

  it('parses hostile input of the largest size in linear time', () => {
    const started = Date.now();
    const dollars = '${'.repeat(24_000);
    expect(parseMetaConf(`meta-misc = "${dollars}"`).misc).toBe(dollars);
    expect(parseError(`meta-misc = "\\${'7'.repeat(49_000)}"`).message).toMatch(/bad escape/);
    expect(parseError('{'.repeat(49_000)).message).toMatch(/expected an option name/);
    expect(parseError('a {'.repeat(16_000)).message).toMatch(/nested too deeply/);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('rejects NUL bytes and text that is not UTF-8', () => {
    expect(parseError(Buffer.from('meta-product = x\0y')).message).toBe('meta.conf contains a NUL byte');
    expect(parseError('meta-product = "a\\0b"').message).toMatch(/meta-product contains a NUL character/);
    expect(parseError(Buffer.from([...Buffer.from('meta-product = "'), 0xff, 0x22])).message).toMatch(
      /meta-product is not valid UTF-8/,
    );
    expect(parseError('meta-product = "\\xff"').message).toMatch(/meta-product is not valid UTF-8/);
  });
});

describe('missingRequiredMetadata', () => {
  it('lists missing or blank product, version, platform and architecture', () => {
    expect(missingRequiredMetadata(parseMetaConf(FWUP_SIGNED.metaConf))).toEqual([]);
    expect(missingRequiredMetadata(EMPTY)).toEqual(['product', 'version', 'platform', 'architecture']);
    expect(
      missingRequiredMetadata(parseMetaConf('meta-product=" "\nmeta-version=1.0.0\nmeta-platform=""')),
    ).toEqual(['product', 'platform', 'architecture']);
  });
});
