import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto';
import { basename } from 'node:path';
import { buildSignedFw, type DemoFirmwareMeta } from './demo-firmware';

/** PKCS#8 DER prefix of an Ed25519 private key; the 32-byte seed follows it. */
const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

/** A key pair in fwup's files: `.priv` base64 of the 64-byte secret key (seed, then public key), `.pub` of the public key. */
export interface FwupKeyFiles {
  priv: string;
  pub: string;
}

function rawPublicKey(privateKey: KeyObject): Buffer {
  const spki = createPublicKey(privateKey).export({ format: 'der', type: 'spki' });
  return spki.subarray(spki.length - 32);
}

/** A new ed25519 key pair as `fwup -g` writes it (fwup-key.priv, fwup-key.pub). */
export function generateFwupKeyFiles(): FwupKeyFiles {
  const { privateKey } = generateKeyPairSync('ed25519');
  const pkcs8 = privateKey.export({ format: 'der', type: 'pkcs8' });
  const seed = pkcs8.subarray(pkcs8.length - 32);
  const pub = rawPublicKey(privateKey);
  return { priv: Buffer.concat([seed, pub]).toString('base64'), pub: pub.toString('base64') };
}

/** The private key of an fwup `.priv` file's text; an Error saying what is wrong otherwise. */
export function readFwupPrivateKey(text: string): KeyObject {
  const raw = Buffer.from(text.trim(), 'base64');
  if (raw.length !== 64)
    throw new Error('not an fwup private key (base64 of 64 bytes, as fwup -g writes it)');
  const key = createPrivateKey({
    key: Buffer.concat([ED25519_PKCS8_PREFIX, raw.subarray(0, 32)]),
    format: 'der',
    type: 'pkcs8',
  });
  if (!rawPublicKey(key).equals(raw.subarray(32))) {
    throw new Error('not an fwup private key: its public half does not match its seed');
  }
  return key;
}

/**
 * A signed archive of one file, as `fwup -c` then `fwup -S` make it: the file as the resource (named after it),
 * meta.conf with its length and BLAKE2b-256, signed with the key.
 */
export function buildArchiveFile(
  meta: DemoFirmwareMeta,
  file: { path: string; data: Buffer },
  privateKey: KeyObject,
): Buffer {
  const name = basename(file.path).replace(/[^A-Za-z0-9_.-]/g, '_') || 'archive.bin';
  return buildSignedFw(meta, { name, data: file.data }, privateKey);
}
