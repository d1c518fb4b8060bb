import { createHash, createHmac, pbkdf2, pbkdf2Sync, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import {
  decodeErlangTerm,
  encodeBinary,
  encodeInteger,
  encodeTuple,
  type ErlangTerm,
  ErlangTermError,
  TermTag,
  termInteger,
  termToBinary,
} from '../common/erlang-term/erlang-term';

/**
 * NH1 shared-secret device authentication (see docs: device-protocol.md §2.3), as pure functions.
 *
 * A device sends four headers on its websocket upgrade. The signing key is PBKDF2-HMAC-SHA256 of the shared
 * secret's UTF-8 bytes, salted with a text that binds the algorithm, the access key and the signing time. The
 * signature header is a token `SFMyNTY.<payload>.<mac>`: base64url (no padding) of an Erlang External Term
 * Format payload `{identifier, signed_at_ms, max_age_s}` and of HMAC-SHA256 over `SFMyNTY.<payload>`.
 */

/** The only algorithm accepted: what NervesHubLink sends with its defaults. */
export const NH1_ALG = 'NH1-HMAC-sha256-1000-32';
/** Signing times accepted: from 90 s in the past to 5 s in the future of the server clock. */
export const NH1_MAX_PAST_MS = 90_000;
export const NH1_MAX_FUTURE_MS = 5_000;
/** The max age (seconds) devices embed in their tokens; the server's own window above is what counts. */
export const NH1_EMBEDDED_MAX_AGE_S = 86_400;

/** base64url("HS256"): the protected header of every token devices send. */
const PROTECTED_HS256 = 'SFMyNTY';
const SALT_HEADER = 'NH1:device-socket:shared-secret:connect';
const ACCESS_KEY = /^nh[pd]_[A-Za-z0-9+/-]{1,60}$/;
const CLEAN_TIME = /^(0|[1-9]\d{0,11})$/;
const BASE64URL = /^[A-Za-z0-9_-]+$/;
/** A token longer than this cannot hold a valid payload (identifiers are at most 255 characters). */
const MAX_TOKEN_LENGTH = 2048;

export interface Nh1Alg {
  digest: 'sha256';
  iterations: number;
  keyLength: number;
}

/** The four headers, as a device sends them. */
export type Nh1Headers = {
  'x-nh-alg': string;
  'x-nh-key': string;
  'x-nh-time': string;
  'x-nh-signature': string;
};

/** Headers that passed the syntax checks: what the server needs before it looks the key up. */
export interface Nh1Request {
  alg: string;
  params: Nh1Alg;
  key: string;
  timeS: number;
  signature: string;
}

/** What the signed token carries. */
export interface Nh1Payload {
  identifier: string;
  signedAtMs: number;
  maxAgeS: number;
}

export type Nh1Failure =
  | 'missing_headers'
  | 'bad_alg'
  | 'bad_key'
  | 'bad_time'
  | 'malformed_token'
  | 'bad_signature'
  | 'bad_payload'
  | 'expired'
  | 'future';

export type Nh1Result = { ok: true; payload: Nh1Payload } | { ok: false; reason: Nh1Failure };

/**
 * `NH1-HMAC-<digest>-<iterations>-<keylen>`, with clean decimal numbers. Only sha256/1000/32 is accepted:
 * other parameters would let a caller choose how much CPU the server spends (or weaken the key).
 */
export function parseNh1Alg(value: string): Nh1Alg | null {
  const match = /^NH1-HMAC-([A-Za-z0-9]{1,16})-([1-9]\d{0,6})-([1-9]\d{0,3})$/.exec(value);
  if (!match) return null;
  const iterations = Number(match[2]);
  const keyLength = Number(match[3]);
  if (match[1].toLowerCase() !== 'sha256' || iterations !== 1000 || keyLength !== 32) return null;
  return { digest: 'sha256', iterations, keyLength };
}

/** `x-nh-time`: integer seconds, printed back into the salt, so it must be written canonically. */
export function parseNh1Time(value: string): number | null {
  return CLEAN_TIME.test(value) ? Number(value) : null;
}

/** The salt text, byte for byte as the device builds it (note the empty line and the trailing newline). */
export function nh1Salt(alg: string, key: string, timeS: number): string {
  return `${SALT_HEADER}\n\nx-nh-alg=${alg}\nx-nh-key=${key}\nx-nh-time=${timeS}\n`;
}

/** PBKDF2 of the secret string's UTF-8 bytes (the secret is not base64-decoded). */
export function deriveNh1Key(secret: string, salt: string, alg: Nh1Alg): Buffer {
  return pbkdf2Sync(
    Buffer.from(secret, 'utf8'),
    Buffer.from(salt, 'utf8'),
    alg.iterations,
    alg.keyLength,
    alg.digest,
  );
}

/** `deriveNh1Key` on libuv's thread pool: the event loop goes on accepting and serving meanwhile. */
export function deriveNh1KeyOffThread(secret: string, salt: string, alg: Nh1Alg): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    pbkdf2(
      Buffer.from(secret, 'utf8'),
      Buffer.from(salt, 'utf8'),
      alg.iterations,
      alg.keyLength,
      alg.digest,
      (err, key) => (err ? reject(err) : resolve(key)),
    );
  });
}

