import { readFile, stat, writeFile } from 'node:fs/promises';
import {
  buildFw,
  fwupKeyPairFromSeed,
  generateFwupKeyPair,
  patchZipEntry,
  renderMetaConf,
  type BuildFwOptions,
} from '../../../test/support/fw-builder';
import { FWUP_RICH, FWUP_SIGNED } from '../../../test/support/fwup-vectors';
import { formatErrorMessage, readerFiles, readFailure } from '../../../test/support/reader-files';
import { hasFwupSignature, MAX_ARCHIVE_ENTRIES, readFirmwareArchive } from './archive-reader';
import { FirmwareFormatError } from './firmware-format-error';
import { computeMetaUuid } from './meta-uuid';
import { verifyMetaSignature } from './signature';

const files = readerFiles('fleethub-fw-', '.fw');
const { write } = files;

async function build(options: BuildFwOptions = {}): Promise<string> {
  const path = files.path();
  await buildFw(path, options);
  return path;
}

const failure = (path: string) => readFailure(readFirmwareArchive, path);
const formatError = (path: string) => formatErrorMessage(readFirmwareArchive, path);

/** Deterministic PRNG (mulberry32). */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('readFirmwareArchive on archives written by fwup', () => {
  it('reads a signed archive: signature first, meta.conf, uuid and metadata as fwup prints them', async () => {
    const archive = await readFirmwareArchive(await write(FWUP_SIGNED.fw));
    expect(archive.tool).toBe('fwup');
    expect(archive.size).toBe(FWUP_SIGNED.fw.length);
    expect(archive.entries.map((e) => e.name)).toEqual([
      'meta.conf.ed25519',
      'meta.conf',
      'data/payload.bin',
    ]);
    expect(archive.signature).toEqual(FWUP_SIGNED.signature);
    expect(archive.metaConf).toEqual(FWUP_SIGNED.metaConf);
    expect(archive.uuid).toBe(FWUP_SIGNED.uuid);
    expect(archive.metadata).toEqual(FWUP_SIGNED.metadata);
    expect(
      verifyMetaSignature(archive.metaConf, archive.signature!, [{ name: 'k', key: FWUP_SIGNED.publicKey }]),
    ).toBe('k');
  });

  it('reads an unsigned archive with several resources', async () => {
    const archive = await readFirmwareArchive(await write(FWUP_RICH.fw));
    expect(archive.signature).toBeNull();
    expect(archive.entries).toEqual([
      { name: 'meta.conf', compressedSize: 665, uncompressedSize: 1311, compressionMethod: 8 },
      { name: 'data/zImage', compressedSize: 17, uncompressedSize: 15, compressionMethod: 8 },
      { name: 'data/rootfs.img', compressedSize: 20, uncompressedSize: 3000, compressionMethod: 8 },
    ]);
    expect(archive.uuid).toBe(FWUP_RICH.uuid);
    expect(archive.metadata).toEqual(FWUP_RICH.metadata);
  });
});

