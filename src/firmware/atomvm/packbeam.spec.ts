import fc from 'fast-check';
import { open, rm } from 'node:fs/promises';
import { fwupKeyPairFromSeed } from '../../../test/support/fw-builder';
import { formatErrorMessage, readerFiles } from '../../../test/support/reader-files';
import {
  applicationTerm,
  BEAM_CODE_FLAG,
  beamModule,
  buildPackbeam,
  END_ENTRY,
  etf,
  fileData,
  NORMAL_FILE_FLAG,
  PACKBEAM_MAGIC,
  packbeamEntry,
  type PackbeamOptions,
} from '../../../test/support/fw-builder-packbeam';
import { FirmwareFormatError } from '../fwup/firmware-format-error';
import { verifyFileSignature } from '../fwup/signature';
import { MAX_APPLICATION_BIN_SIZE, readPackbeam } from './packbeam';

const files = readerFiles('fleethub-avm-', '.avm');
const write = files.write;
const key = fwupKeyPairFromSeed('packbeam');

const build = (options: PackbeamOptions = {}) => write(buildPackbeam(options).bytes);

const formatError = (path: string) => formatErrorMessage(readPackbeam, path);

/** A packbeam of the given raw entries (after the magic), with the end entry unless told otherwise. */
const raw = (...parts: Buffer[]) => write(Buffer.concat([PACKBEAM_MAGIC, ...parts]));
const applicationEntry = (name = 'hello', term = applicationTerm({ name, vsn: '1.0.0' })) =>
  packbeamEntry({ name: `${name}/priv/application.bin`, flags: NORMAL_FILE_FLAG, data: fileData(term) });

