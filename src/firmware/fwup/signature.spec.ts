import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FWUP_SIGNED } from '../../../test/support/fwup-vectors';
import {
  fwupKeyPairFromSeed,
  fwupPublicKey,
  generateFwupKeyPair,
  signMetaConf,
} from '../../../test/support/fw-builder';
import {
  isValidSigningKey,
  MAX_SIGNED_FILE_BYTES,
  verifyFileSignature,
  verifyMetaSignature,
} from './signature';

describe('verifyMetaSignature', () => {
  const other = generateFwupKeyPair();

  it('accepts the signature written by fwup, with the key fwup generated', () => {
    expect(
      verifyMetaSignature(FWUP_SIGNED.metaConf, FWUP_SIGNED.signature, [
        { name: 'fwup', key: FWUP_SIGNED.publicKey },
      ]),
    ).toBe('fwup');
  });

  it('returns the name of the first key that verifies', () => {
    const keys = [
      { name: 'other', key: other.publicKey },
      { name: 'release', key: FWUP_SIGNED.publicKey },
      { name: 'release-copy', key: FWUP_SIGNED.publicKey },
    ];
    expect(verifyMetaSignature(FWUP_SIGNED.metaConf, FWUP_SIGNED.signature, keys)).toBe('release');
  });

  it('returns null when no key verifies, or there are no keys', () => {
    expect(
      verifyMetaSignature(FWUP_SIGNED.metaConf, FWUP_SIGNED.signature, [
        { name: 'other', key: other.publicKey },
      ]),
    ).toBeNull();
    expect(verifyMetaSignature(FWUP_SIGNED.metaConf, FWUP_SIGNED.signature, [])).toBeNull();
  });

  it('detects a changed meta.conf and a changed signature', () => {
    const keys = [{ name: 'fwup', key: FWUP_SIGNED.publicKey }];
    const metaConf = Buffer.from(FWUP_SIGNED.metaConf.toString('utf8').replace('1.2.3', '1.2.4'));
    expect(verifyMetaSignature(metaConf, FWUP_SIGNED.signature, keys)).toBeNull();
    for (const index of [0, 31, 32, 63]) {
      const signature = Buffer.from(FWUP_SIGNED.signature);
      signature[index] ^= 0x80;
      expect(verifyMetaSignature(FWUP_SIGNED.metaConf, signature, keys)).toBeNull();
    }
  });

  it('returns null for a signature that is not 64 bytes', () => {
    const keys = [{ name: 'fwup', key: FWUP_SIGNED.publicKey }];
    expect(verifyMetaSignature(FWUP_SIGNED.metaConf, FWUP_SIGNED.signature.subarray(0, 63), keys)).toBeNull();
    expect(
      verifyMetaSignature(
        FWUP_SIGNED.metaConf,
        Buffer.concat([FWUP_SIGNED.signature, Buffer.alloc(1)]),
        keys,
      ),
    ).toBeNull();
    expect(verifyMetaSignature(FWUP_SIGNED.metaConf, Buffer.alloc(0), keys)).toBeNull();
  });

  it('skips malformed keys instead of failing', () => {
    const keys = [
      { name: 'short', key: 'AAAA' },
      { name: 'pem', key: '-----BEGIN PUBLIC KEY-----' },
      { name: 'fwup', key: FWUP_SIGNED.publicKey },
    ];
    expect(verifyMetaSignature(FWUP_SIGNED.metaConf, FWUP_SIGNED.signature, keys)).toBe('fwup');
  });

  it('verifies with the key pair the test builder derives from a seed', () => {
    const seeded = fwupKeyPairFromSeed('fleethub');
    expect(fwupKeyPairFromSeed('fleethub').publicKey).toBe(seeded.publicKey);
    expect(isValidSigningKey(seeded.publicKey)).toBe(true);
    const metaConf = Buffer.from('meta-product=x\n');
    expect(
      verifyMetaSignature(metaConf, signMetaConf(metaConf, seeded.privateKey), [
        { name: 's', key: seeded.publicKey },
      ]),
    ).toBe('s');
  });

  it('verifies what node:crypto signs with a generated key pair', () => {
    const metaConf = Buffer.from('meta-product=x\nmeta-version=1.0.0\n');
    const signature = signMetaConf(metaConf, other.privateKey);
    expect(verifyMetaSignature(metaConf, signature, [{ name: 'k', key: other.publicKey }])).toBe('k');
  });
});

