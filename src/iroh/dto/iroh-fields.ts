import { BLANK } from '../../common/errors/messages';
import { checkString } from '../../common/validation/fields';
import { jsonShapeProblem } from '../../common/validation/json-limits';
import { isPlainObject } from '../../common/validation/validation.pipe';
import { isUnstorableText, someString } from '../../common/values';

/** Field rules shared by operator registration (HTTP) and device reports (contract §7). */

export { IROH_SERVICE } from '../endpoint-view';
export const DEFAULT_INSTANCE = 'default';
export const INSTANCE_MAX_LENGTH = 64;
export const DETAILS_MAX_BYTES = 4096;
/** `details` itself is level 1; `{"a":{}}` is 2 levels deep. */
export const DETAILS_MAX_DEPTH = 16;

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
    return BLANK;
  }
  return normaliseEndpointId(value) === null ? ENDPOINT_ID_MESSAGE : null;
}

/** `instance`: absent or null means `default`; a given string is trimmed and must be 1–64 characters. */
export function checkInstance(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  return checkString(value, { required: true, max: INSTANCE_MAX_LENGTH });
}

/**
 * `details`: absent or null means `{}`; otherwise a JSON object of at most 4 KiB serialized and 16 levels of
 * nesting. The shape is checked first, without recursion, so that the serializing and the text walk below never
 * meet a deep or huge value, whoever calls this (HTTP bodies and device frames are bounded already).
 */
export function checkDetails(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (!isPlainObject(value)) return 'must be a JSON object';
  // n values serialize to at least 2n - 1 bytes (each but the outermost follows a comma or an opening bracket),
  // so more than half the byte limit in values is over it without serializing anything.
  const shape = jsonShapeProblem(value, { maxDepth: DETAILS_MAX_DEPTH, maxValues: DETAILS_MAX_BYTES / 2 });
  if (shape === 'too_deep') return `must be nested at most ${DETAILS_MAX_DEPTH} levels deep`;
  if (shape === 'too_many_values' || Buffer.byteLength(JSON.stringify(value), 'utf8') > DETAILS_MAX_BYTES) {
    return `must be at most ${DETAILS_MAX_BYTES} bytes when serialized`;
  }
  if (someString(value, isUnstorableText)) {
    return 'must not contain NUL characters or unpaired surrogates in its keys or strings';
  }
  return null;
}
