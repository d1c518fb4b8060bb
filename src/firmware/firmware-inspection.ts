import { DomainError } from '../common/errors/domain-error';
import type { ProductRecord } from '../products/product-record';
import { readPackbeam, type Packbeam } from './atomvm/packbeam';
import { readEspAppImage, type EspAppImage } from './esp-idf/esp-app-image';
import { NO_SIGNING_KEYS } from './firmware.errors';
import type { FirmwareTool } from './formats/detect-format';
import { uuidFromDigest } from './formats/firmware-uuid';
import { normaliseFirmwareVersion } from './formats/firmware-version';
import {
  type FirmwareArchive,
  FirmwareFormatError,
  missingRequiredMetadata,
  readFirmwareArchive,
  semverSortKey,
  verifyFileSignature,
  MAX_SIGNED_FILE_BYTES,
  verifyMetaSignature,
} from './fwup';
import type { ReceivedFile } from './received-file';
import { readDeltaFeatures } from './fwup/delta-features';

/** What an accepted upload is recorded as, whatever its format. */
export interface FirmwareCandidate {
  readonly uuid: string;
  /** SemVer (normalised for AtomVM and ESP-IDF images). */
  readonly version: string;
  readonly versionSortKey: string;
  /** The product the image declares (meta-product, the application name, project_name). */
  readonly product: string;
  readonly platform: string;
  readonly architecture: string;
  readonly author: string | null;
  readonly description: string | null;
  readonly misc: string | null;
  readonly vcsIdentifier: string | null;
  readonly fwupVersion: string | null;
  /**
   * fwup: the oldest fwup that applies a delta to this firmware, when its meta.conf lets an upgrade write some
   * resource from a delta; null otherwise (and for the other formats, which have no deltas).
   */
  readonly deltaFwupVersion: string | null;
  /** Name of the organization key whose signature verified; null for an accepted unsigned image. */
  readonly signedWith: string | null;
}

type SigningKeys = readonly { name: string; key: string }[];

export const FILE_EXTENSIONS: Record<FirmwareTool, string> = {
  fwup: '.fw',
  atomvm: '.avm',
  'esp-idf': '.bin',
};

const invalidFirmware = (message: string) => DomainError.invalidField('firmware', message);

/** Column sizes of the firmwares table. */
const VARCHAR_LIMIT = 255;

/** Reads a format's parser result, turning its format errors into 422s on `firmware`. */
async function parse<T>(read: () => Promise<T>): Promise<T> {
  try {
    return await read();
  } catch (err) {
    if (err instanceof FirmwareFormatError) throw invalidFirmware(err.message);
    throw err;
  }
}

function checkLength(value: string, limit: number, what: string): void {
  if ([...value].length > limit) throw invalidFirmware(`${what} is longer than ${limit} characters`);
}

function checkProduct(declared: string, product: ProductRecord): void {
  if (declared !== product.name) {
    throw invalidFirmware(`is built for the product "${declared}", but was uploaded to "${product.name}"`);
  }
}

/** PostgreSQL text cannot hold NUL; a description is informative only, so NULs are dropped. */
const withoutNul = (text: string | null) => (text === null ? null : text.replaceAll('\u0000', ''));

/**
 * Parses an upload of a detected format and applies the product's rules (declared product, SemVer, signature
 * policy). Throws the 422 to answer; the caller checks uniqueness and stores.
 */
export function inspectFirmware(
  tool: FirmwareTool,
  file: ReceivedFile,
  product: ProductRecord,
  loadKeys: () => Promise<SigningKeys>,
): Promise<FirmwareCandidate> {
  switch (tool) {
    case 'fwup':
      return inspectFwup(file, product, loadKeys);
    case 'atomvm':
      return inspectPackbeam(file, product, loadKeys);
    case 'esp-idf':
      return inspectEspIdf(file, product);
  }
}

type LimitedField =
  'product' | 'platform' | 'architecture' | 'version' | 'author' | 'vcsIdentifier' | 'fwupVersion';

const META_LIMITS: Record<LimitedField, number> = {
  product: VARCHAR_LIMIT,
  platform: VARCHAR_LIMIT,
  architecture: VARCHAR_LIMIT,
  version: VARCHAR_LIMIT,
  author: VARCHAR_LIMIT,
  vcsIdentifier: VARCHAR_LIMIT,
  fwupVersion: 64,
};

const META_NAMES: Record<LimitedField, string> = {
  product: 'meta-product',
  platform: 'meta-platform',
  architecture: 'meta-architecture',
  version: 'meta-version',
  author: 'meta-author',
  vcsIdentifier: 'meta-vcs-identifier',
  fwupVersion: 'meta-fwup-version',
};