describe('readFirmwareArchive on archives from the test builder', () => {
  it('reads a signed archive', async () => {
    const keys = generateFwupKeyPair();
    // yazl puts only a DOS time (local clock fields, 2 s steps) in local headers; the reader takes it as UTC.
    const mtime = new Date(2024, 4, 6, 7, 8, 10);
    const path = files.path();
    const built = await buildFw(path, {
      signWith: keys.privateKey,
      meta: { product: 'widget', version: '2.1.0-rc.1', vcsIdentifier: 'abc', misc: 'x y' },
      resources: [
        { name: 'rootfs.img', size: 3 * 1024 * 1024 + 5 },
        { name: 'zImage', content: 'kernel', compress: false },
      ],
      metaConfMtime: mtime,
    });
    const archive = await readFirmwareArchive(path);
    expect(archive.size).toBe(built.size);
    expect(archive.entries.map((e) => [e.name, e.uncompressedSize])).toEqual([
      ['meta.conf.ed25519', 64],
      ['meta.conf', built.metaConf.length],
      ['data/rootfs.img', 3 * 1024 * 1024 + 5],
      ['data/zImage', 6],
    ]);
    expect(archive.metaConf).toEqual(built.metaConf);
    expect(archive.signature).toEqual(built.signature);
    expect(archive.uuid).toBe(computeMetaUuid(built.metaConf));
    expect(archive.metadata).toMatchObject({
      tool: 'fwup',
      product: 'widget',
      version: '2.1.0-rc.1',
      platform: 'rpi4',
      architecture: 'aarch64',
      vcsIdentifier: 'abc',
      misc: 'x y',
      creationDate: '2024-05-06T07:08:10Z',
    });
    expect(
      verifyMetaSignature(archive.metaConf, archive.signature!, [{ name: 'ci', key: keys.publicKey }]),
    ).toBe('ci');
  });

  it('reads an unsigned archive', async () => {
    const archive = await readFirmwareArchive(await build());
    expect(archive.signature).toBeNull();
    expect(archive.entries.map((e) => e.name)).toEqual(['meta.conf', 'data/rootfs.img']);
  });

  it('prefers meta-creation-date from meta.conf over the entry time, as fwup does', async () => {
    const path = await build({
      meta: { creationDate: '2016-01-02T03:04:05Z' },
      metaConfMtime: new Date('2024-01-01T00:00:00Z'),
    });
    expect((await readFirmwareArchive(path)).metadata.creationDate).toBe('2016-01-02T03:04:05Z');
  });

  it('gives the same uuid for a signed and an unsigned copy of the same meta.conf', async () => {
    const metaConf = renderMetaConf({ product: 'p', version: '1.0.0', platform: 'a', architecture: 'b' }, []);
    const signed = await readFirmwareArchive(
      await build({ metaConf, signWith: generateFwupKeyPair().privateKey }),
    );
    const unsigned = await readFirmwareArchive(await build({ metaConf }));
    expect(signed.uuid).toBe(unsigned.uuid);
  });

  it('accepts meta.conf of exactly 10 and 49 999 bytes', async () => {
    const small = await readFirmwareArchive(await build({ metaConf: 'meta-a=bc\n' }));
    expect(small.metaConf).toHaveLength(10);
    const base = 'meta-product=p\n';
    const large = await readFirmwareArchive(
      await build({ metaConf: base + `#${'x'.repeat(49_999 - base.length - 2)}\n` }),
    );
    expect(large.metaConf).toHaveLength(49_999);
    expect(large.metadata.product).toBe('p');
  });

  it('reads a 200 MiB archive without loading it', async () => {
    const path = await build({
      signWith: generateFwupKeyPair().privateKey,
      resources: [{ name: 'rootfs.img', size: 200 * 1024 * 1024, compress: false }],
      hashResources: false,
    });
    expect((await stat(path)).size).toBeGreaterThan(200 * 1024 * 1024);
    const before = process.memoryUsage().rss;
    const archive = await readFirmwareArchive(path);
    expect(archive.entries[2]).toEqual({
      name: 'data/rootfs.img',
      compressedSize: 200 * 1024 * 1024,
      uncompressedSize: 200 * 1024 * 1024,
      compressionMethod: 0,
    });
    expect(process.memoryUsage().rss - before).toBeLessThan(64 * 1024 * 1024);
  }, 120_000);
});

