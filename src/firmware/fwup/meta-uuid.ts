import { blake2b } from '@noble/hashes/blake2';
import { uuidFromDigest } from '../formats/firmware-uuid';

/** fwup's namespace UUID 2053dffb-d51e-4310-b93b-956da89f9f34, hashed in front of meta.conf. */
const FWUP_NAMESPACE = Buffer.from('2053dffbd51e4310b93b956da89f9f34', 'hex');

/**
 * The firmware uuid exactly as fwup computes `meta-uuid`: BLAKE2b-256 of the namespace followed by the raw
 * meta.conf bytes, first 16 bytes, version nibble forced to 5 (the variant bits are left alone, as fwup does),
 * lower-case 8-4-4-4-12 hex in byte order.
 */
export function computeMetaUuid(metaConf: Uint8Array): string {
  const hash = blake2b.create({ dkLen: 32 }).update(FWUP_NAMESPACE).update(metaConf).digest();
  const bytes = Buffer.from(hash.subarray(0, 16));
  bytes[6] = (bytes[6] & 0x0f) | 0x50;
  return uuidFromDigest(bytes);
}
