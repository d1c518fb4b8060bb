import { createHmac } from 'node:crypto';
import {
  decodeNh1Payload,
  DerivedKeyCache,
  deriveNh1Key,
  encodeNh1Payload,
  NH1_ALG,
  nh1Salt,
  parseNh1Alg,
  parseNh1Time,
  readNh1Headers,
  signNh1Headers,
  signNh1Token,
  verifyNh1Request,
  verifyNh1Token,
} from './nh1';

// Reference test vectors (device-protocol.md §2.3.8).
const PRODUCT_KEY = 'nhp_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8';
const PRODUCT_SECRET = 'ICEiIyQlJicoKSorLC0uLzAxMjM0NTY3ODk6Ozw9Pj8';
const DEVICE_KEY = 'nhd_QEFCQ0RFRkdISUpLTE1OT1BRUlNUVVZXWFlaW1xdXl8';
const DEVICE_SECRET = 'YGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6e3x9fn8';
const IDENTIFIER = 'nerves-test-0001';
const TIME_S = 1700000000;
const SALT =
  'NH1:device-socket:shared-secret:connect\n\nx-nh-alg=NH1-HMAC-sha256-1000-32\n' +
  `x-nh-key=${PRODUCT_KEY}\nx-nh-time=1700000000\n`;
const PRODUCT_DERIVED = 'ca8cce12ead6c11cabebf041141d6f7445622edab3fc43b6353f489bd7ec4aa0';
const DEVICE_DERIVED = '00cb72950b8a9d59476fb845facc55412aae746e347d5023c2ad558b8a6c8fb3';
const PAYLOAD_HEX = '8368036d000000106e65727665732d746573742d303030316e06000068e5cf8b016200015180';
const PAYLOAD_B64 = 'g2gDbQAAABBuZXJ2ZXMtdGVzdC0wMDAxbgYAAGjlz4sBYgABUYA';
const PRODUCT_SIGNATURE = `SFMyNTY.${PAYLOAD_B64}.MUQZja-tpJJCBkAOIVP1JWwSpWt2yiejYklMfLAaQNI`;
const DEVICE_SIGNATURE = `SFMyNTY.${PAYLOAD_B64}.44BOszLOhnt1xuCMlUDcOpN4W8H_elGnDBpUZMoiU6o`;

const ALG = parseNh1Alg(NH1_ALG)!;
const NOW_MS = TIME_S * 1000 + 30_000;

const productHeaders = () => ({
  'x-nh-alg': NH1_ALG,
  'x-nh-key': PRODUCT_KEY,
  'x-nh-time': String(TIME_S),
  'x-nh-signature': PRODUCT_SIGNATURE,
});

function request(headers: Record<string, string>) {
  const read = readNh1Headers(headers);
  if (!read.ok) throw new Error(read.reason);
  return read.request;
}

/** A token over arbitrary payload bytes, correctly signed, so that only the decoder can refuse it. */
function tokenOver(etf: Buffer, key: Buffer): string {
  const signed = `SFMyNTY.${etf.toString('base64url')}`;
  return `${signed}.${createHmac('sha256', key).update(signed).digest('base64url')}`;
}

const hex = (value: string) => Buffer.from(value.replace(/\s+/g, ''), 'hex');
const KEY = Buffer.from(PRODUCT_DERIVED, 'hex');

