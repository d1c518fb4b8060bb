import { crc32 } from 'node:zlib';
import {
  base62Decode,
  base62Encode,
  generateUserToken,
  hashToken,
  hasValidChecksum,
  tokenFromAuthorization,
} from './token-codec';

describe('personal access tokens', () => {
  it('are nhu_ + Base62(32 random bytes ‖ CRC32 big-endian)', () => {
    for (let i = 0; i < 200; i++) {
      const token = generateUserToken();
      expect(token).toMatch(/^nhu_[0-9A-Za-z]+$/);
      const payload = base62Decode(token.slice(4))!;
      expect(payload).toHaveLength(36);
      expect(payload.readUInt32BE(32)).toBe(crc32(payload.subarray(0, 32)) >>> 0);
      expect(hasValidChecksum(token)).toBe(true);
    }
  });

  it('Base62 round-trips and uses 0-9A-Za-z', () => {
    const bytes = Buffer.from('01ff7e00aa', 'hex');
    expect(base62Decode(base62Encode(bytes))).toEqual(bytes);
    expect(base62Encode(Buffer.from([61]))).toBe('z');
    expect(base62Encode(Buffer.from([62]))).toBe('10');
    expect(base62Decode('a-b')).toBeNull();
  });

  it('rejects a changed character, a wrong prefix and garbage before any lookup', () => {
    const token = generateUserToken();
    const last = token[token.length - 1];
    const changed = token.slice(0, -1) + (last === 'a' ? 'b' : 'a');
    expect(hasValidChecksum(changed)).toBe(false);
    expect(hasValidChecksum(token.replace('nhu_', 'nhp_'))).toBe(false);
    expect(hasValidChecksum('nhu_')).toBe(false);
    expect(hasValidChecksum(`nhu_${'z'.repeat(200)}`)).toBe(false);
  });

  it('stores a SHA-256 of the token string (vector computed with Python hashlib)', () => {
    expect(hashToken('nhu_x').toString('hex')).toBe(
      '2457ece521d65d51233ee47a3c2b678f7d44ea8430aa05bca725c8b912efc39e',
    );
  });

  it('reads Bearer and token schemes, case-insensitively', () => {
    expect(tokenFromAuthorization('Bearer abc')).toBe('abc');
    expect(tokenFromAuthorization('token abc')).toBe('abc');
    expect(tokenFromAuthorization('BEARER abc')).toBe('abc');
    expect(tokenFromAuthorization('Basic abc')).toBeNull();
    expect(tokenFromAuthorization('Bearer')).toBeNull();
    expect(tokenFromAuthorization('Bearer a b')).toBeNull();
    expect(tokenFromAuthorization(undefined)).toBeNull();
    expect(tokenFromAuthorization(['Bearer a', 'Bearer b'])).toBeNull();
  });
});
