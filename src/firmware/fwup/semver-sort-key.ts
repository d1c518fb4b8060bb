import { parse } from 'semver';

/*
 * Key layout (ASCII only, compared byte-wise):
 *
 *   NUM(major) "." NUM(minor) "." NUM(patch) then "~" for a release, or "-" and the pre-release identifiers
 *
 * NUM(n) is the digit count as three digits followed by the digits ("0012" for 12): a longer number sorts after a
 * shorter one, equal lengths compare digit by digit. SemVer forbids leading zeros, so this is numeric order.
 *
 * Each pre-release identifier is written as "." then either "0" NUM(n) (numeric) or "1" text "!" (alphanumeric):
 * the tag puts numeric identifiers below alphanumeric ones, and "!" sorts below every identifier character so that
 * "alpha" < "alpha-" < "alphab". Every identifier is self-delimiting, so a shorter list is a prefix of a longer one
 * that it equals so far, and sorts first. "-" (0x2d) < "~" (0x7e) puts a pre-release below its release.
 * Build metadata is not encoded.
 *
 * A version of n characters gives at most 3n + 15 characters (one-digit numeric identifiers are the worst case), so
 * the 256 characters that `semver` accepts give at most 783.
 */

export const SEMVER_SORT_KEY_MAX_LENGTH = 1024;

const NUMERIC = /^[0-9]+$/;

function encodeNumber(digits: string): string {
  return digits.length.toString().padStart(3, '0') + digits;
}

/**
 * A string whose byte-wise order ("C" collation) is SemVer 2.0.0 precedence, or null when `version` is not a valid
 * SemVer version (strict parsing: no leading "v" or "=", no surrounding spaces). Versions that differ only in build
 * metadata get the same key.
 */
export function semverSortKey(version: string): string | null {
  if (!/^[0-9]/.test(version) || version !== version.trim() || parse(version) === null) return null;

  const withoutBuild = version.split('+', 1)[0];
  const dash = withoutBuild.indexOf('-');
  const main = dash < 0 ? withoutBuild : withoutBuild.slice(0, dash);
  const [major, minor, patch] = main.split('.');
  let key = `${encodeNumber(major)}.${encodeNumber(minor)}.${encodeNumber(patch)}`;
  if (dash < 0) return `${key}~`;

  key += '-';
  for (const identifier of withoutBuild.slice(dash + 1).split('.')) {
    key += NUMERIC.test(identifier) ? `.0${encodeNumber(identifier)}` : `.1${identifier}!`;
  }
  return key;
}