/**
 * Derived NH1 signing keys by (secret, salt). The salt binds the access key and the signing second, so every
 * device of a product that signs with the product key in the same second shares one PBKDF2 derivation: a
 * reconnect storm costs one per second instead of one per device. Keyed by a hash of the secret (the secret
 * itself is not kept); bounded, the oldest entry goes first.
 */
export class DerivedKeyCache {
  private readonly keys = new Map<string, Buffer>();
  /** Derivations on the thread pool, shared by the requests that need the same key meanwhile. */
  private readonly deriving = new Map<string, Promise<Buffer>>();

  constructor(readonly maxEntries = 1024) {}

  get size(): number {
    return this.keys.size;
  }

  derive(secret: string, salt: string, alg: Nh1Alg): Buffer {
    const id = cacheId(secret, salt);
    let key = this.keys.get(id);
    if (!key) {
      key = deriveNh1Key(secret, salt, alg);
      this.remember(id, key);
    }
    return key;
  }

  /** As `derive`, with a miss computed off the event loop (PBKDF2 costs about 0.2 ms of CPU). */
  async deriveOffThread(secret: string, salt: string, alg: Nh1Alg): Promise<Buffer> {
    const id = cacheId(secret, salt);
    const known = this.keys.get(id) ?? this.deriving.get(id);
    if (known) return known;
    const derivation = deriveNh1KeyOffThread(secret, salt, alg);
    this.deriving.set(id, derivation);
    try {
      const key = await derivation;
      this.remember(id, key);
      return key;
    } finally {
      this.deriving.delete(id);
    }
  }

  private remember(id: string, key: Buffer): void {
    if (this.keys.size >= this.maxEntries) this.keys.delete(this.keys.keys().next().value as string);
    this.keys.set(id, key);
  }
}

function cacheId(secret: string, salt: string): string {
  return `${createHash('sha256').update(secret, 'utf8').digest('base64')}\n${salt}`;
}

// ---------------------------------------------------------------------------------------------------------
// The payload, in the Erlang External Term Format (src/common/erlang-term)

/** Bounds of the payload: far above what a valid payload needs, far below anything costly. */
const PAYLOAD_LIMITS = { maxBytes: 1400, maxBinary: 1024, maxBigBytes: 8 };

/** The tags a payload may hold (integers, a binary, atom keys, one tuple or map); anything else is refused. */
const PAYLOAD_TAGS: ReadonlySet<number> = new Set([
  TermTag.SMALL_INTEGER,
  TermTag.INTEGER,
  TermTag.SMALL_BIG,
  TermTag.BINARY,
  TermTag.ATOM,
  TermTag.SMALL_ATOM_UTF8,
  TermTag.ATOM_UTF8,
  TermTag.SMALL_TUPLE,
  TermTag.MAP,
]);

