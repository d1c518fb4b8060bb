export {
  hasFwupSignature,
  readFirmwareArchive,
  MAX_ARCHIVE_ENTRIES,
  META_CONF_MAX_SIZE,
  META_CONF_MIN_SIZE,
  META_CONF_NAME,
  SIGNATURE_NAME,
  type FirmwareArchive,
  type FirmwareArchiveEntry,
} from './archive-reader';
export { FirmwareFormatError } from './firmware-format-error';
export {
  missingRequiredMetadata,
  parseMetaConf,
  REQUIRED_METADATA_FIELDS,
  type FwupMetadata,
} from './meta-conf';
export { computeMetaUuid } from './meta-uuid';
export { SEMVER_SORT_KEY_MAX_LENGTH, semverSortKey } from './semver-sort-key';
export {
  ED25519_SIGNATURE_SIZE,
  isValidSigningKey,
  MAX_SIGNED_FILE_BYTES,
  verifyFileSignature,
  verifyMetaSignature,
} from './signature';
