import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { crc32 } from 'node:zlib';
import { ESP_APP_DESC_MAGIC, ESP_APP_DESC_OFFSET, ESP_IMAGE_MAGIC } from '../formats/detect-format';
import { uuidFromDigest } from '../formats/firmware-uuid';
import { readAt } from '../formats/read-exactly';
import { FirmwareFormatError } from '../fwup/firmware-format-error';

/*
 * An ESP-IDF application image (esp-idf components/bootloader_support/include/esp_app_format.h,
 * components/esp_app_format/include/esp_app_desc.h):
 *
 *   0x00  esp_image_header_t (24 bytes): magic 0xE9, segment_count, spi_mode, spi_speed_size, entry_addr u32,
 *         wp_pin, spi_pin_drv[3], chip_id u16 (0x0C), min_chip_rev, min_chip_rev_full u16, max_chip_rev_full u16,
 *         reserved[4], hash_appended (0x17)
 *   0x18  esp_image_segment_header_t of the first segment (load_addr u32, data_len u32)
 *   0x20  esp_app_desc_t (256 bytes): magic_word 0xABCD5432, secure_version, reserv1[2], version[32],
 *         project_name[32], time[16], date[16], idf_ver[32], app_elf_sha256[32], ...
 *
 * All little-endian; strings are fixed-width and NUL-padded. Secure Boot v2 appends a 4 KiB signature sector after
 * padding the image to a 4 KiB boundary; its first block starts with 0xE7 and a version byte (0x02 RSA-3072,
 * 0x03 ECDSA), carries the SHA-256 of everything before the sector at offset 4 and the CRC32 of its first 1196
 * bytes at offset 1196.
 */

export const ESP_IMAGE_HEADER_SIZE = 24;
export const ESP_SEGMENT_HEADER_SIZE = 8;
export const ESP_APP_DESC_SIZE = 256;
export const SECURE_BOOT_SECTOR_SIZE = 4096;
export const SECURE_BOOT_MAGIC = 0xe7;
const SECURE_BOOT_CRC_OFFSET = 1196;
const SECURE_BOOT_DIGEST_OFFSET = 4;

const CHIPS: ReadonlyMap<number, { platform: string; architecture: string }> = new Map([
  [0x0000, { platform: 'esp32', architecture: 'xtensa' }],
  [0x0002, { platform: 'esp32s2', architecture: 'xtensa' }],
  [0x0005, { platform: 'esp32c3', architecture: 'riscv' }],
  [0x0009, { platform: 'esp32s3', architecture: 'xtensa' }],
  [0x000c, { platform: 'esp32c2', architecture: 'riscv' }],
  [0x000d, { platform: 'esp32c6', architecture: 'riscv' }],
  [0x0010, { platform: 'esp32h2', architecture: 'riscv' }],
  [0x0012, { platform: 'esp32p4', architecture: 'riscv' }],
  [0x0017, { platform: 'esp32c5', architecture: 'riscv' }],
]);

export type SecureBootScheme = 'rsa-3072' | 'ecdsa';

export interface EspAppImage {
  readonly tool: 'esp-idf';
  readonly size: number;
  readonly chipId: number;
  readonly platform: string;
  readonly architecture: string;
  /** `project_name`, the product the image is built for. */
  readonly projectName: string;
  /** `version` as written (PROJECT_VER); not normalised. */
  readonly version: string;
  readonly idfVersion: string;
  readonly secureVersion: number;
  /** First 16 bytes of app_elf_sha256 as 8-4-4-4-12 lower-case hex. */
  readonly uuid: string;
  readonly elfSha256: string;
  /** The scheme of an intact Secure Boot v2 signature sector, or null when the image has none. */
  readonly secureBoot: SecureBootScheme | null;
}

/** The text of a fixed-width NUL-padded field, up to its first NUL. */
function cString(field: Buffer): string {
  const end = field.indexOf(0);
  return field.subarray(0, end < 0 ? field.length : end).toString('utf8');
}

export function chipPlatform(chipId: number): { platform: string; architecture: string } {
  return (
    CHIPS.get(chipId) ?? {
      platform: `esp32-${chipId.toString(16).padStart(4, '0')}`,
      architecture: 'unknown',
    }
  );
}

/**
 * Reads an ESP-IDF application image: its headers (a few hundred bytes) and, when it carries a Secure Boot v2
 * signature sector, that sector, whose CRC and image digest are checked (the digest by streaming the image). The
 * signature itself is not verified: it is RSA or ECDSA, which no organization key can be.
 *
 * A malformed image gives a `FirmwareFormatError`; an error of the file system itself is thrown as it is.
 */
