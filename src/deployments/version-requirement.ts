import { semverSortKey } from '../firmware/fwup/semver-sort-key';

/*
 * Elixir version requirements (`Version.parse_requirement/1`, `Version.match?/2` with its default
 * `allow_pre: true`), the language of a deployment group's `conditions.version`:
 *
 *   requirement := clause ("or" clause)*          "and" binds tighter than "or"
 *   clause      := comparison ("and" comparison)*
 *   comparison  := [op] version                   no operator means "=="
 *   op          := "==" | "!=" | ">" | ">=" | "<" | "<=" | "~>"
 *   version     := MAJOR.MINOR.PATCH[-PRE][+BUILD] (SemVer 2.0.0); after "~>" also MAJOR.MINOR
 *
 * `~> 1.2` means `>= 1.2.0 and < 2.0.0-0`, `~> 1.2.3` means `>= 1.2.3 and < 1.3.0-0` (no pre-release of the next
 * version matches). Build metadata never counts. Every comparison becomes one or two bounds on the SemVer sort
 * key (src/firmware/fwup/semver-sort-key.ts), so the same requirement runs in TypeScript and in SQL.
 */

export type Comparator = '==' | '!=' | '>' | '>=' | '<' | '<=';

/** One comparison of a version's sort key with a bound's sort key. */
export interface Bound {
  op: Comparator;
  key: string;
}

/** Bounds joined by "and", clauses joined by "or". An empty list of clauses (the requirement '') matches all. */
export interface VersionRequirement {
  clauses: Bound[][];
}

export const INVALID_REQUIREMENT = 'must be valid Elixir version requirement string';

const OPERATORS = ['==', '!=', '>=', '<=', '~>', '>', '<'] as const;
const MAJOR_MINOR = /^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$/;

function nextPreZero(major: bigint, minor: bigint | null): string {
  return minor === null ? `${major + 1n}.0.0-0` : `${major}.${minor + 1n}.0-0`;
}

function comparison(op: string, version: string): Bound[] | null {
  if (op === '~>') {
    const short = MAJOR_MINOR.exec(version);
    if (short) {
      const lower = semverSortKey(`${short[1]}.${short[2]}.0`);
      const upper = semverSortKey(nextPreZero(BigInt(short[1]), null));
      return lower && upper
        ? [
            { op: '>=', key: lower },
            { op: '<', key: upper },
          ]
        : null;
    }
    const lower = semverSortKey(version);
    if (!lower) return null;
    const [major, minor] = version.split(/[-+]/, 1)[0].split('.');
    const upper = semverSortKey(nextPreZero(BigInt(major), BigInt(minor)));
    return upper
      ? [
          { op: '>=', key: lower },
          { op: '<', key: upper },
        ]
      : null;
  }
  const key = semverSortKey(version);
  return key ? [{ op: op as Comparator, key }] : null;
}

/** Splits `>=1.0.0` into operator and version; a token without an operator is a bare version. */
function splitOperator(token: string): [string | null, string] {
  const op = OPERATORS.find((candidate) => token.startsWith(candidate));
  return op ? [op, token.slice(op.length)] : [null, token];
}

/** The parsed requirement, or null when Elixir would refuse it. '' (or blanks) is "any version". */
export function parseVersionRequirement(text: string): VersionRequirement | null {
  const tokens = text.trim() === '' ? [] : text.trim().split(/\s+/);
  if (tokens.length === 0) return { clauses: [] };
  const clauses: Bound[][] = [];
  let clause: Bound[] = [];
  let i = 0;
  for (;;) {
    // comparison: an operator token followed by a version, an operator glued to its version, or a bare version
    const token = tokens[i++];
    if (token === undefined || token === 'and' || token === 'or') return null;
    const [op, glued] = splitOperator(token);
    let version = glued;
    if (op !== null && version === '') {
      version = tokens[i++] ?? '';
      if (version === '' || version === 'and' || version === 'or') return null;
    }
    const bounds = comparison(op ?? '==', version);
    if (!bounds) return null;
    clause.push(...bounds);
    const joiner = tokens[i++];
    if (joiner === undefined) break;
    if (joiner === 'or') {
      clauses.push(clause);
      clause = [];
    } else if (joiner !== 'and') {
      return null;
    }
  }
  clauses.push(clause);
  return { clauses };
}

export function isValidVersionRequirement(text: string): boolean {
  return parseVersionRequirement(text) !== null;
}

function holds(key: string, bound: Bound): boolean {
  switch (bound.op) {
    case '==':
      return key === bound.key;
    case '!=':
      return key !== bound.key;
    case '>':
      return key > bound.key;
    case '>=':
      return key >= bound.key;
    case '<':
      return key < bound.key;
    case '<=':
      return key <= bound.key;
  }
}

/**
 * Whether `version` satisfies the requirement. The empty requirement matches everything (even no version, as
 * NervesHub's `version: ""` does); otherwise a version that is not SemVer never matches.
 */
export function matchesVersion(requirement: VersionRequirement, version: string | null): boolean {
  if (requirement.clauses.length === 0) return true;
  const key = version === null ? null : semverSortKey(version);
  if (key === null) return false;
  // Sort keys are ASCII, so JavaScript's code-unit order is the byte order of COLLATE "C".
  return requirement.clauses.some((clause) => clause.every((bound) => holds(key, bound)));
}

const SQL_OPERATOR: Record<Comparator, string> = {
  '==': '=',
  '!=': '<>',
  '>': '>',
  '>=': '>=',
  '<': '<',
  '<=': '<=',
};

/**
 * The requirement as an SQL condition on `column` (a `firmware_version_key`, COLLATE "C"), its bounds appended to
 * `params` as `$n` parameters. `TRUE` for the empty requirement; a null key never matches any other.
 */
export function versionRequirementSql(
  requirement: VersionRequirement,
  column: string,
  params: unknown[],
): string {
  if (requirement.clauses.length === 0) return 'TRUE';
  const clauses = requirement.clauses.map((clause) =>
    clause
      .map((bound) => {
        params.push(bound.key);
        return `${column} ${SQL_OPERATOR[bound.op]} $${params.length}`;
      })
      .join(' AND '),
  );
  return `(${column} IS NOT NULL AND ((${clauses.join(') OR (')})))`;
}