describe('NH1 reference vectors', () => {
  it('builds the 152-byte salt', () => {
    const salt = nh1Salt(NH1_ALG, PRODUCT_KEY, TIME_S);
    expect(salt).toBe(SALT);
    expect(Buffer.byteLength(salt)).toBe(152);
  });

  it('passes the PBKDF2 sanity check from plug_crypto', () => {
    expect(deriveNh1Key('password', 'salt', ALG).toString('hex')).toBe(
      '632c2812e46d4604102ba7618e9d6d7d2f8128f6266b4a03264d2a0460b7dcb3',
    );
  });

  it('derives the product key and the device key', () => {
    expect(deriveNh1Key(PRODUCT_SECRET, SALT, ALG).toString('hex')).toBe(PRODUCT_DERIVED);
    expect(deriveNh1Key(DEVICE_SECRET, nh1Salt(NH1_ALG, DEVICE_KEY, TIME_S), ALG).toString('hex')).toBe(
      DEVICE_DERIVED,
    );
  });

  it('encodes and decodes the ETF payload', () => {
    const payload = { identifier: IDENTIFIER, signedAtMs: TIME_S * 1000, maxAgeS: 86400 };
    expect(encodeNh1Payload(payload).toString('hex')).toBe(PAYLOAD_HEX);
    expect(decodeNh1Payload(hex(PAYLOAD_HEX))).toEqual(payload);
  });

  it('signs the reference tokens', () => {
    const payload = { identifier: IDENTIFIER, signedAtMs: TIME_S * 1000, maxAgeS: 86400 };
    expect(signNh1Token(payload, KEY)).toBe(PRODUCT_SIGNATURE);
    expect(signNh1Token(payload, Buffer.from(DEVICE_DERIVED, 'hex'))).toBe(DEVICE_SIGNATURE);
    expect(
      signNh1Headers({ key: PRODUCT_KEY, secret: PRODUCT_SECRET, identifier: IDENTIFIER, timeS: TIME_S }),
    ).toEqual(productHeaders());
    expect(
      signNh1Headers({ key: DEVICE_KEY, secret: DEVICE_SECRET, identifier: IDENTIFIER, timeS: TIME_S })[
        'x-nh-signature'
      ],
    ).toBe(DEVICE_SIGNATURE);
  });

  it('verifies both reference requests anywhere in the accepted window', () => {
    const expected = {
      ok: true,
      payload: { identifier: IDENTIFIER, signedAtMs: TIME_S * 1000, maxAgeS: 86400 },
    };
    for (const now of [TIME_S * 1000, NOW_MS, TIME_S * 1000 + 90_000, TIME_S * 1000 - 5_000]) {
      expect(verifyNh1Request(request(productHeaders()), PRODUCT_SECRET, now)).toEqual(expected);
    }
    const device = { ...productHeaders(), 'x-nh-key': DEVICE_KEY, 'x-nh-signature': DEVICE_SIGNATURE };
    expect(verifyNh1Request(request(device), DEVICE_SECRET, NOW_MS)).toEqual(expected);
  });

  it('does not depend on header order', () => {
    const reversed = Object.fromEntries(Object.entries(productHeaders()).reverse());
    expect(verifyNh1Request(request(reversed), PRODUCT_SECRET, NOW_MS).ok).toBe(true);
  });
});

