/** Messages of the certificates features (422 field messages). */

export const NOT_A_CA = 'is not a CA certificate (basicConstraints cA must be true)';
export const NO_SUBJECT_KEY_ID =
  'has no subject key identifier extension (RFC 5280 requires one in every CA certificate)';
export const EXPIRED = 'has expired';
export const NOT_YET_VALID = 'is not valid yet';
export const CA_KEY_HELD_ELSEWHERE = 'has a key that another organization registered as its CA';

export const NO_VERIFICATION_TOKEN =
  'has no verification token: put `urn:nerveshub:verify:<token>` in its subject alternative name';
export const TOKEN_INVALID = 'carries a verification token that is not valid';
export const TOKEN_EXPIRED = 'carries an expired verification token: get a new one';
export const TOKEN_OTHER_ORG = 'carries a verification token of another organization';
export const NOT_SIGNED_BY_CA = 'is not signed by the CA certificate';

export const NOT_A_PRODUCT = 'does not match a product of this organization';

export const SUBJECT_NOT_DEVICE = "must have the device's identifier as its subject common name (CN)";
export const KEY_OF_ANOTHER_DEVICE = "holds a public key that another device's certificate holds";
export const CA_OF_ANOTHER_ORG = 'is signed by a CA that another organization registered';
