import fc from 'fast-check';
import { rm } from 'node:fs/promises';
import { buildEspImage, type EspImageOptions } from '../../../test/support/fw-builder-esp-idf';
import { formatErrorMessage, readerFiles } from '../../../test/support/reader-files';
import { FirmwareFormatError } from '../fwup/firmware-format-error';
import { chipPlatform, readEspAppImage } from './esp-app-image';

const { write } = readerFiles('fleethub-esp-', '.bin');

const build = (options: EspImageOptions = {}) => write(buildEspImage(options).bytes);

const formatError = (path: string) => formatErrorMessage(readEspAppImage, path);

describe('readEspAppImage', () => {
  it('reads the app descriptor and the chip', async () => {
    const built = buildEspImage({
      projectName: 'blinky',
      version: 'v2.1',
      idfVersion: 'v5.3.1-dirty',
      chipId: 0x0005,
      secureVersion: 3,
    });
    const image = await readEspAppImage(await write(built.bytes));
    expect(image).toEqual({
      tool: 'esp-idf',
      size: built.bytes.length,
      chipId: 5,
      platform: 'esp32c3',
      architecture: 'riscv',
      projectName: 'blinky',
      version: 'v2.1',
      idfVersion: 'v5.3.1-dirty',
      secureVersion: 3,
      uuid: built.uuid,
      elfSha256: built.elfSha256.toString('hex'),
      secureBoot: null,
    });
    expect(built.uuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  });

  it('fills fields of their full width (no NUL inside)', async () => {
    const image = await readEspAppImage(
      await build({ projectName: 'p'.repeat(31), version: '1.2.3-' + 'a'.repeat(25) }),
    );
    expect(image.projectName).toBe('p'.repeat(31));
    expect(image.version).toBe('1.2.3-' + 'a'.repeat(25));
  });

  it.each([
    [0x0000, 'esp32', 'xtensa'],
    [0x0002, 'esp32s2', 'xtensa'],
    [0x0005, 'esp32c3', 'riscv'],
    [0x0009, 'esp32s3', 'xtensa'],
    [0x000c, 'esp32c2', 'riscv'],
    [0x000d, 'esp32c6', 'riscv'],
    [0x0010, 'esp32h2', 'riscv'],
    [0x0012, 'esp32p4', 'riscv'],
    [0x0017, 'esp32c5', 'riscv'],
    [0x0042, 'esp32-0042', 'unknown'],
  ])('chip id %i is %s/%s', async (chipId, platform, architecture) => {
    expect(chipPlatform(chipId)).toEqual({ platform, architecture });
    expect(await readEspAppImage(await build({ chipId }))).toMatchObject({ platform, architecture });
  });

  it.each([0x02, 0x03] as const)('accepts an intact Secure Boot v2 sector (version %i)', async (version) => {
    const built = buildEspImage({ secureBoot: { version } });
    expect(built.bytes.length % 4096).toBe(0);
    const image = await readEspAppImage(await write(built.bytes));
    expect(image.secureBoot).toBe(version === 0x02 ? 'rsa-3072' : 'ecdsa');
  });

  it('refuses a Secure Boot sector whose CRC does not match', async () => {
    expect(await formatError(await build({ secureBoot: { version: 2, tamper: 'crc' } }))).toMatch(
      /damaged Secure Boot signature block \(its CRC32/,
    );
  });

  it('refuses a Secure Boot sector whose digest does not match the image', async () => {
    expect(await formatError(await build({ secureBoot: { version: 2, tamper: 'digest' } }))).toMatch(
      /image digest does not match/,
    );
    expect(await formatError(await build({ secureBoot: { version: 3, tamper: 'image' } }))).toMatch(
      /image digest does not match/,
    );
  });

  it('treats an unaligned image, or a last sector without the block magic, as unsigned', async () => {
    const signed = buildEspImage({ secureBoot: { version: 2, tamper: 'crc' } }).bytes;
    const unaligned = await write(Buffer.concat([signed, Buffer.from([0xff])]));
    expect((await readEspAppImage(unaligned)).secureBoot).toBeNull();
    const noMagic = Buffer.from(signed);
    noMagic[noMagic.length - 4096] = 0xff;
    expect((await readEspAppImage(await write(noMagic))).secureBoot).toBeNull();
  });

  it('refuses a file too short for the headers', async () => {
    const bytes = buildEspImage().bytes;
    expect(await formatError(await write(bytes.subarray(0, 0x20 + 255)))).toMatch(/too short/);
    expect(await formatError(await write(bytes.subarray(0, 1)))).toMatch(/too short/);
    expect(await formatError(await write(Buffer.alloc(0)))).toBe('is empty');
  });

  it('refuses an image without an app descriptor, without segments, or with an empty project name', async () => {
    expect(await formatError(await build({ descriptorMagic: 0 }))).toMatch(/no ESP-IDF app descriptor/);
    const noSegments = Buffer.from(buildEspImage().bytes);
    noSegments[1] = 0;
    expect(await formatError(await write(noSegments))).toMatch(/without segments/);
    expect(await formatError(await build({ projectName: '' }))).toMatch(/empty project_name/);
  });

  it('never throws anything but a format error on random or mutated bytes', async () => {
    const valid = buildEspImage({ secureBoot: { version: 2 } }).bytes;
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.uint8Array({ maxLength: 600 }).map((bytes) => Buffer.concat([Buffer.from([0xe9]), bytes])),
          fc
            .array(fc.tuple(fc.nat(valid.length - 1), fc.integer({ min: 0, max: 255 })), {
              minLength: 1,
              maxLength: 8,
            })
            .map((edits) => {
              const copy = Buffer.from(valid);
              for (const [at, value] of edits) copy[at] = value;
              return copy;
            }),
          fc.nat(valid.length).map((cut) => valid.subarray(0, cut)),
        ),
        async (bytes) => {
          const path = await write(bytes);
          try {
            await readEspAppImage(path);
          } catch (err) {
            expect(err).toBeInstanceOf(FirmwareFormatError);
          } finally {
            await rm(path, { force: true });
          }
        },
      ),
      { numRuns: 150 },
    );
  });
});