describe('NH1 refusals', () => {
  const fail = (reason: string) => ({ ok: false, reason });

  it('refuses an expired token (more than 90 s old)', () => {
    expect(verifyNh1Request(request(productHeaders()), PRODUCT_SECRET, TIME_S * 1000 + 90_001)).toEqual(
      fail('expired'),
    );
  });

  it('refuses a token dated more than 5 s ahead', () => {
    expect(verifyNh1Request(request(productHeaders()), PRODUCT_SECRET, TIME_S * 1000 - 5_001)).toEqual(
      fail('future'),
    );
  });

  it('refuses a bad signature', () => {
    // The last character differs only in bits that base64 drops: still refused.
    for (const last of ['J', 'A', 'Q']) {
      const tampered = PRODUCT_SIGNATURE.replace(/.$/, last);
      expect(verifyNh1Token(tampered, KEY, NOW_MS)).toEqual(fail('bad_signature'));
    }
    const flipped = PRODUCT_SIGNATURE.replace('.MUQ', '.NUQ');
    expect(verifyNh1Token(flipped, KEY, NOW_MS)).toEqual(fail('bad_signature'));
    expect(verifyNh1Token(PRODUCT_SIGNATURE.slice(0, -4), KEY, NOW_MS)).toEqual(fail('bad_signature'));
    // A signed payload swapped for another identifier.
    const other = encodeNh1Payload({ identifier: 'someone-else', signedAtMs: TIME_S * 1000, maxAgeS: 86400 });
    const [protectedPart, , macPart] = PRODUCT_SIGNATURE.split('.');
    expect(verifyNh1Token(`${protectedPart}.${other.toString('base64url')}.${macPart}`, KEY, NOW_MS)).toEqual(
      fail('bad_signature'),
    );
  });

  it('refuses the wrong secret, the device secret for the product key, and a changed header', () => {
    expect(verifyNh1Request(request(productHeaders()), DEVICE_SECRET, NOW_MS)).toEqual(fail('bad_signature'));
    expect(verifyNh1Request(request(productHeaders()), `${PRODUCT_SECRET}x`, NOW_MS)).toEqual(
      fail('bad_signature'),
    );
    const otherTime = { ...productHeaders(), 'x-nh-time': String(TIME_S + 1) };
    expect(verifyNh1Request(request(otherTime), PRODUCT_SECRET, NOW_MS)).toEqual(fail('bad_signature'));
    const otherKey = { ...productHeaders(), 'x-nh-key': DEVICE_KEY };
    expect(verifyNh1Request(request(otherKey), PRODUCT_SECRET, NOW_MS)).toEqual(fail('bad_signature'));
  });

  it.each([
    ['no dots', 'SFMyNTY'],
    ['two parts', `SFMyNTY.${PAYLOAD_B64}`],
    ['four parts', `${PRODUCT_SIGNATURE}.x`],
    ['HS384 header', PRODUCT_SIGNATURE.replace('SFMyNTY', 'SFMzODQ')],
    ['padding', `${PRODUCT_SIGNATURE}=`],
    ['standard base64 characters', PRODUCT_SIGNATURE.replace('-', '+')],
    ['empty payload', 'SFMyNTY..MUQZja'],
    ['oversized', `SFMyNTY.${'A'.repeat(4000)}.MUQZja`],
  ])('refuses a malformed token: %s', (_label, token) => {
    expect(verifyNh1Token(token, KEY, NOW_MS)).toEqual(fail('malformed_token'));
  });

  it.each([
    ['sha512', 'NH1-HMAC-sha512-1000-32'],
    ['other iterations', 'NH1-HMAC-sha256-100000000-32'],
    ['other length', 'NH1-HMAC-sha256-1000-64'],
    ['leading zero', 'NH1-HMAC-sha256-01000-32'],
    ['another version', 'NH2-HMAC-sha256-1000-32'],
    ['extra part', 'NH1-HMAC-sha256-1000-32-1'],
    ['trailing space', 'NH1-HMAC-sha256-1000-32 '],
    ['empty', ''],
  ])('refuses a wrong alg: %s', (_label, alg) => {
    expect(parseNh1Alg(alg)).toBeNull();
    expect(readNh1Headers({ ...productHeaders(), 'x-nh-alg': alg })).toEqual(fail('bad_alg'));
  });

  it('accepts the digest in upper case (NervesHub lower-cases it) and salts with the header as sent', () => {
    expect(parseNh1Alg('NH1-HMAC-SHA256-1000-32')).toEqual(ALG);
  });

  it.each([['01700000000'], ['+1700000000'], ['-1'], ['1700000000.5'], [' 1700000000'], ['']])(
    'refuses a non-canonical time %p',
    (time) => {
      expect(parseNh1Time(time)).toBeNull();
      expect(readNh1Headers({ ...productHeaders(), 'x-nh-time': time })).toEqual(fail('bad_time'));
    },
  );

  it.each([['abc_123'], ['nhu_abc'], ['nhp_'], ['nhp_has space'], [`nhp_${'a'.repeat(61)}`]])(
    'refuses a malformed key %p',
    (key) => {
      expect(readNh1Headers({ ...productHeaders(), 'x-nh-key': key })).toEqual(fail('bad_key'));
    },
  );

  it('refuses missing or repeated headers', () => {
    for (const name of ['x-nh-alg', 'x-nh-key', 'x-nh-time', 'x-nh-signature'] as const) {
      const headers: Record<string, string | string[]> = productHeaders();
      delete headers[name];
      expect(readNh1Headers(headers)).toEqual(fail('missing_headers'));
      headers[name] = [productHeaders()[name], productHeaders()[name]];
      expect(readNh1Headers(headers)).toEqual(fail('missing_headers'));
    }
  });
});