const utf8 = new TextDecoder('utf-8', { fatal: true });

function identifierOf(term: ErlangTerm | undefined): string | null {
  if (term?.type !== 'binary' || term.value.length === 0 || term.value.length > PAYLOAD_LIMITS.maxBinary)
    return null;
  try {
    return utf8.decode(term.value);
  } catch {
    return null;
  }
}

function nonNegative(term: ErlangTerm | undefined): number | null {
  if (term === undefined) return null;
  if (
    term.type === 'bigInteger' &&
    (term.digits.length === 0 || term.digits.length > PAYLOAD_LIMITS.maxBigBytes)
  )
    return null;
  const value = termInteger(term);
  if (value === null || value < 0n || value > BigInt(Number.MAX_SAFE_INTEGER)) return null;
  return Number(value);
}

/**
 * Reads a payload, accepting only the shapes Plug.Crypto writes: `{data, signed_ms, max_age_s}`,
 * `{data, signed_ms}` and `%{data: data, signed: signed_ms}`, where data is a non-empty UTF-8 binary and the
 * numbers are non-negative integers. Anything else (other tags, nesting, trailing bytes) → null.
 */
export function decodeNh1Payload(etf: Buffer): Nh1Payload | null {
  if (etf.length > PAYLOAD_LIMITS.maxBytes) return null;
  let term: ErlangTerm;
  try {
    // Depth 1: the tuple or map, and its elements (a nested container is refused below).
    term = decodeErlangTerm(etf, { maxDepth: 1, tags: PAYLOAD_TAGS });
  } catch (err) {
    if (err instanceof ErlangTermError) return null;
    throw err;
  }
  let data: ErlangTerm | undefined;
  let signed: ErlangTerm | undefined;
  let maxAge: number | null = NH1_EMBEDDED_MAX_AGE_S;
  if (term.type === 'tuple' && (term.elements.length === 2 || term.elements.length === 3)) {
    [data, signed] = term.elements;
    if (term.elements.length === 3) maxAge = nonNegative(term.elements[2]);
  } else if (term.type === 'map' && term.pairs.length === 2) {
    for (const [key, value] of term.pairs) {
      if (key.type !== 'atom') return null;
      if (key.value === 'data' && !data) data = value;
      else if (key.value === 'signed' && !signed) signed = value;
      else return null;
    }
  } else {
    return null;
  }
  const identifier = identifierOf(data);
  const signedAtMs = nonNegative(signed);
  if (identifier === null || signedAtMs === null || maxAge === null) return null;
  return { identifier, signedAtMs, maxAgeS: maxAge };
}

/** `term_to_binary({identifier, signed_at_ms, max_age_s})`. */
export function encodeNh1Payload(payload: Nh1Payload): Buffer {
  return termToBinary(
    encodeTuple([
      encodeBinary(Buffer.from(payload.identifier, 'utf8')),
      encodeInteger(payload.signedAtMs),
      encodeInteger(payload.maxAgeS),
    ]),
  );
}

// ---------------------------------------------------------------------------------------------------------
// Tokens

const base64url = (bytes: Buffer) => bytes.toString('base64url');

function mac(key: Buffer, signedPart: string): Buffer {
  return createHmac('sha256', key).update(signedPart, 'ascii').digest();
}

/** A token as Plug.Crypto `sign/4` writes it (for the simulator and the tests). */
export function signNh1Token(payload: Nh1Payload, key: Buffer): string {
  const signedPart = `${PROTECTED_HS256}.${base64url(encodeNh1Payload(payload))}`;
  return `${signedPart}.${base64url(mac(key, signedPart))}`;
}

/**
 * Checks the MAC in constant time, then decodes the payload and applies the server's time window. The
 * embedded max age is not used: the server's window (90 s back, 5 s ahead) overrides it, as in NervesHub.
 */
