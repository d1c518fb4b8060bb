/** Messages of the archives feature. */

/** 422 on upload (`archive`): not a zip starting with a local file header. */
export const ARCHIVE_NOT_FWUP =
  "is not an fwup archive (.fw): an archive is an fwup file signed with one of the organization's keys";

/** 422 on upload (`archive`): no `meta.conf.ed25519`. */
export const ARCHIVE_NOT_SIGNED =
  "is not signed: archives must be signed with one of the organization's keys (fwup -S)";

/** 422 on upload (`archive`): the organization has no signing key to check it with. */
export const NO_ARCHIVE_KEYS =
  'cannot be verified: the organization has no signing keys yet (an admin adds them under Signing keys)';

/** 422 on upload (`archive`): corrupt, tampered with, or signed with a key the organization does not have. */
export const ARCHIVE_SIGNATURE_MISMATCH =
  "signature does not match any of the organization's signing keys (the file is corrupt, or the key that " +
  'signed it has not been added)';

/** 409 on delete: a deployment group has it attached. */
export const ARCHIVE_ATTACHED =
  'the archive is attached to a deployment group; detach it first (DELETE .../deployments/{name}/archive)';

/** 422 on attach (`archive`): no archive of that uuid in the product. */
export const ARCHIVE_UNKNOWN = 'does not exist in this product';
