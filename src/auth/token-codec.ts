import { createHash, randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const PREFIX = 'nhu_';
const SECRET_BYTES = 32;
const PAYLOAD_BYTES = SECRET_BYTES + 4;

export function base62Encode(bytes: Buffer): string {
  let value = BigInt(`0x${bytes.toString('hex') || '0'}`);
  if (value === 0n) return '0';
  let out = '';
  while (value > 0n) {
    out = ALPHABET[Number(value % 62n)] + out;
    value /= 62n;
  }
  return out;
}

export function base62Decode(text: string): Buffer | null {
  if (text.length === 0 || text.length > 64) return null;
  let value = 0n;
  for (const char of text) {
    const digit = ALPHABET.indexOf(char);
    if (digit < 0) return null;
    value = value * 62n + BigInt(digit);
  }
  let hex = value.toString(16);
  if (hex.length % 2) hex = `0${hex}`;
  return Buffer.from(hex, 'hex');
}

function crcBytes(data: Buffer): Buffer {
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(data) >>> 0);
  return crc;
}

/**
 * A new personal access token: `nhu_` + Base62(32 random bytes ‖ CRC32 big-endian), the format NervesHub
 * and secret scanners know. The first byte is never 0 so that the Base62 form decodes to exactly 36 bytes.
 */
export function generateUserToken(): string {
  let secret = randomBytes(SECRET_BYTES);
  while (secret[0] === 0) secret = randomBytes(SECRET_BYTES);
  return PREFIX + base62Encode(Buffer.concat([secret, crcBytes(secret)]));
}

/** True when the token has the right shape and its checksum matches: checked before any database work. */
export function hasValidChecksum(token: string): boolean {
  if (!token.startsWith(PREFIX)) return false;
  const payload = base62Decode(token.slice(PREFIX.length));
  if (!payload || payload.length !== PAYLOAD_BYTES) return false;
  const secret = payload.subarray(0, SECRET_BYTES);
  return crcBytes(secret).equals(payload.subarray(SECRET_BYTES));
}

/** What is stored: SHA-256 of the token string. */
export function hashToken(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/** Extracts the token from `Bearer <t>` or `token <t>` (scheme case-insensitive); null when malformed. */
export function tokenFromAuthorization(header: string | string[] | undefined): string | null {
  if (typeof header !== 'string') return null;
  const match = /^(bearer|token) +(\S+) *$/i.exec(header);
  return match ? match[2] : null;
}
