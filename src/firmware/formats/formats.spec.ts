import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildEspImage } from '../../../test/support/fw-builder-esp-idf';
import { buildPackbeam } from '../../../test/support/fw-builder-packbeam';
import { detectFileFormat, detectFormat } from './detect-format';
import { normaliseFirmwareVersion } from './firmware-version';

describe('detectFormat', () => {
  it('recognises each format by its first bytes', () => {
    expect(detectFormat(Buffer.from('PK\x03\x04rest', 'latin1'))).toBe('fwup');
    expect(detectFormat(buildPackbeam().bytes)).toBe('atomvm');
    expect(detectFormat(buildEspImage().bytes)).toBe('esp-idf');
  });

  it('recognises nothing else', () => {
    expect(detectFormat(Buffer.alloc(0))).toBeNull();
    expect(detectFormat(Buffer.from('PK\x05\x06', 'latin1'))).toBeNull();
    expect(detectFormat(Buffer.from('#!/usr/bin/env AtomVM\n', 'latin1'))).toBeNull(); // no padding
    expect(detectFormat(Buffer.from('#!/usr/bin/env AtomVM\n\0\x01', 'latin1'))).toBeNull();
    const noDescriptor = buildEspImage({ descriptorMagic: 0x12345678 }).bytes;
    expect(detectFormat(noDescriptor)).toBeNull();
    const notE9 = Buffer.from(buildEspImage().bytes);
    notE9[0] = 0xe8;
    expect(detectFormat(notE9)).toBeNull();
    expect(detectFormat(buildEspImage().bytes.subarray(0, 0x23))).toBeNull();
  });

  it('reads the head of a file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'fleethub-detect-'));
    try {
      await writeFile(join(dir, 'a.fw'), buildPackbeam().bytes); // the name does not matter
      await writeFile(join(dir, 'empty'), '');
      expect(await detectFileFormat(join(dir, 'a.fw'))).toBe('atomvm');
      expect(await detectFileFormat(join(dir, 'empty'))).toBeNull();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('normaliseFirmwareVersion', () => {
  it.each([
    ['1.2.3', '1.2.3'],
    ['v1.2.3', '1.2.3'],
    ['V1.2.3', '1.2.3'],
    ['1.2', '1.2.0'],
    ['v0.4', '0.4.0'],
    ['1.2.3-rc.1', '1.2.3-rc.1'],
    ['1.2.3-rc.1+build.5', '1.2.3-rc.1+build.5'],
    ['1.0.0-3-gabc1234', '1.0.0-3-gabc1234'],
  ])('%s → %s', (raw, expected) => {
    expect(normaliseFirmwareVersion(raw)).toBe(expected);
    expect(normaliseFirmwareVersion(raw, { espIdf: true })).toBe(expected);
  });

  it('ESP-IDF also accepts one and four parts', () => {
    expect(normaliseFirmwareVersion('1', { espIdf: true })).toBe('1.0.0');
    expect(normaliseFirmwareVersion('v7', { espIdf: true })).toBe('7.0.0');
    expect(normaliseFirmwareVersion('1.2.3.4', { espIdf: true })).toBe('1.2.3+4');
    expect(normaliseFirmwareVersion('1')).toBeNull();
    expect(normaliseFirmwareVersion('1.2.3.4')).toBeNull();
  });

  it.each([
    '',
    'v',
    'vv1.2.3',
    '1.2.3 ',
    ' 1.2.3',
    '01.2.3',
    '1.02',
    'abc',
    '1.2.3.4.5',
    '1.2-rc1',
    'latest',
  ])('refuses %j', (raw) => {
    expect(normaliseFirmwareVersion(raw)).toBeNull();
    expect(normaliseFirmwareVersion(raw, { espIdf: true })).toBeNull();
  });
});