describe('readFirmwareArchive rejects malformed files with a FirmwareFormatError', () => {
  it('a file that is not a zip', async () => {
    expect(await formatError(await build({ tamper: 'not-a-zip' }))).toBe('is not a zip archive');
    expect(await formatError(await write(Buffer.from('PK')))).toBe('is not a zip archive');
    expect(await formatError(await write(Buffer.from('\x7fELF\x02\x01\x01')))).toBe('is not a zip archive');
  });

  it('an empty file', async () => {
    expect(await formatError(await write(Buffer.alloc(0)))).toBe('is empty');
  });

  it('an empty zip archive', async () => {
    const message = await formatError(await build({ resources: [], tamper: 'no-meta-conf' }));
    expect(message).toBe('has no meta.conf (the zip archive is empty)');
  });

  it('a truncated archive', async () => {
    expect(await formatError(await build({ tamper: 'truncated' }))).toMatch(
      /^is not a valid zip archive \(it may be truncated\): /,
    );
  });

  it('an archive cut at any length', async () => {
    const whole = await readFile(await build({ signWith: generateFwupKeyPair().privateKey }));
    const lengths = new Set([
      1,
      3,
      4,
      5,
      29,
      30,
      31,
      100,
      whole.length - 23,
      whole.length - 22,
      whole.length - 1,
    ]);
    for (let n = 0; n < whole.length; n += 37) lengths.add(n);
    for (const length of lengths) {
      const err = await failure(await write(whole.subarray(0, length)));
      expect([length, err instanceof FirmwareFormatError]).toEqual([length, true]);
    }
  });

  it('an archive without meta.conf', async () => {
    expect(await formatError(await build({ tamper: 'no-meta-conf' }))).toBe('has no meta.conf');
    expect(
      await formatError(await build({ tamper: 'no-meta-conf', signWith: generateFwupKeyPair().privateKey })),
    ).toBe('has no meta.conf');
  });

  it('a signature that is not the first entry', async () => {
    expect(await formatError(await build({ tamper: 'signature-not-first' }))).toBe(
      'meta.conf.ed25519 is not the first entry',
    );
    const afterResources = await build({
      extraEntries: [{ name: 'meta.conf.ed25519', content: Buffer.alloc(64) }],
    });
    expect(await formatError(afterResources)).toBe('meta.conf.ed25519 is not the first entry');
  });

  it('meta.conf that is not at the start', async () => {
    const unsigned = await build({ extraEntries: [{ name: 'data/first', content: 'x', position: 'start' }] });
    expect(await formatError(unsigned)).toBe('meta.conf is not the first entry');
    const signed = await build({
      signWith: generateFwupKeyPair().privateKey,
      extraEntries: [{ name: 'data/between', content: 'x', position: 'after-signature' }],
    });
    expect(await formatError(signed)).toBe('meta.conf does not directly follow meta.conf.ed25519');
  });

  it('a signature that is not 64 bytes', async () => {
    for (const size of [0, 63, 65, 128]) {
      const path = await build({
        extraEntries: [{ name: 'meta.conf.ed25519', content: Buffer.alloc(size, 1), position: 'start' }],
      });
      expect([size, await formatError(path)]).toEqual([size, 'meta.conf.ed25519 is not 64 bytes']);
    }
  });

  it('meta.conf that is too small or too large for fwup', async () => {
    expect(await formatError(await build({ metaConf: 'a=b\n' }))).toBe('meta.conf is too small (4 bytes)');
    expect(await formatError(await build({ metaConf: `#${'x'.repeat(49_998)}\n` }))).toBe(
      'meta.conf is too large (50000 bytes; fwup accepts at most 49999)',
    );
  });

  it('a meta.conf that declares a huge size (zip bomb)', async () => {
    const path = await build();
    await patchZipEntry(path, 'meta.conf', { uncompressedSize: 0xfffffff0 });
    expect(await formatError(path)).toMatch(
      /^declares an impossible size for meta\.conf|^meta\.conf is too large/,
    );
    const plausible = await build();
    await patchZipEntry(plausible, 'meta.conf', (e) => ({
      uncompressedSize: Math.min(e.compressedSize * 1000, 60_000),
    }));
    expect(await formatError(plausible)).toMatch(
      /^meta\.conf is too large \(\d+ bytes; fwup accepts at most 49999\)$/,
    );
  });

  it('a meta.conf whose data does not match its declared size', async () => {
    const path = await build();
    await patchZipEntry(path, 'meta.conf', (e) => ({ uncompressedSize: e.uncompressedSize - 1 }));
    expect(await formatError(path)).toMatch(/^meta\.conf cannot be read: /);
    const longer = await build();
    await patchZipEntry(longer, 'meta.conf', (e) => ({ uncompressedSize: e.uncompressedSize + 1 }));
    expect(await formatError(longer)).toMatch(/^meta\.conf cannot be read: /);
  });

  it('a resource that declares an impossible size', async () => {
    const path = await build({ resources: [{ name: 'rootfs.img', size: 100 }] });
    await patchZipEntry(path, 'data/rootfs.img', { uncompressedSize: 0xfffffff0 });
    expect(await formatError(path)).toBe('declares an impossible size for data/rootfs.img');
  });

  it('a damaged meta.conf (CRC or deflate data)', async () => {
    const crc = await build();
    await patchZipEntry(crc, 'meta.conf', (e) => ({ crc32: e.crc32 ^ 1 }));
    expect(await formatError(crc)).toBe('meta.conf cannot be read: CRC-32 mismatch');

    const data = await build();
    const bytes = await readFile(data);
    const start = bytes.indexOf('meta.conf', 0) + 'meta.conf'.length;
    for (let i = start; i < start + 40; i++) bytes[i] ^= 0x5a;
    await writeFile(data, bytes);
    expect(await formatError(data)).toMatch(/^meta\.conf cannot be read: /);
  });

  it('a directory entry', async () => {
    const path = await build({ extraEntries: [{ name: 'data', directory: true }] });
    expect(await formatError(path)).toBe('contains a directory entry (data/)');
  });

  it('an encrypted entry', async () => {
    const path = await build();
    await patchZipEntry(path, 'data/rootfs.img', (e) => ({
      generalPurposeBitFlag: e.generalPurposeBitFlag | 1,
    }));
    expect(await formatError(path)).toBe('contains an encrypted entry (data/rootfs.img)');
    const strong = await build();
    await patchZipEntry(strong, 'data/rootfs.img', (e) => ({
      generalPurposeBitFlag: e.generalPurposeBitFlag | 0x41,
    }));
    expect(await formatError(strong)).toMatch(
      /^is a damaged zip archive: strong encryption is not supported/,
    );
  });

  it('an unsupported compression method', async () => {
    const path = await build();
    await patchZipEntry(path, 'data/rootfs.img', { compressionMethod: 12 });
    expect(await formatError(path)).toBe('uses an unsupported compression method for data/rootfs.img');
  });

  it('a name used twice', async () => {
    const path = await build({ extraEntries: [{ name: 'data/rootfs.img', content: 'again' }] });
    expect(await formatError(path)).toBe('contains data/rootfs.img more than once');
    const twoMetaConfs = await build({
      extraEntries: [{ name: 'meta.conf', content: 'meta-product=other\n' }],
    });
    expect(await formatError(twoMetaConfs)).toBe('contains meta.conf more than once');
  });

  it('unsafe file names', async () => {
    for (const name of ['../a/rootfs.img', '/data/rootfs.im', 'data\\rootfs.img', 'C:/a/rootfs.img']) {
      const path = await build();
      await patchZipEntry(path, 'data/rootfs.img', { fileName: name });
      expect([name, await formatError(path)]).toEqual([
        name,
        expect.stringMatching(/^is a damaged zip archive: /),
      ]);
    }
  });

  it('entries that overlap, hide data or disagree with their local header', async () => {
    const overlapping = await build({
      resources: [
        { name: 'a.img', size: 10 },
        { name: 'b.img', size: 10 },
      ],
    });
    await patchZipEntry(overlapping, 'data/b.img', { localHeaderOffset: 0 });
    expect(await formatError(overlapping)).toMatch(/^is a damaged zip archive: /);

    const renamed = await build();
    const bytes = await readFile(renamed);
    const local = bytes.indexOf('data/rootfs.img');
    bytes.write('data/rootfs.IMG', local);
    await writeFile(renamed, bytes);
    expect(await formatError(renamed)).toBe(
      'is a damaged zip archive: the local header of data/rootfs.img names another file',
    );

    const gap = await build({
      resources: [
        { name: 'a.img', size: 10 },
        { name: 'b.img', size: 10 },
      ],
    });
    await patchZipEntry(gap, 'data/b.img', (e) => ({ localHeaderOffset: e.localHeaderOffset + 1 }));
    expect(await formatError(gap)).toMatch(/^is a damaged zip archive: /);

    const prefixed = await readFile(await build());
    expect(await formatError(await write(Buffer.concat([prefixed.subarray(0, 30), prefixed])))).toMatch(
      /^is a damaged zip archive: /,
    );
  });

  it('a meta.conf that fwup cannot parse', async () => {
    expect(await formatError(await build({ metaConf: 'meta-product = "unterminated\n' }))).toBe(
      'meta.conf has a syntax error on line 1: unterminated string',
    );
  });

  it('a meta.conf that sets meta-uuid or meta-nickname', async () => {
    const uuid = renderMetaConf({ product: 'p' }, []) + 'meta-uuid="00000000-0000-5000-0000-000000000000"\n';
    expect(await formatError(await build({ metaConf: uuid }))).toBe(
      'meta.conf sets meta-uuid, which fwup computes itself',
    );
    const nickname = renderMetaConf({ product: 'p' }, []) + 'meta-nickname="some-words"\n';
    expect(await formatError(await build({ metaConf: nickname }))).toBe(
      'meta.conf sets meta-nickname, which fwup computes itself',
    );
  });

  it('too many entries', async () => {
    const extraEntries = Array.from({ length: MAX_ARCHIVE_ENTRIES }, (_, i) => ({
      name: `data/f${i}`,
      content: '',
    }));
    expect(await formatError(await build({ extraEntries }))).toBe(
      `has too many entries (${MAX_ARCHIVE_ENTRIES + 2}; at most ${MAX_ARCHIVE_ENTRIES})`,
    );
  });

  it('random corruption: only FirmwareFormatError, or a successful read', async () => {
    const original = await readFile(
      await build({
        signWith: fwupKeyPairFromSeed('corruption').privateKey,
        resources: [{ name: 'r', size: 200 }],
        metaConfMtime: new Date(2020, 0, 2, 3, 4, 6),
      }),
    );
    const random = prng(4242);
    let failures = 0;
    for (let i = 0; i < 400; i++) {
      const bytes = Buffer.from(original);
      const flips = 1 + Math.floor(random() * 4);
      for (let f = 0; f < flips; f++) bytes[Math.floor(random() * bytes.length)] = Math.floor(random() * 256);
      try {
        await readFirmwareArchive(await write(bytes));
      } catch (err) {
        if (!(err instanceof FirmwareFormatError)) throw err;
        failures += 1;
      }
    }
    expect(failures).toBeGreaterThan(100);
  });
});

describe('readFirmwareArchive and file system errors', () => {
  it('passes them through unchanged', async () => {
    const err = await failure(files.path('missing.fw'));
    expect(err).not.toBeInstanceOf(FirmwareFormatError);
    expect(err).toMatchObject({ code: 'ENOENT' });
    expect(await failure(files.dir())).toMatchObject({ code: 'EISDIR' });
  });
});

describe('hasFwupSignature', () => {
  it('recognises the zip local header at the start of a file', () => {
    expect(hasFwupSignature(FWUP_SIGNED.fw.subarray(0, 4))).toBe(true);
    expect(hasFwupSignature(FWUP_SIGNED.fw)).toBe(true);
    expect(hasFwupSignature(Buffer.from('PK\x05\x06'))).toBe(false);
    expect(hasFwupSignature(Buffer.from('PK\x03'))).toBe(false);
    expect(hasFwupSignature(Buffer.from([0xe9, 0x03, 0x02, 0x20]))).toBe(false);
  });
});
