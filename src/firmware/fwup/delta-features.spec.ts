import { deltaIncompatibilities, fwupCanApply, readDeltaFeatures } from './delta-features';

/** A meta.conf as fwup compiles it: functions as `funlist`, sections titled with quoted strings. */
const COMPILED = `meta-product="demo"
meta-version="1.0.0"
file-resource "boot.img" {
  length=1024
}
file-resource "rootfs.img" {
  length=4096
}
file-resource "unused.bin" {
  length=10
}
task "complete" {
  on-resource "rootfs.img" {
    funlist = {"2", "raw_write", "63"}
  }
  on-resource "unused.bin" {
    funlist = {"2", "raw_write", "0"}
  }
}
task "upgrade.a" {
  on-resource "boot.img" {
    delta-source-fat-offset = 63
    delta-source-fat-path = "boot.img"
    funlist = {"3", "fat_write", "63", "boot.img"}
  }
  on-resource "rootfs.img" {
    delta-source-raw-offset = 2048
    delta-source-raw-count = 4096
    funlist = {"1", "info", "2", "raw_write", "1024"}
  }
}
task "upgrade.b" {
  on-resource "rootfs.img" {
    delta-source-raw-offset = 1024
    delta-source-raw-count = 4096
    funlist = {"2", "raw_write", "2048"}
  }
}
`;

describe('readDeltaFeatures', () => {
  it('reads the delta-capable resources, the resources the upgrade uses and the fwup needed', () => {
    const features = readDeltaFeatures(COMPILED);
    expect(features.deltaCapable).toBe(true);
    expect(features.rawDeltas).toBe(true);
    expect(features.fatDeltas).toBe(true);
    expect(features.deltaResources).toEqual(['boot.img', 'rootfs.img']);
    expect(features.upgradeResources).toEqual(['boot.img', 'rootfs.img']);
    // FAT deltas came with fwup 1.10.0.
    expect(features.deltaFwupVersion).toBe('1.10.0');
    expect(features.blockCacheSizeMb).toBeNull();
  });

  it('reads the source form (function calls) too, and raw deltas alone need fwup 1.6.0', () => {
    const features = readDeltaFeatures(`
      block-cache-size-mb = 32
      task upgrade {
        on-resource rootfs.img {
          delta-source-raw-offset = \${ROOTFS_B}
          delta-source-raw-count = 100
          raw_write(\${ROOTFS_A})
        }
      }`);
    expect(features.deltaResources).toEqual(['rootfs.img']);
    expect(features.deltaFwupVersion).toBe('1.6.0');
    expect(features.blockCacheSizeMb).toBe(32);
  });

  it('is not delta-capable without a complete delta source, and never below require-fwup-version', () => {
    const partial = readDeltaFeatures(`require-fwup-version="1.12.0"
      task upgrade { on-resource a { delta-source-raw-offset = 1
        funlist = {"2", "raw_write", "0"} } }`);
    expect(partial.deltaCapable).toBe(false);
    // Named by a delta-source-* setting all the same (NervesHub's list of delta files).
    expect(partial.deltaResources).toEqual(['a']);
    expect(partial.deltaFwupVersion).toBe('1.12.0');
  });

  it('needs fwup 1.13.0 for a delta of an encrypted resource', () => {
    const features = readDeltaFeatures(`task upgrade { on-resource a {
      delta-source-raw-offset = 1
      delta-source-raw-count = 2
      delta-source-raw-options = "cipher=aes-cbc-plain,secret=\${KEY}"
      funlist = {"3", "raw_write", "0", "cipher=aes-cbc-plain,secret=\${KEY}"} } }`);
    expect(features.encryptedDeltas).toBe(true);
    expect(features.deltaFwupVersion).toBe('1.13.0');
  });

  it('refuses what fwup could not parse', () => {
    expect(() => readDeltaFeatures('task upgrade {')).toThrow(/syntax error/);
    expect(() => readDeltaFeatures('a = \0')).toThrow(/NUL/);
  });
});

describe('deltaIncompatibilities', () => {
  it('wants the source to write raw what the target patches raw', () => {
    const target = readDeltaFeatures(COMPILED);
    const fatSource = readDeltaFeatures(`task upgrade { on-resource "rootfs.img" {
      funlist = {"3", "fat_write", "1", "x"} } }`);
    expect(deltaIncompatibilities(fatSource, target)).toEqual([
      'rootfs.img: the target uses raw deltas but the source has no raw write',
    ]);
    expect(deltaIncompatibilities(target, target)).toEqual([]);
  });
});

describe('fwupCanApply', () => {
  it.each([
    ['1.10.1', '1.6.0', true],
    ['1.6.0', '1.6.0', true],
    ['1.5.9', '1.6.0', false],
    ['1.10.0', '1.13.0', false],
    [null, '1.6.0', false],
    ['garbage', '1.6.0', false],
    [' 1.13.0 ', '1.13.0', true],
  ])('fwup %p applies a delta needing %p: %p', (device, required, expected) => {
    expect(fwupCanApply(device, required)).toBe(expected);
  });
});
