import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { open } from 'node:fs/promises';

/** DER prefix of an Ed25519 SubjectPublicKeyInfo; the raw 32-byte key follows it. */
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
const SIGNING_KEY_PATTERN = /^[A-Za-z0-9+/]{43}=$/;

export const ED25519_SIGNATURE_SIZE = 64;

/** A signing key as fwup prints it: exactly 44 characters of canonical, padded base64 of a 32-byte ed25519 key. */
export function isValidSigningKey(base64: string): boolean {
  return signingKeyObject(base64) !== null;
}

function signingKeyObject(base64: string): KeyObject | null {
  if (!SIGNING_KEY_PATTERN.test(base64)) return null;
  const raw = Buffer.from(base64, 'base64');
  // Node ignores the unused low bits of the last character; a canonical encoding has them zero.
  if (raw.length !== 32 || raw.toString('base64') !== base64) return null;
  try {
    return createPublicKey({ key: Buffer.concat([ED25519_SPKI_PREFIX, raw]), format: 'der', type: 'spki' });
  } catch {
    return null;
  }
}

/**
 * The name of the first key whose ed25519 signature over the raw meta.conf bytes verifies, or null when none does
 * (including when the signature is not 64 bytes or a key is malformed).
 */
export function verifyMetaSignature(
  metaConf: Uint8Array,
  signature: Uint8Array,
  keys: readonly { name: string; key: string }[],
): string | null {
  if (signature.length !== ED25519_SIGNATURE_SIZE) return null;
  for (const { name, key } of keys) {
    const publicKey = signingKeyObject(key);
    if (publicKey === null) continue;
    try {
      if (verify(null, metaConf, publicKey, signature)) return name;
    } catch {
      // A key OpenSSL cannot use verifies nothing.
    }
  }
  return null;
}

/**
 * The largest signed range `verifyFileSignature` reads. Node's ed25519 (OpenSSL) verifies a message held in memory,
 * so the range is read whole; 16 MiB is more than any AtomVM packbeam needs (the flash it is written to is smaller).
 */
export const MAX_SIGNED_FILE_BYTES = 16 * 1024 * 1024;

/**
 * Like `verifyMetaSignature`, for the first `length` bytes of the file at `filePath` (at most
 * `MAX_SIGNED_FILE_BYTES`; the caller refuses longer ranges). The name of the first key whose signature verifies,
 * or null.
 */
export async function verifyFileSignature(
  filePath: string,
  length: number,
  signature: Uint8Array,
  keys: readonly { name: string; key: string }[],
): Promise<string | null> {
  if (length > MAX_SIGNED_FILE_BYTES) throw new RangeError(`signed range of ${length} bytes is too large`);
  if (signature.length !== ED25519_SIGNATURE_SIZE || keys.length === 0) return null;
  const signed = Buffer.alloc(length);
  const file = await open(filePath, 'r');
  try {
    const { bytesRead } = await file.read(signed, 0, length, 0);
    if (bytesRead !== length) return null;
  } finally {
    await file.close();
  }
  return verifyMetaSignature(signed, signature, keys);
}