export async function readEspAppImage(filePath: string): Promise<EspAppImage> {
  const file = await open(filePath, 'r');
  let size: number;
  let head: Buffer;
  let sector: Buffer | null = null;
  try {
    size = (await file.stat()).size;
    head = await readAt(file, 0, ESP_APP_DESC_OFFSET + ESP_APP_DESC_SIZE);
    if (head.length === 0) throw new FirmwareFormatError('is empty');
    if (head[0] !== ESP_IMAGE_MAGIC) {
      throw new FirmwareFormatError('is not an ESP-IDF application image (it does not start with 0xE9)');
    }
    if (head.length < ESP_APP_DESC_OFFSET + ESP_APP_DESC_SIZE) {
      throw new FirmwareFormatError(
        `is too short for an ESP-IDF application image (${size} bytes; the headers and app descriptor alone ` +
          `take ${ESP_APP_DESC_OFFSET + ESP_APP_DESC_SIZE})`,
      );
    }
    if (hasSecureBootSector(size)) {
      const candidate = await readAt(file, size - SECURE_BOOT_SECTOR_SIZE, SECURE_BOOT_SECTOR_SIZE);
      if (isSecureBootBlock(candidate)) sector = candidate;
    }
  } finally {
    await file.close();
  }

  if (head.readUInt32LE(ESP_APP_DESC_OFFSET) !== ESP_APP_DESC_MAGIC) {
    throw new FirmwareFormatError(
      'has no ESP-IDF app descriptor (esp_app_desc_t, magic 0xABCD5432) at offset 0x20: is it a bootloader or ' +
        'partition table rather than an application?',
    );
  }
  if (head[1] === 0) throw new FirmwareFormatError('is an ESP-IDF image without segments');
  const desc = head.subarray(ESP_APP_DESC_OFFSET);
  const version = cString(desc.subarray(16, 48));
  const projectName = cString(desc.subarray(48, 80));
  const idfVersion = cString(desc.subarray(128, 160));
  const elfSha256 = desc.subarray(160, 192);
  if (projectName.trim() === '') {
    throw new FirmwareFormatError(
      "has an empty project_name in its app descriptor, so it cannot be matched to a product (set the CMake project's name)",
    );
  }
  const chipId = head.readUInt16LE(12);
  const secureBoot = sector === null ? null : await checkSecureBootSector(filePath, size, sector);
  return {
    tool: 'esp-idf',
    size,
    chipId,
    ...chipPlatform(chipId),
    projectName,
    version,
    idfVersion,
    secureVersion: desc.readUInt32LE(4),
    uuid: uuidFromDigest(elfSha256),
    elfSha256: Buffer.from(elfSha256).toString('hex'),
    secureBoot,
  };
}

/** espsecure pads a signed image to a 4 KiB boundary before appending the signature sector. */
function hasSecureBootSector(size: number): boolean {
  return (
    size % SECURE_BOOT_SECTOR_SIZE === 0 &&
    size >= ESP_APP_DESC_OFFSET + ESP_APP_DESC_SIZE + SECURE_BOOT_SECTOR_SIZE
  );
}

/** A Secure Boot v2 block starts with 0xE7, version 0x02 or 0x03 and two zero padding bytes. */
function isSecureBootBlock(sector: Buffer): boolean {
  return (
    sector.length === SECURE_BOOT_SECTOR_SIZE &&
    sector[0] === SECURE_BOOT_MAGIC &&
    (sector[1] === 0x02 || sector[1] === 0x03) &&
    sector[2] === 0 &&
    sector[3] === 0
  );
}

async function checkSecureBootSector(
  filePath: string,
  size: number,
  sector: Buffer,
): Promise<SecureBootScheme> {
  const storedCrc = sector.readUInt32LE(SECURE_BOOT_CRC_OFFSET);
  if (crc32(sector.subarray(0, SECURE_BOOT_CRC_OFFSET)) !== storedCrc) {
    throw new FirmwareFormatError(
      'has a damaged Secure Boot signature block (its CRC32 does not match): the image may be corrupt',
    );
  }
  const imageLength = size - SECURE_BOOT_SECTOR_SIZE;
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(filePath, { start: 0, end: imageLength - 1 })) {
    hash.update(chunk as Buffer);
  }
  const expected = sector.subarray(SECURE_BOOT_DIGEST_OFFSET, SECURE_BOOT_DIGEST_OFFSET + 32);
  if (!hash.digest().equals(expected)) {
    throw new FirmwareFormatError(
      'has a Secure Boot signature block whose image digest does not match the image: it was changed after signing or is corrupt',
    );
  }
  return sector[1] === 0x02 ? 'rsa-3072' : 'ecdsa';
}