describe('isValidSigningKey', () => {
  it('accepts keys as fwup prints them', () => {
    expect(isValidSigningKey(FWUP_SIGNED.publicKey)).toBe(true);
    expect(isValidSigningKey('CGW3Osw/Acu3fnZN9DqWcJ1z1mAlK8OL+mq7wgeRs/o=')).toBe(true);
    for (let i = 0; i < 20; i++) expect(isValidSigningKey(generateFwupKeyPair().publicKey)).toBe(true);
  });

  it('rejects anything but 44 characters of canonical padded base64 of 32 bytes', () => {
    const key = FWUP_SIGNED.publicKey;
    const rejected = [
      '',
      key.slice(0, 43), // no padding
      `${key}=`,
      ` ${key}`,
      `${key}\n`,
      key.replace('=', 'A'),
      Buffer.alloc(33).toString('base64'), // 33 bytes: 44 characters without padding
      Buffer.alloc(31).toString('base64'), // 31 bytes: 44 characters with '=='
      key.replace(/\//g, '_').replace(/\+/g, '-'), // base64url
      `${key.slice(0, 42)}J=`, // low bits set in the last character: not canonical
      key.replace(/^./, '*'),
      fwupPublicKey(generateKeyPairSync('ed25519').publicKey).slice(0, 40) + '====',
    ];
    for (const value of rejected) expect([value, isValidSigningKey(value)]).toEqual([value, false]);
  });
});

describe('verifyFileSignature', () => {
  const signer = fwupKeyPairFromSeed('file-signer');
  const other = fwupKeyPairFromSeed('file-other');
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'fleethub-sig-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('verifies a signature of the first bytes of a file, for any of several keys', async () => {
    const signed = randomBytes(3 * 65536 + 17);
    const path = join(dir, 'file');
    await writeFile(path, Buffer.concat([signed, Buffer.from('unsigned tail')]));
    const signature = sign(null, signed, signer.privateKey);
    const keys = [
      { name: 'broken', key: 'not a key' },
      { name: 'other', key: other.publicKey },
      { name: 'signer', key: signer.publicKey },
    ];
    expect(await verifyFileSignature(path, signed.length, signature, keys)).toBe('signer');
    expect(await verifyFileSignature(path, signed.length + 1, signature, keys)).toBeNull();
    expect(await verifyFileSignature(path, signed.length - 1, signature, keys)).toBeNull();
    expect(await verifyFileSignature(path, signed.length, signature, keys.slice(0, 2))).toBeNull();
    expect(await verifyFileSignature(path, signed.length, signature.subarray(1), keys)).toBeNull();
    expect(await verifyFileSignature(path, signed.length, signature, [])).toBeNull();
  });

  it('verifies a signature of nothing (length 0)', async () => {
    const path = join(dir, 'empty-prefix');
    await writeFile(path, 'anything');
    const signature = sign(null, Buffer.alloc(0), signer.privateKey);
    expect(await verifyFileSignature(path, 0, signature, [{ name: 'signer', key: signer.publicKey }])).toBe(
      'signer',
    );
  });

  it('refuses a range larger than it will read, and a range past the end of the file', async () => {
    const path = join(dir, 'short');
    await writeFile(path, 'short');
    const signature = sign(null, Buffer.from('short!'), signer.privateKey);
    const keys = [{ name: 'signer', key: signer.publicKey }];
    expect(await verifyFileSignature(path, 6, signature, keys)).toBeNull();
    await expect(verifyFileSignature(path, MAX_SIGNED_FILE_BYTES + 1, signature, keys)).rejects.toThrow(
      RangeError,
    );
  });
});
