import { open } from 'node:fs/promises';

export type FirmwareTool = 'fwup' | 'atomvm' | 'esp-idf';

/** The 24 bytes every AtomVM packbeam starts with. */
export const PACKBEAM_MAGIC = Buffer.from('#!/usr/bin/env AtomVM\n\0\0', 'latin1');
export const ESP_IMAGE_MAGIC = 0xe9;
export const ESP_APP_DESC_OFFSET = 0x20;
export const ESP_APP_DESC_MAGIC = 0xabcd5432;
const ZIP_LOCAL_HEADER = Buffer.from('PK\x03\x04', 'latin1');

export const UNRECOGNISED_FORMAT =
  'Unrecognised firmware format. Expected an fwup archive (.fw), an AtomVM packbeam (.avm) or an ESP-IDF ' +
  'application image (.bin).';

/** Which update tool a file is for, by its first bytes (never by its name); null when none. */
export function detectFormat(head: Uint8Array): FirmwareTool | null {
  const bytes = Buffer.from(head.buffer, head.byteOffset, head.byteLength);
  if (bytes.length >= 4 && bytes.subarray(0, 4).equals(ZIP_LOCAL_HEADER)) return 'fwup';
  if (
    bytes.length >= PACKBEAM_MAGIC.length &&
    bytes.subarray(0, PACKBEAM_MAGIC.length).equals(PACKBEAM_MAGIC)
  ) {
    return 'atomvm';
  }
  if (
    bytes.length >= ESP_APP_DESC_OFFSET + 4 &&
    bytes[0] === ESP_IMAGE_MAGIC &&
    bytes.readUInt32LE(ESP_APP_DESC_OFFSET) === ESP_APP_DESC_MAGIC
  ) {
    return 'esp-idf';
  }
  return null;
}

/** Reads the first bytes of the file and detects its format. */
export async function detectFileFormat(filePath: string): Promise<FirmwareTool | null> {
  const file = await open(filePath, 'r');
  try {
    const head = Buffer.alloc(ESP_APP_DESC_OFFSET + 4);
    const { bytesRead } = await file.read(head, 0, head.length, 0);
    return detectFormat(head.subarray(0, bytesRead));
  } finally {
    await file.close();
  }
}
