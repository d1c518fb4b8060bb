import { semverSortKey } from '../fwup/semver-sort-key';

/**
 * A version string from an image's metadata as SemVer, or null. A valid SemVer version is kept as it is; a leading
 * `v`/`V` is dropped and `1.2` becomes `1.2.0`. With `espIdf` (where PROJECT_VER often comes from `git describe`
 * or a four-part Windows-style number) `1` becomes `1.0.0` and `1.2.3.4` becomes `1.2.3+4` as well.
 */
export function normaliseFirmwareVersion(raw: string, options: { espIdf?: boolean } = {}): string | null {
  const version = /^[vV][0-9]/.test(raw) ? raw.slice(1) : raw;
  const candidates = [version];
  const twoParts = /^([0-9]+)\.([0-9]+)$/.exec(version);
  if (twoParts) candidates.push(`${twoParts[1]}.${twoParts[2]}.0`);
  if (options.espIdf) {
    if (/^[0-9]+$/.test(version)) candidates.push(`${version}.0.0`);
    const fourParts = /^([0-9]+)\.([0-9]+)\.([0-9]+)\.([0-9]+)$/.exec(version);
    if (fourParts) candidates.push(`${fourParts[1]}.${fourParts[2]}.${fourParts[3]}+${fourParts[4]}`);
  }
  return candidates.find((candidate) => semverSortKey(candidate) !== null) ?? null;
}
