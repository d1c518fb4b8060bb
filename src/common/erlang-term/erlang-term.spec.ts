import fc from 'fast-check';
import { applicationTerm, etf } from '../../../test/support/fw-builder-packbeam';
import {
  decodeErlangTerm,
  encodeBinary,
  encodeInteger,
  encodeTuple,
  ErlangTermError,
  MAX_TERM_DEPTH,
  TermTag,
  termInteger,
  termText,
  termToBinary,
} from './erlang-term';

describe('decodeErlangTerm', () => {
  it('decodes term_to_binary({a, "b"}) as OTP 26 writes it', () => {
    expect(decodeErlangTerm(Buffer.from([131, 104, 2, 119, 1, 97, 107, 0, 1, 98]))).toEqual({
      type: 'tuple',
      elements: [
        { type: 'atom', value: 'a' },
        { type: 'bytes', value: Buffer.from('b') },
      ],
    });
  });

  it('decodes every supported tag', () => {
    const term = etf.encode(
      etf.tuple(
        etf.integer(7),
        etf.integer(-70000),
        etf.atom('ä'),
        etf.latin1Atom('é'),
        etf.binary('bin'),
        etf.list([etf.integer(1)], etf.atom('tail')),
        etf.list([]),
        etf.float(1.5),
        etf.map([[etf.atom('k'), etf.string('v')]]),
        etf.tuple(...Array.from({ length: 300 }, () => etf.integer(0))),
      ),
    );
    const decoded = decodeErlangTerm(term);
    if (decoded.type !== 'tuple') throw new Error('not a tuple');
    expect(decoded.elements.slice(0, 9)).toEqual([
      { type: 'integer', value: 7 },
      { type: 'integer', value: -70000 },
      { type: 'atom', value: 'ä' },
      { type: 'atom', value: 'é' },
      { type: 'binary', value: Buffer.from('bin') },
      { type: 'list', elements: [{ type: 'integer', value: 1 }], tail: { type: 'atom', value: 'tail' } },
      { type: 'nil' },
      { type: 'other' },
      {
        type: 'map',
        pairs: [
          [
            { type: 'atom', value: 'k' },
            { type: 'bytes', value: Buffer.from('v') },
          ],
        ],
      },
    ]);
    const large = decoded.elements[9];
    expect(large.type === 'tuple' ? large.elements.length : null).toBe(300);
  });

  it('reads text from charlists, STRING_EXT, binaries', () => {
    expect(termText(decodeErlangTerm(etf.encode(etf.string('héllo'))))).toBe('héllo');
    expect(termText(decodeErlangTerm(etf.encode(etf.string('snow ☃'))))).toBe('snow ☃');
    expect(termText(decodeErlangTerm(etf.encode(etf.binary('☃'))))).toBe('☃');
    expect(termText(decodeErlangTerm(etf.encode(etf.string(''))))).toBe('');
    expect(termText(decodeErlangTerm(etf.encode(etf.tuple())))).toBeNull();
    expect(termText(decodeErlangTerm(etf.encode(etf.list([etf.atom('x')]))))).toBeNull();
  });

  it('decodes a whole application term', () => {
    expect(decodeErlangTerm(applicationTerm({ name: 'hello', vsn: '1.0.0' }))).toMatchObject({
      type: 'tuple',
      elements: [{ value: 'application' }, { value: 'hello' }, { type: 'list' }],
    });
  });

  it.each([
    ['no version byte', Buffer.from([104, 0]), /version byte 131/],
    ['compressed', Buffer.from([131, 80, 0, 0, 0, 1, 0]), /compressed/],
    ['unsupported tag', Buffer.from([131, 88]), /unsupported term \(tag 88\)/],
    ['truncated atom', Buffer.from([131, 119, 5, 97]), /truncated/],
    ['huge list length', Buffer.from([131, 108, 0xff, 0xff, 0xff, 0xff, 106]), /truncated/],
    ['huge binary length', Buffer.from([131, 109, 0xff, 0xff, 0xff, 0xff]), /truncated/],
    ['huge map', Buffer.from([131, 116, 0x7f, 0xff, 0xff, 0xff]), /truncated/],
    ['trailing bytes', Buffer.from([131, 106, 106]), /1 bytes after the term/],
    ['empty', Buffer.alloc(0), /truncated/],
  ])('refuses %s', (_name, bytes, message) => {
    expect(() => decodeErlangTerm(bytes)).toThrow(ErlangTermError);
    expect(() => decodeErlangTerm(bytes)).toThrow(message);
  });

  it(`refuses nesting deeper than ${MAX_TERM_DEPTH} levels, without exhausting the stack`, () => {
    let term = etf.list([]);
    for (let i = 0; i < MAX_TERM_DEPTH; i += 1) term = etf.tuple(term);
    expect(() => decodeErlangTerm(etf.encode(term))).not.toThrow();
    expect(() => decodeErlangTerm(etf.encode(etf.tuple(term)))).toThrow(/deeper than 64 levels/);
    const nested = Buffer.alloc(20_000);
    for (let i = 0; i < nested.length; i += 2) {
      nested[i] = 104;
      nested[i + 1] = 1;
    }
    // 10,000 one-element tuples, each inside the previous one
    expect(() => decodeErlangTerm(Buffer.concat([Buffer.from([131]), nested]))).toThrow(/deeper than/);
  });

  it('throws nothing but ErlangTermError on random bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        try {
          decodeErlangTerm(Buffer.concat([Buffer.from([131]), bytes]));
        } catch (err) {
          expect(err).toBeInstanceOf(ErlangTermError);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('decodes big integers as sent, and reads their value', () => {
    // 1700000000000 as SMALL_BIG_EXT (an NH1 signing time)
    const small = decodeErlangTerm(Buffer.from('836e06000068e5cf8b01', 'hex'));
    expect(small).toEqual({ type: 'bigInteger', sign: 0, digits: Buffer.from('0068e5cf8b01', 'hex') });
    expect(termInteger(small)).toBe(1700000000000n);
    expect(termInteger(decodeErlangTerm(Buffer.from('836e0201ffff', 'hex')))).toBe(-65535n);
    expect(termInteger(decodeErlangTerm(Buffer.from('836f000000020102ff', 'hex')))).toBe(-65282n);
    expect(termInteger(decodeErlangTerm(Buffer.from('836e0102ff', 'hex')))).toBeNull(); // sign byte 2
    expect(termInteger(decodeErlangTerm(Buffer.from('8362ffffffff', 'hex')))).toBe(-1n);
    expect(termInteger(decodeErlangTerm(etf.encode(etf.atom('one'))))).toBeNull();
    expect(termText(small)).toBeNull();
  });

  it('refuses the tags a caller does not accept, and nesting past its depth', () => {
    const tags = new Set<number>([TermTag.SMALL_TUPLE, TermTag.BINARY, TermTag.SMALL_INTEGER]);
    expect(decodeErlangTerm(etf.encode(etf.tuple(etf.binary('x'), etf.integer(1))), { tags })).toEqual({
      type: 'tuple',
      elements: [
        { type: 'binary', value: Buffer.from('x') },
        { type: 'integer', value: 1 },
      ],
    });
    expect(() => decodeErlangTerm(etf.encode(etf.tuple(etf.latin1Atom('a'))), { tags })).toThrow(
      /unsupported term \(tag 100\)/,
    );
    expect(() => decodeErlangTerm(etf.encode(etf.list([etf.integer(1)])), { tags })).toThrow(
      /unsupported term \(tag 108\)/,
    );
    const nested = etf.encode(etf.tuple(etf.tuple(etf.integer(1))));
    expect(() => decodeErlangTerm(nested, { maxDepth: 2 })).not.toThrow();
    expect(() => decodeErlangTerm(nested, { maxDepth: 1 })).toThrow(/deeper than 1 levels/);
    // Refused before recursing further: 100,000 nested tuples.
    const deep = Buffer.concat([Buffer.from([131]), Buffer.from('6801'.repeat(100_000), 'hex')]);
    expect(() => decodeErlangTerm(deep, { maxDepth: 1 })).toThrow(ErlangTermError);
  });

  it('encodes integers, binaries and tuples as term_to_binary does', () => {
    expect(encodeInteger(7).toString('hex')).toBe('6107');
    expect(encodeInteger(86400).toString('hex')).toBe('6200015180');
    expect(encodeInteger(1700000000000).toString('hex')).toBe('6e06000068e5cf8b01');
    expect(() => encodeInteger(-1)).toThrow(RangeError);
    expect(() => encodeInteger(2 ** 53)).toThrow(RangeError);
    const payload = termToBinary(
      encodeTuple([
        encodeBinary(Buffer.from('nerves-test-0001')),
        encodeInteger(1700000000000),
        encodeInteger(86400),
      ]),
    );
    expect(payload.toString('hex')).toBe(
      '8368036d000000106e65727665732d746573742d303030316e06000068e5cf8b016200015180',
    );
    const decoded = decodeErlangTerm(payload);
    expect(decoded.type === 'tuple' ? decoded.elements.map(termInteger) : null).toEqual([
      null,
      1700000000000n,
      86400n,
    ]);
    fc.assert(
      fc.property(fc.maxSafeNat(), (value) => {
        expect(termInteger(decodeErlangTerm(termToBinary(encodeInteger(value))))).toBe(BigInt(value));
      }),
    );
  });

  it('throws nothing but ErlangTermError on random bytes, with narrowed tags and depth', () => {
    const tags = new Set<number>([TermTag.SMALL_TUPLE, TermTag.MAP, TermTag.SMALL_BIG, TermTag.BINARY]);
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        try {
          decodeErlangTerm(Buffer.concat([Buffer.from([131]), bytes]), { tags, maxDepth: 1 });
        } catch (err) {
          expect(err).toBeInstanceOf(ErlangTermError);
        }
      }),
      { numRuns: 2000 },
    );
  });
});
