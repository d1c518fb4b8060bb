import { blake2b } from '@noble/hashes/blake2';
import { FWUP_RICH, FWUP_SIGNED } from '../../../test/support/fwup-vectors';
import { computeMetaUuid } from './meta-uuid';

describe('computeMetaUuid', () => {
  it('gives the meta-uuid that fwup printed for a signed archive', () => {
    expect(FWUP_SIGNED.metaConf).toHaveLength(348);
    expect(computeMetaUuid(FWUP_SIGNED.metaConf)).toBe(FWUP_SIGNED.uuid);
  });

  it('gives the meta-uuid that fwup printed for a larger, unsigned meta.conf', () => {
    expect(computeMetaUuid(FWUP_RICH.metaConf)).toBe(FWUP_RICH.uuid);
  });

  it('follows the steps of the reference: BLAKE2b-256 over namespace + meta.conf, version nibble 5, byte order', () => {
    const metaConf = Buffer.from('meta-product=demo_product\nmeta-version=1.2.3\n');
    const namespace = Buffer.from('2053dffbd51e4310b93b956da89f9f34', 'hex');
    const digest = Buffer.from(blake2b(Buffer.concat([namespace, metaConf]), { dkLen: 32 }));
    const expected = Buffer.from(digest.subarray(0, 16));
    expected[6] = (expected[6] & 0x0f) | 0x50;
    const hex = expected.toString('hex');

    const uuid = computeMetaUuid(metaConf);
    expect(uuid).toBe(
      `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`,
    );
    expect(uuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    // The variant byte is the hash byte itself: fwup does not set the RFC 4122 variant bits.
    expect(uuid.slice(19, 21)).toBe(digest.subarray(8, 9).toString('hex'));
  });

  it('does not set the RFC 4122 variant bits (fwup vector with variant nibble c)', () => {
    expect(FWUP_SIGNED.uuid[19]).toBe('c');
    expect(computeMetaUuid(FWUP_SIGNED.metaConf)[19]).toBe('c');
  });

  it('depends on every byte of meta.conf, and only on meta.conf', () => {
    const base = Buffer.from(FWUP_SIGNED.metaConf);
    const changed = Buffer.from(base);
    changed[changed.length - 1] = 0x20;
    expect(computeMetaUuid(changed)).not.toBe(FWUP_SIGNED.uuid);
    expect(computeMetaUuid(Buffer.concat([base, Buffer.from('\n')]))).not.toBe(FWUP_SIGNED.uuid);
    expect(computeMetaUuid(new Uint8Array(base))).toBe(FWUP_SIGNED.uuid);
  });
});
