/** Messages of the signing keys feature. */

export const NAME_TOO_LONG = 'should be at most 255 character(s)';
export const INVALID_KEY = 'must be a base64 ed25519 public key (32 bytes, 44 characters)';
/** `fleethub keys create` with an organization name that does not exist. */
export const ORG_DOES_NOT_EXIST = 'does not exist';
