import { DomainError } from '../common/errors/domain-error';
import { detectFileFormat } from '../firmware/formats/detect-format';
import {
  FirmwareFormatError,
  missingRequiredMetadata,
  readFirmwareArchive,
  semverSortKey,
  verifyMetaSignature,
  type FirmwareArchive,
} from '../firmware/fwup';
import type { ReceivedFile } from '../firmware/received-file';
import {
  ARCHIVE_NOT_FWUP,
  ARCHIVE_NOT_SIGNED,
  ARCHIVE_SIGNATURE_MISMATCH,
  NO_ARCHIVE_KEYS,
} from './archives.errors';

/** What an accepted archive upload is recorded as. */
export interface ArchiveCandidate {
  readonly uuid: string;
  readonly version: string;
  readonly versionSortKey: string;
  /** `meta-product` as written in the file. */
  readonly product: string;
  readonly platform: string;
  readonly architecture: string;
  readonly author: string | null;
  readonly description: string | null;
  readonly misc: string | null;
  readonly vcsIdentifier: string | null;
  /** Name of the organization key whose signature verified. */
  readonly signedWith: string;
}

type SigningKeys = readonly { name: string; key: string }[];

const invalidArchive = (message: string) => DomainError.invalidField('archive', message);

/** Column sizes of the archives table, by meta.conf setting. */
const LIMITS: readonly [keyof FirmwareArchive['metadata'], string][] = [
  ['product', 'meta-product'],
  ['platform', 'meta-platform'],
  ['architecture', 'meta-architecture'],
  ['version', 'meta-version'],
  ['author', 'meta-author'],
  ['vcsIdentifier', 'meta-vcs-identifier'],
];
const VARCHAR_LIMIT = 255;

/**
 * Checks an uploaded archive as NervesHub does (`fwup --verify` with each organization key, then `fwup -m`): an
 * fwup `.fw` file whose `meta.conf.ed25519` verifies with one of the organization's keys, with product, platform,
 * architecture and a SemVer version in its meta.conf. The firmware upload's own reader and signature check do the
 * work (src/firmware/fwup): an archive is verified exactly as a firmware is. Throws the 422 to answer.
 */
export async function inspectArchive(
  file: ReceivedFile,
  loadKeys: () => Promise<SigningKeys>,
): Promise<ArchiveCandidate> {
  if ((await detectFileFormat(file.path)) !== 'fwup') throw invalidArchive(ARCHIVE_NOT_FWUP);
  let archive: FirmwareArchive;
  try {
    archive = await readFirmwareArchive(file.path);
  } catch (err) {
    if (err instanceof FirmwareFormatError) throw invalidArchive(err.message);
    throw err;
  }
  if (!archive.signature) throw invalidArchive(ARCHIVE_NOT_SIGNED);
  const keys = await loadKeys();
  if (keys.length === 0) throw invalidArchive(NO_ARCHIVE_KEYS);
  const signedWith = verifyMetaSignature(archive.metaConf, archive.signature, keys);
  if (signedWith === null) throw invalidArchive(ARCHIVE_SIGNATURE_MISMATCH);

  const meta = archive.metadata;
  const missing = missingRequiredMetadata(meta);
  if (missing.length > 0) {
    throw invalidArchive(`meta.conf lacks ${missing.map((key) => `meta-${key}`).join(', ')}`);
  }
  for (const [field, name] of LIMITS) {
    const value = meta[field];
    if (typeof value === 'string' && [...value].length > VARCHAR_LIMIT) {
      throw invalidArchive(`meta.conf's ${name} is longer than ${VARCHAR_LIMIT} characters`);
    }
  }
  const versionSortKey = semverSortKey(meta.version!);
  if (versionSortKey === null) throw DomainError.invalidField('version', 'must be a valid semantic version');
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
    signedWith,
  };
}