describe('NH1 payload decoder', () => {
  const T = '6e06000068e5cf8b01'; // 1700000000000 as SMALL_BIG_EXT
  const ID = '6d000000106e65727665732d746573742d30303031'; // "nerves-test-0001" as BINARY_EXT

  it('accepts the other shapes Plug.Crypto writes and the other integer forms', () => {
    expect(decodeNh1Payload(hex(`83 6802 ${ID} ${T}`))).toEqual({
      identifier: IDENTIFIER,
      signedAtMs: 1700000000000,
      maxAgeS: 86400,
    });
    // %{data: "nerves-test-0001", signed: ...} with SMALL_ATOM_UTF8_EXT keys.
    const map = `83 7400000002 7704${Buffer.from('data').toString('hex')} ${ID} 7706${Buffer.from('signed').toString('hex')} ${T}`;
    expect(decodeNh1Payload(hex(map))).toEqual({
      identifier: IDENTIFIER,
      signedAtMs: 1700000000000,
      maxAgeS: 86400,
    });
    expect(decodeNh1Payload(hex(`83 6803 ${ID} 6107 620000003c`))).toEqual({
      identifier: IDENTIFIER,
      signedAtMs: 7,
      maxAgeS: 60,
    });
  });

  it.each([
    ['truncated', PAYLOAD_HEX.slice(0, -2)],
    ['truncated inside the binary', '8368036d000000106e657276'],
    ['trailing bytes', `${PAYLOAD_HEX}00`],
    ['wrong version byte', `84${PAYLOAD_HEX.slice(2)}`],
    ['compressed term', '8350000000260000'],
    ['a list instead of a tuple', `83 6c00000003 ${ID} ${T} 6200015180 6a`],
    ['a 4-tuple', `83 6804 ${ID} ${T} 6200015180 6101`],
    ['a 1-tuple', `83 6801 ${ID}`],
    ['an atom identifier', `83 6803 7704 6e6f6465 ${T} 6200015180`],
    ['an empty identifier', `83 6803 6d00000000 ${T} 6200015180`],
    ['invalid UTF-8', `83 6803 6d00000002 c328 ${T} 6200015180`],
    ['oversized binary length', `83 6803 6dffffffff ${T} 6200015180`],
    ['oversized big integer', `83 6803 ${ID} 6e09 00 ${'01'.repeat(9)} 6200015180`],
    ['negative time', `83 6803 ${ID} 6e06 01 0068e5cf8b01 6200015180`],
    ['negative max age', `83 6803 ${ID} ${T} 62ffffffff`],
    ['a float time', `83 6803 ${ID} 46 41d954fc40000000 6200015180`],
    ['a new function (executable term)', `83 6803 70 00000010 ${T} 6200015180`],
    ['a pid', `83 6803 ${ID} 58 7700 00000001 00000000 00000000 6200015180`],
    ['nested tuple', `83 6803 6803 ${ID} ${T} 6101 ${T} 6101`],
    ['map with an unknown key', `83 7400000002 7704 64617461 ${ID} 7704 6576696c ${T}`],
    ['map with a duplicate key', `83 7400000002 7704 64617461 ${ID} 7704 64617461 ${ID}`],
    ['map with many pairs', `83 74ffffffff 7704 64617461 ${ID}`],
    ['an oversized tuple arity', `83 68ff ${ID}`],
  ])('refuses %s', (_label, payloadHex) => {
    const etf = hex(payloadHex);
    expect(decodeNh1Payload(etf)).toBeNull();
    expect(verifyNh1Token(tokenOver(etf, KEY), KEY, NOW_MS)).toEqual({ ok: false, reason: 'bad_payload' });
  });

  it('refuses deep nesting without recursing', () => {
    const huge = Buffer.concat([Buffer.from([0x83]), Buffer.from('6801'.repeat(100_000), 'hex')]);
    expect(decodeNh1Payload(huge)).toBeNull();
    expect(decodeNh1Payload(Buffer.alloc(0))).toBeNull();
    const nested = hex(`83 ${'6801'.repeat(300)} ${ID}`);
    expect(decodeNh1Payload(nested)).toBeNull();
    expect(verifyNh1Token(tokenOver(nested, KEY), KEY, NOW_MS)).toEqual({ ok: false, reason: 'bad_payload' });
  });
});

describe('NH1 derived key cache', () => {
  it('derives the reference key once per (secret, salt), and signs the same headers as without it', () => {
    const cache = new DerivedKeyCache(2);
    const first = cache.derive(PRODUCT_SECRET, SALT, ALG);
    expect(first.toString('hex')).toBe(PRODUCT_DERIVED);
    expect(cache.derive(PRODUCT_SECRET, SALT, ALG)).toBe(first);
    expect(cache.size).toBe(1);
    const options = { key: PRODUCT_KEY, secret: PRODUCT_SECRET, identifier: IDENTIFIER, timeS: TIME_S };
    expect(signNh1Headers({ ...options, cache })).toEqual(signNh1Headers(options));
  });

  it('keys on the secret as well as the salt, and stays bounded', () => {
    const cache = new DerivedKeyCache(2);
    const product = cache.derive(PRODUCT_SECRET, SALT, ALG);
    const other = cache.derive(DEVICE_SECRET, SALT, ALG);
    expect(other.equals(product)).toBe(false);
    expect(other.equals(deriveNh1Key(DEVICE_SECRET, SALT, ALG))).toBe(true);
    cache.derive(PRODUCT_SECRET, nh1Salt(NH1_ALG, PRODUCT_KEY, TIME_S + 1), ALG);
    expect(cache.size).toBe(2);
    // The oldest entry went: deriving it again gives an equal key, not the same object.
    const again = cache.derive(PRODUCT_SECRET, SALT, ALG);
    expect(again).not.toBe(product);
    expect(again.equals(product)).toBe(true);
  });
});