async function inspectFwup(
  file: ReceivedFile,
  product: ProductRecord,
  loadKeys: () => Promise<SigningKeys>,
): Promise<FirmwareCandidate> {
  const archive: FirmwareArchive = await parse(() => readFirmwareArchive(file.path));
  const meta = archive.metadata;
  const missing = missingRequiredMetadata(meta);
  if (missing.length > 0) {
    throw invalidFirmware(`meta.conf lacks ${missing.map((key) => `meta-${key}`).join(', ')}`);
  }
  for (const field of Object.keys(META_LIMITS) as LimitedField[]) {
    checkLength(meta[field] ?? '', META_LIMITS[field], `meta.conf's ${META_NAMES[field]}`);
  }
  checkProduct(meta.product!, product);
  const versionSortKey = semverSortKey(meta.version!);
  if (versionSortKey === null) throw DomainError.invalidField('version', 'must be a valid semantic version');

  if (!archive.signature) {
    throw invalidFirmware("is not signed: fwup firmware must be signed with one of the organization's keys");
  }
  const keys = await loadKeys();
  if (keys.length === 0) throw invalidFirmware(NO_SIGNING_KEYS);
  const signedWith = verifyMetaSignature(archive.metaConf, archive.signature, keys);
  if (signedWith === null)
    throw invalidFirmware("signature does not match any of the organization's signing keys");

  return {
    uuid: archive.uuid,
    version: meta.version!,
    versionSortKey,
    product: meta.product!,
    platform: meta.platform!,
    architecture: meta.architecture!,
    author: meta.author ?? null,
    description: meta.description ?? null,
    misc: meta.misc ?? null,
    vcsIdentifier: meta.vcsIdentifier ?? null,
    fwupVersion: meta.fwupVersion ?? null,
    deltaFwupVersion: deltaFwupVersionOf(archive.metaConf),
    signedWith,
  };
}

/** The fwup a delta to this firmware needs, or null when nothing in it can be written from a delta. */
function deltaFwupVersionOf(metaConf: Uint8Array): string | null {
  try {
    const features = readDeltaFeatures(metaConf);
    return features.deltaCapable ? features.deltaFwupVersion : null;
  } catch {
    // Accepted by the upload's reader: never refused for its delta settings, only never a delta's target.
    return null;
  }
}

async function inspectPackbeam(
  file: ReceivedFile,
  product: ProductRecord,
  loadKeys: () => Promise<SigningKeys>,
): Promise<FirmwareCandidate> {
  const packbeam: Packbeam = await parse(() => readPackbeam(file.path));
  checkLength(packbeam.application, VARCHAR_LIMIT, "application.bin's application name");
  checkProduct(packbeam.application, product);
  const version = normaliseFirmwareVersion(packbeam.version);
  if (version === null || [...version].length > VARCHAR_LIMIT) {
    throw DomainError.invalidField(
      'version',
      `"${packbeam.version.slice(0, 64)}" (vsn in application.bin) is not a semantic version such as 1.2.3`,
    );
  }

  let signedWith: string | null = null;
  if (packbeam.signature) {
    const keys = await loadKeys();
    if (keys.length === 0) throw invalidFirmware(NO_SIGNING_KEYS);
    if (packbeam.signature.signedLength > MAX_SIGNED_FILE_BYTES) {
      throw invalidFirmware(
        `is a signed packbeam of more than ${MAX_SIGNED_FILE_BYTES / 1024 / 1024} MiB; signed AtomVM packbeams are accepted up to that size`,
      );
    }
    signedWith = await verifyFileSignature(
      file.path,
      packbeam.signature.signedLength,
      packbeam.signature.signature,
      keys,
    );
    if (signedWith === null) {
      throw invalidFirmware(
        "has a nerves_hub/signature entry that does not verify with any of the organization's signing keys",
      );
    }
  } else if (!product.allowUnsignedAtomvmFirmware) {
    throw invalidFirmware(
      "is an unsigned AtomVM packbeam: sign it with one of the organization's keys (a nerves_hub/signature " +
        'entry), or enable allow_unsigned_atomvm_firmware on the product to accept unsigned packbeams.',
    );
  }

  return {
    uuid: uuidFromDigest(Buffer.from(file.sha256, 'hex')),
    version,
    versionSortKey: semverSortKey(version)!,
    product: packbeam.application,
    platform: 'atomvm',
    architecture: 'beam',
    author: null,
    description: withoutNul(packbeam.description),
    misc: null,
    vcsIdentifier: null,
    fwupVersion: null,
    deltaFwupVersion: null,
    signedWith,
  };
}

export const ESP_IDF_UNVERIFIABLE =
  "ESP-IDF images cannot be verified against the organization's ed25519 signing keys (Secure Boot signs with " +
  'RSA or ECDSA); enable allow_unsigned_esp_idf_firmware on the product to accept them.';

async function inspectEspIdf(file: ReceivedFile, product: ProductRecord): Promise<FirmwareCandidate> {
  // No fleethub key can vouch for an ESP-IDF image, so the policy is known before the file is read.
  if (!product.allowUnsignedEspIdfFirmware) throw invalidFirmware(ESP_IDF_UNVERIFIABLE);
  const image: EspAppImage = await parse(() => readEspAppImage(file.path));
  checkProduct(image.projectName, product);
  const version = normaliseFirmwareVersion(image.version, { espIdf: true });
  if (version === null) {
    throw DomainError.invalidField(
      'version',
      `"${image.version}" (the app descriptor's version, from PROJECT_VER) is not a semantic version: set ` +
        'PROJECT_VER to one such as 1.2.3',
    );
  }
  return {
    uuid: image.uuid,
    version,
    versionSortKey: semverSortKey(version)!,
    product: image.projectName,
    platform: image.platform,
    architecture: image.architecture,
    author: null,
    description: withoutNul(`ESP-IDF ${image.idfVersion}`.trim()),
    misc: null,
    vcsIdentifier: null,
    fwupVersion: null,
    deltaFwupVersion: null,
    signedWith: null,
  };
}
