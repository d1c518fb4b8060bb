import { createPublicKey, verify, type KeyObject } from 'node:crypto';

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
