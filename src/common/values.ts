/** Small value helpers shared by the features. */

/** ISO 8601 in UTC with a `Z` suffix, or null. */
export function isoOrNull(value: Date | null | undefined): string | null {
  return value ? value.toISOString() : null;
}

/** Normalised comma-separated tags: each piece trimmed, empty pieces dropped. */
export function normaliseTags(value: string | string[] | null | undefined): string[] {
  if (value === null || value === undefined) return [];
  const pieces = Array.isArray(value) ? value : value.split(',');
  const seen = new Set<string>();
  for (const piece of pieces) {
    const tag = piece.trim();
    if (tag !== '') seen.add(tag);
  }
  return [...seen];
}

/** A bigint surrogate key from a path segment, or null when it cannot be one (→ 404, never 500). */
export function parseBigId(value: string): string | null {
  if (!/^[1-9]\d{0,18}$/.test(value)) return null;
  return BigInt(value) <= 9223372036854775807n ? value : null;
}

/** `text` for a LIKE pattern in which it matches itself: `%`, `_` and `\` escaped (the default escape is `\`). */
export function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/**
 * True when `text` cannot be stored as text: a NUL (PostgreSQL text and jsonb refuse it) or half of a UTF-16
 * surrogate pair (JSON can carry `"\ud800"`; UTF-8 cannot encode it, so it would be stored as U+FFFD or refused).
 */
export function isUnstorableText(text: string): boolean {
  return text.includes('\u0000') || /\p{Cs}/u.test(text);
}

/**
 * True when `text` has more than `max` Unicode code points (a lone surrogate counts as one), without building an
 * array of them: a string of n UTF-16 units holds between n/2 and n code points, so a long one is decided by its
 * length alone (`[...text]` of a 1 MiB string costs 30 to 130 ms).
 */
export function hasMoreCodePoints(text: string, max: number): boolean {
  if (text.length <= max) return false;
  if (text.length > 2 * max) return true;
  let count = 0;
  for (const _ of text) if (++count > max) return true;
  return false;
}

/** Every string inside a JSON value, for `isUnstorableText` checks of objects such as iroh `details`. */
export function someString(value: unknown, test: (text: string) => boolean): boolean {
  if (typeof value === 'string') return test(value);
  if (Array.isArray(value)) return value.some((item) => someString(item, test));
  if (value !== null && typeof value === 'object') {
    return Object.entries(value).some(([key, item]) => test(key) || someString(item, test));
  }
  return false;
}

/** A UUID in its canonical 8-4-4-4-12 hex form, either case (firmware uuids; compared lower-cased). */
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
