import { checkString } from '../../common/validation/fields';
import { isPlainObject } from '../../common/validation/validation.pipe';
import { isUnstorableText, someString } from '../../common/values';

/** Field rules shared by operator registration (HTTP) and device reports (contract §7). */

export { IROH_SERVICE } from '../endpoint-view';
export const DEFAULT_INSTANCE = 'default';
export const INSTANCE_MAX_LENGTH = 64;
export const DETAILS_MAX_BYTES = 4096;

/** An endpoint id is an ed25519 public key: 64 hexadecimal characters, stored lower-cased. */
export const ENDPOINT_ID_PATTERN = /^[0-9a-fA-F]{64}$/;
export const ENDPOINT_ID_MESSAGE = 'must be 64 hexadecimal characters';

/** The canonical (lower-case) endpoint id, or null when `value` is not one. */
export function normaliseEndpointId(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  const trimmed = value.trim();
  return ENDPOINT_ID_PATTERN.test(trimmed) ? trimmed.toLowerCase() : null;
}

export function checkEndpointId(value: unknown): string | null {
  if (value === undefined || value === null || (typeof value === 'string' && value.trim() === '')) {
    return "can't be blank";
  }
  return normaliseEndpointId(value) === null ? ENDPOINT_ID_MESSAGE : null;
}

/** `instance`: absent or null means `default`; a given string is trimmed and must be 1–64 characters. */
export function checkInstance(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  return checkString(value, { required: true, max: INSTANCE_MAX_LENGTH });
}

/** `details`: absent or null means `{}`; otherwise a JSON object of at most 4 KiB serialized. */
export function checkDetails(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (!isPlainObject(value)) return 'must be a JSON object';
  if (someString(value, isUnstorableText)) {
    return 'must not contain NUL characters or unpaired surrogates in its keys or strings';
  }
  if (Buffer.byteLength(JSON.stringify(value), 'utf8') > DETAILS_MAX_BYTES) {
    return `must be at most ${DETAILS_MAX_BYTES} bytes when serialized`;
  }
  return null;
}