export function verifyNh1Token(token: string, key: Buffer, nowMs: number): Nh1Result {
  if (token.length > MAX_TOKEN_LENGTH) return { ok: false, reason: 'malformed_token' };
  const parts = token.split('.');
  if (parts.length !== 3 || parts[0] !== PROTECTED_HS256) return { ok: false, reason: 'malformed_token' };
  const [, payloadPart, macPart] = parts;
  if (!BASE64URL.test(payloadPart) || !BASE64URL.test(macPart))
    return { ok: false, reason: 'malformed_token' };
  // Compared as canonical text, so that no second spelling of the same MAC bytes is accepted.
  const given = Buffer.from(macPart, 'ascii');
  const expected = Buffer.from(base64url(mac(key, `${PROTECTED_HS256}.${payloadPart}`)), 'ascii');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    return { ok: false, reason: 'bad_signature' };
  }
  const payload = decodeNh1Payload(Buffer.from(payloadPart, 'base64url'));
  if (!payload) return { ok: false, reason: 'bad_payload' };
  if (payload.signedAtMs > nowMs + NH1_MAX_FUTURE_MS) return { ok: false, reason: 'future' };
  if (payload.signedAtMs + NH1_MAX_PAST_MS < nowMs) return { ok: false, reason: 'expired' };
  return { ok: true, payload };
}

// ---------------------------------------------------------------------------------------------------------
// Headers

function single(headers: IncomingHttpHeaders, name: keyof Nh1Headers): string | null {
  const value = headers[name];
  return typeof value === 'string' ? value : null;
}

/**
 * The four `x-nh-*` headers with their syntax checked (Node lower-cases header names). A missing or repeated
 * header, an algorithm other than NH1_ALG, a malformed key or a non-canonical time → a failure reason.
 */
export function readNh1Headers(
  headers: IncomingHttpHeaders,
): { ok: true; request: Nh1Request } | { ok: false; reason: Nh1Failure } {
  const alg = single(headers, 'x-nh-alg');
  const key = single(headers, 'x-nh-key');
  const time = single(headers, 'x-nh-time');
  const signature = single(headers, 'x-nh-signature');
  if (alg === null || key === null || time === null || signature === null) {
    return { ok: false, reason: 'missing_headers' };
  }
  const params = parseNh1Alg(alg);
  if (!params) return { ok: false, reason: 'bad_alg' };
  if (!ACCESS_KEY.test(key)) return { ok: false, reason: 'bad_key' };
  const timeS = parseNh1Time(time);
  if (timeS === null) return { ok: false, reason: 'bad_time' };
  return { ok: true, request: { alg, params, key, timeS, signature } };
}

/** Derives the key for this request from the plain secret and verifies its token. */
export function verifyNh1Request(request: Nh1Request, secret: string, nowMs: number): Nh1Result {
  const key = deriveNh1Key(secret, nh1Salt(request.alg, request.key, request.timeS), request.params);
  return verifyNh1Token(request.signature, key, nowMs);
}

/** The headers a device with these credentials sends at `timeS` (for the simulator and the tests). */
export function signNh1Headers(options: {
  key: string;
  secret: string;
  identifier: string;
  timeS: number;
  alg?: string;
  /** Reuses derivations (devices signing with one product key in the same second share one). */
  cache?: DerivedKeyCache;
}): Nh1Headers {
  const alg = options.alg ?? NH1_ALG;
  const params = parseNh1Alg(alg);
  if (!params) throw new Error(`unsupported NH1 algorithm: ${alg}`);
  const salt = nh1Salt(alg, options.key, options.timeS);
  const derived = options.cache
    ? options.cache.derive(options.secret, salt, params)
    : deriveNh1Key(options.secret, salt, params);
  const signature = signNh1Token(
    { identifier: options.identifier, signedAtMs: options.timeS * 1000, maxAgeS: NH1_EMBEDDED_MAX_AGE_S },
    derived,
  );
  return {
    'x-nh-alg': alg,
    'x-nh-key': options.key,
    'x-nh-time': String(options.timeS),
    'x-nh-signature': signature,
  };
}
