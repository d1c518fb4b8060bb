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
