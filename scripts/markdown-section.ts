/**
 * `current` with the block between `<!-- name -->` and `<!-- /name -->` replaced by `block` (which carries both
 * markers), or `block` appended when the markers are absent: how the benchmarks and checks each publish their own
 * section of a document that others write too.
 */
export function withSection(current: string, name: string, block: string): string {
  const start = `<!-- ${name} -->`;
  const end = `<!-- /${name} -->`;
  const i = current.indexOf(start);
  const j = current.indexOf(end);
  return i >= 0 && j > i
    ? current.slice(0, i) + block + current.slice(j + end.length)
    : `${current.trimEnd()}\n\n${block}\n`;
}
