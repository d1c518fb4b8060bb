import { createHash, randomInt } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import { toString as qrCode } from 'qrcode';

/** RFC 6238 as every authenticator app implements it: HMAC-SHA1, 6 digits, 30-second steps. */
const PERIOD_S = 30;
const DIGITS = 6;
/** A code of the step before or after the server's clock is accepted too (clock drift, typing time). */
const WINDOW = 1;
const ISSUER = 'fleethub';

const totp = (secret: string, email = '') =>
  new TOTP({
    issuer: ISSUER,
    label: email,
    algorithm: 'SHA1',
    digits: DIGITS,
    period: PERIOD_S,
    secret: Secret.fromBase32(secret),
  });

/** 20 random bytes (RFC 4226's recommended length), base32. */
export const newTotpSecret = (): string => new Secret({ size: 20 }).base32;

/** The `otpauth://` URI an authenticator app reads from the QR code. */
export const otpauthUri = (secret: string, email: string): string => totp(secret, email).toString();

/** The URI as a QR code, an SVG document made here (no third-party service sees the secret). */
export const qrCodeSvg = (uri: string): Promise<string> =>
  qrCode(uri, { type: 'svg', margin: 1, errorCorrectionLevel: 'M' });

/** A 6-digit code as people type it (spaces allowed), or undefined when it cannot be one. */
export function normalizeTotpCode(code: string): string | undefined {
  const digits = code.replace(/\s+/g, '');
  return /^\d{6}$/.test(digits) ? digits : undefined;
}

/** The 30-second step whose code this is (within ±1 step of `nowMs`), or undefined when it matches none. */
export function totpStep(secret: string, code: string, nowMs = Date.now()): number | undefined {
  const delta = totp(secret).validate({ token: code, timestamp: nowMs, window: WINDOW });
  return delta === null ? undefined : Math.floor(nowMs / 1000 / PERIOD_S) + delta;
}

/** The current code (for tests and the simulator of an authenticator). */
export const totpCode = (secret: string, nowMs = Date.now()): string =>
  totp(secret).generate({ timestamp: nowMs });

const BACKUP_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789'; // no 0/o, 1/l/i
export const BACKUP_CODE_COUNT = 10;

/** Ten single-use backup codes, `xxxxx-xxxxx` (about 49 bits each). */
export function newBackupCodes(): string[] {
  return Array.from({ length: BACKUP_CODE_COUNT }, () => {
    const chars = Array.from({ length: 10 }, () => BACKUP_ALPHABET[randomInt(BACKUP_ALPHABET.length)]);
    return `${chars.slice(0, 5).join('')}-${chars.slice(5).join('')}`;
  });
}

/** A backup code as people type it (any case, with or without the dash), or undefined when it cannot be one. */
export function normalizeBackupCode(code: string): string | undefined {
  const compact = code.replace(/[\s-]+/g, '').toLowerCase();
  return /^[a-z0-9]{10}$/.test(compact) ? compact : undefined;
}

/** Backup codes are random, so a plain SHA-256 stores them safely (nothing to guess from the hash). */
export const hashBackupCode = (normalized: string): string =>
  createHash('sha256').update(normalized, 'utf8').digest('hex');