describe('readPackbeam', () => {
  it('reads the entries and the application metadata of an unsigned packbeam', async () => {
    const built = buildPackbeam({ application: 'hello', vsn: 'v1.4', description: 'Says hello' });
    const packbeam = await readPackbeam(await write(built.bytes));
    expect(packbeam).toMatchObject({
      tool: 'atomvm',
      size: built.bytes.length,
      application: 'hello',
      version: 'v1.4',
      description: 'Says hello',
      signature: null,
    });
    expect(packbeam.entries.map((e) => [e.name, e.flags])).toEqual([
      ['hello.beam', 3],
      ['hello/priv/application.bin', NORMAL_FILE_FLAG],
      ['hello_app.beam', BEAM_CODE_FLAG],
    ]);
    expect(packbeam.entries[0].offset).toBe(24);
  });

  it('accepts OTP 25 atoms, binaries, unicode charlists and an env with floats and maps', async () => {
    const term = etf.encode(
      etf.tuple(
        etf.latin1Atom('application'),
        etf.latin1Atom('old'),
        etf.list([
          etf.tuple(etf.latin1Atom('vsn'), etf.binary('2.0.0')),
          etf.tuple(etf.latin1Atom('description'), etf.string('Grüße ☃')),
          etf.tuple(
            etf.atom('env'),
            etf.list([
              etf.tuple(etf.atom('ratio'), etf.float(0.5)),
              etf.map([[etf.atom('a'), etf.integer(1)]]),
            ]),
          ),
        ]),
      ),
    );
    const packbeam = await readPackbeam(await build({ application: 'old', applicationBin: term }));
    expect(packbeam).toMatchObject({ application: 'old', version: '2.0.0', description: 'Grüße ☃' });
  });

  it('uses the first application.bin with exactly three path components', async () => {
    const other = applicationTerm({ name: 'other', vsn: '9.9.9' });
    const packbeam = await readPackbeam(
      await build({
        before: [
          { name: 'priv/application.bin', flags: NORMAL_FILE_FLAG, data: fileData(other) },
          { name: 'a/b/priv/application.bin', flags: NORMAL_FILE_FLAG, data: fileData(other) },
        ],
        after: [{ name: 'second/priv/application.bin', flags: NORMAL_FILE_FLAG, data: fileData(other) }],
      }),
    );
    expect(packbeam).toMatchObject({ application: 'hello', version: '0.1.0' });
  });

  it('finds the signature and what it covers; the signature verifies with the signing key', async () => {
    const built = buildPackbeam({ signWith: key.privateKey });
    const path = await write(built.bytes);
    const packbeam = await readPackbeam(path);
    expect(packbeam.signature?.signedLength).toBe(built.signedLength);
    expect(packbeam.signature?.signature).toHaveLength(64);
    expect(packbeam.entries.at(-1)?.name).toBe('nerves_hub/signature');
    const keys = [{ name: 'release', key: key.publicKey }];
    expect(await verifyFileSignature(path, built.signedLength!, packbeam.signature!.signature, keys)).toBe(
      'release',
    );
    const corrupt = buildPackbeam({ signWith: key.privateKey, corruptSignature: true });
    const corruptPath = await write(corrupt.bytes);
    const read = await readPackbeam(corruptPath);
    expect(
      await verifyFileSignature(corruptPath, corrupt.signedLength!, read.signature!.signature, keys),
    ).toBe(null);
  });

  it('stops at an entry with size 0 or flags 0, whatever follows', async () => {
    const zeroSize = Buffer.alloc(12);
    const packbeam = await readPackbeam(
      await raw(applicationEntry(), zeroSize, Buffer.from('garbage after the end')),
    );
    expect(packbeam.entries).toHaveLength(1);
    const afterEnd = await readPackbeam(
      await raw(applicationEntry(), END_ENTRY, packbeamEntry(beamModule('x'))),
    );
    expect(afterEnd.entries).toHaveLength(1);
  });

  it('refuses a file without the magic', async () => {
    expect(await formatError(await write(Buffer.from('#!/usr/bin/env AtomVM\n')))).toMatch(/not an AtomVM/);
  });

  it('refuses a packbeam without application.bin, saying so', async () => {
    expect(await formatError(await build({ applicationBin: null }))).toMatch(
      /without <app>\/priv\/application\.bin/,
    );
  });

  it.each([
    ['no entries at all', () => raw(), /ends without an end entry/],
    ['no end entry', () => build({ noEnd: true }), /ends without an end entry/],
    [
      'a header cut short',
      () => raw(applicationEntry(), Buffer.alloc(5, 1)),
      /entry header at offset \d+ is cut off/,
    ],
    [
      'a size smaller than the header',
      () => raw(Buffer.from([0, 0, 0, 8, 0, 0, 0, 1, 0, 0, 0, 0]), END_ENTRY),
      /declares 8 bytes, less than its header/,
    ],
    [
      'a size past the end of the file',
      () => raw(Buffer.from([0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 1, 0, 0, 0, 0, 0x61, 0]), END_ENTRY),
      /declares 2147483647 bytes, past the end of the file/,
    ],
    [
      'a name without NUL',
      () => {
        const entry = packbeamEntry({ name: 'x'.repeat(300), flags: 1, data: Buffer.alloc(8) });
        entry.fill(0x61, 12, entry.length);
        return raw(entry, END_ENTRY);
      },
      /has no terminating NUL/,
    ],
    [
      'a name longer than its entry',
      () => {
        const entry = Buffer.from([0, 0, 0, 16, 0, 0, 0, 1, 0, 0, 0, 0, 0x61, 0x62, 0x63, 0x64, 0x65, 0]);
        return raw(entry, END_ENTRY);
      },
      /has no terminating NUL within 4 bytes/,
    ],
    [
      'application.bin longer than its entry',
      () => {
        const data = fileData(applicationTerm({ name: 'hello' }));
        data.writeUInt32BE(data.length, 0);
        return raw(packbeamEntry({ name: 'hello/priv/application.bin', flags: 4, data }), END_ENTRY);
      },
      /declares \d+ bytes of data, more than it holds/,
    ],
    [
      'application.bin over 64 KiB',
      () =>
        build({
          applicationBin: etf.encode(
            etf.tuple(etf.atom('application'), etf.atom('hello'), etf.binary(Buffer.alloc(70_000))),
          ),
        }),
      new RegExp(`larger than ${MAX_APPLICATION_BIN_SIZE} bytes`),
    ],
    ['application.bin not a term', () => build({ applicationBin: Buffer.from('hello') }), /version byte 131/],
    [
      'application.bin not an application',
      () =>
        build({ applicationBin: etf.encode(etf.tuple(etf.atom('app'), etf.atom('hello'), etf.list([]))) }),
      /not \{application, Name, \[Properties\]\}/,
    ],
    ['no vsn', () => build({ vsn: null }), /has no vsn/],
    [
      'a vsn that is not a string',
      () =>
        build({
          applicationBin: etf.encode(
            etf.tuple(
              etf.atom('application'),
              etf.atom('hello'),
              etf.list([etf.tuple(etf.atom('vsn'), etf.integer(1))]),
            ),
          ),
        }),
      /vsn .* is not a string/,
    ],
    [
      'a signature entry that is not last',
      () => buildSignatureNotLast(),
      /must be the last entry before the end entry/,
    ],
    [
      'bytes after the end of a signed packbeam',
      () => build({ signWith: key.privateKey, trailing: Buffer.alloc(4) }),
      /4 bytes follow the end entry/,
    ],
    [
      'a signature payload without NH1',
      () => build({ signaturePayload: Buffer.alloc(68) }),
      /is not "NH1", version 1/,
    ],
    [
      'a signature payload of another version',
      () => build({ signaturePayload: Buffer.concat([Buffer.from('NH1\x02', 'latin1'), Buffer.alloc(64)]) }),
      /is not "NH1", version 1/,
    ],
    [
      'a short signature',
      () => build({ signaturePayload: Buffer.concat([Buffer.from('NH1\x01', 'latin1'), Buffer.alloc(63)]) }),
      /is not "NH1", version 1/,
    ],
  ] as const)('refuses %s', async (_name, make, message) => {
    expect(await formatError(await make())).toMatch(message);
  });

  function buildSignatureNotLast(): Promise<string> {
    const signature = packbeamEntry({
      name: 'nerves_hub/signature',
      flags: NORMAL_FILE_FLAG,
      data: fileData(Buffer.concat([Buffer.from('NH1\x01', 'latin1'), Buffer.alloc(64)])),
    });
    return raw(applicationEntry(), signature, packbeamEntry(beamModule('late')), END_ENTRY);
  }

  it('walks a 300 MiB packbeam by its headers without reading the module data', async () => {
    const path = files.path('huge.avm');
    const head = Buffer.concat([PACKBEAM_MAGIC, applicationEntry()]);
    const bigSize = 300 * 1024 * 1024;
    const bigHeader = packbeamEntry({ name: 'big.beam', flags: BEAM_CODE_FLAG, data: Buffer.alloc(0) });
    bigHeader.writeUInt32BE(bigSize, 0);
    const file = await open(path, 'w');
    try {
      await file.write(head, 0, head.length, 0);
      await file.write(bigHeader, 0, bigHeader.length, head.length);
      await file.write(END_ENTRY, 0, END_ENTRY.length, head.length + bigSize); // sparse in between
    } finally {
      await file.close();
    }
    const before = process.memoryUsage().rss;
    const packbeam = await readPackbeam(path);
    expect(packbeam.entries.map((e) => e.name)).toEqual(['hello/priv/application.bin', 'big.beam']);
    expect(packbeam.size).toBe(head.length + bigSize + END_ENTRY.length);
    expect(process.memoryUsage().rss - before).toBeLessThan(64 * 1024 * 1024);
    await rm(path);
  });

  it('never throws anything but a format error on random or mutated bytes', async () => {
    const valid = buildPackbeam({ signWith: key.privateKey }).bytes;
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.uint8Array({ maxLength: 400 }).map((bytes) => Buffer.concat([PACKBEAM_MAGIC, bytes])),
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
            await readPackbeam(path);
          } catch (err) {
            expect(err).toBeInstanceOf(FirmwareFormatError);
          } finally {
            await rm(path, { force: true });
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
