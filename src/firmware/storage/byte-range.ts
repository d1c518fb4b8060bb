/** The `Range` header of firmware downloads (no framework: the benchmark's floor server uses it too). */

export type ByteRange = { start: number; end: number };

/**
 * Reads a `Range` header against a file of `size` bytes: null when there is none (or several ranges, which may
 * be ignored), a range clamped to the file, or 'unsatisfiable' (→ 416). Devices resume with `bytes=<n>-<size>`,
 * whose end is one past the last byte: ends are clamped.
 */
export function parseRange(header: string | undefined, size: number): ByteRange | null | 'unsatisfiable' {
  if (header === undefined) return null;
  const match = /^\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*$/i.exec(header);
  if (!match) return /^\s*bytes\s*=.*,/i.test(header) ? null : 'unsatisfiable';
  const [, first, last] = match;
  if (first === '' && last === '') return 'unsatisfiable';
  if (first === '') {
    const suffix = Number(last);
    if (suffix === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - suffix), end: size - 1 };
  }
  const start = Number(first);
  const end = last === '' ? size - 1 : Math.min(Number(last), size - 1);
  if (start >= size || end < start) return 'unsatisfiable';
  return { start, end };
}
