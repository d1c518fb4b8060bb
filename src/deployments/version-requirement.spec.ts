import { Client } from 'pg';
import { semverSortKey } from '../firmware/fwup/semver-sort-key';
import {
  matchesVersion,
  parseVersionRequirement,
  type VersionRequirement,
  versionRequirementSql,
} from './version-requirement';

function parsed(text: string): VersionRequirement {
  const requirement = parseVersionRequirement(text);
  if (!requirement) throw new Error(`not a requirement: ${text}`);
  return requirement;
}

describe('parseVersionRequirement', () => {
  it.each([
    '',
    '   ',
    '1.2.3',
    '== 1.2.3',
    '==1.2.3',
    '!= 1.2.3',
    '> 1.2.3',
    '>= 1.0.0-rc.1',
    '< 2.0.0',
    '<= 2.0.0+build.5',
    '~> 1.2',
    '~> 1.2.3',
    '~> 1.2.3-beta',
    '>= 1.0.0 and < 2.0.0',
    '< 1.0.0 or >= 2.0.0 and < 3.0.0',
    '  >=  1.0.0   and   <  2.0.0  ',
  ])('accepts %p', (text) => {
    expect(parseVersionRequirement(text)).not.toBeNull();
  });

  it.each([
    '1.2',
    '1',
    '~> 1',
    '> 1.2',
    'v1.2.3',
    '01.2.3',
    '1.02.3',
    '>=',
    '>= and 1.0.0',
    '1.0.0 and',
    'or 1.0.0',
    '1.0.0 1.1.0',
    '1.0.0 && 2.0.0',
    '=> 1.0.0',
    '=1.0.0',
    '~ 1.0.0',
    '^1.0.0',
    'latest',
    '1.0.0 xor 2.0.0',
  ])('refuses %p', (text) => {
    expect(parseVersionRequirement(text)).toBeNull();
  });
});

/** requirement × version → match, as Elixir's Version.match?/2 answers (allow_pre: true). */
const CASES: [string, string, boolean][] = [
  ['', '0.0.1', true],
  ['1.2.3', '1.2.3', true],
  ['1.2.3', '1.2.3+build', true],
  ['1.2.3', '1.2.4', false],
  ['== 1.2.3', '1.2.3-rc.1', false],
  ['!= 1.2.3', '1.2.3', false],
  ['!= 1.2.3', '1.2.4', true],
  ['> 1.2.3', '1.2.4', true],
  ['> 1.2.3', '1.2.3', false],
  ['> 1.2.3', '1.2.4-alpha', true],
  ['>= 1.2.3', '1.2.3', true],
  ['>= 1.2.3', '1.2.3-rc.1', false],
  ['< 1.2.3', '1.2.3-rc.1', true],
  ['< 1.2.3', '1.2.3', false],
  ['<= 1.2.3', '1.2.3', true],
  ['<= 1.2.3', '1.10.0', false],
  ['~> 1.2', '1.2.0', true],
  ['~> 1.2', '1.9.99', true],
  ['~> 1.2', '1.1.9', false],
  ['~> 1.2', '2.0.0', false],
  ['~> 1.2', '2.0.0-rc.1', false],
  ['~> 1.2', '1.2.0-rc.1', false],
  ['~> 1.2.3', '1.2.3', true],
  ['~> 1.2.3', '1.2.99', true],
  ['~> 1.2.3', '1.3.0', false],
  ['~> 1.2.3', '1.3.0-alpha', false],
  ['~> 1.2.3', '1.2.2', false],
  ['~> 1.2.3-beta', '1.2.3-beta.2', true],
  ['~> 0.9', '0.10.0', true],
  ['>= 1.0.0 and < 2.0.0', '1.5.0', true],
  ['>= 1.0.0 and < 2.0.0', '2.0.0', false],
  ['>= 1.0.0 and < 2.0.0', '2.0.0-rc.1', true],
  ['< 1.0.0 or >= 2.0.0 and < 3.0.0', '0.5.0', true],
  ['< 1.0.0 or >= 2.0.0 and < 3.0.0', '1.5.0', false],
  ['< 1.0.0 or >= 2.0.0 and < 3.0.0', '2.5.0', true],
  ['>= 2.0.0 and < 3.0.0 or < 1.0.0', '0.5.0', true],
  ['>= 1.0.0', 'not-semver', false],
  ['>= 1.0.0', '1.0', false],
  ['>= 1.0.0-alpha', '1.0.0-alpha.1', true],
  ['< 1.0.0-alpha.beta', '1.0.0-alpha.1', true],
  ['> 1.0.0-9', '1.0.0-10', true],
];

describe('matchesVersion', () => {
  it.each(CASES)('%p matches %p: %p', (requirement, version, expected) => {
    expect(matchesVersion(parsed(requirement), version)).toBe(expected);
  });

  it('the empty requirement matches a device without a version; any other does not', () => {
    expect(matchesVersion(parsed(''), null)).toBe(true);
    expect(matchesVersion(parsed('>= 0.0.0'), null)).toBe(false);
  });
});

function generatedVersions(count: number): string[] {
  let seed = 42;
  const next = (n: number) => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % n;
  };
  const pre = ['', '-alpha', '-alpha.1', '-rc.1', '-rc.10', '-0', '-beta.2'];
  const versions: string[] = [];
  for (let i = 0; i < count; i++) {
    versions.push(`${next(4)}.${next(12)}.${next(12)}${pre[next(pre.length)]}${next(5) === 0 ? '+b1' : ''}`);
  }
  return [...versions, 'junk', '1.2', ''];
}

describe('versionRequirementSql on PostgreSQL', () => {
  let client: Client;

  beforeAll(async () => {
    client = new Client({ connectionString: process.env.FLEETHUB_TEST_ADMIN_URL });
    await client.connect();
    await client.query(
      `CREATE TEMP TABLE versions (version text, firmware_version_key varchar(1024) COLLATE "C")`,
    );
    const versions = generatedVersions(400);
    await client.query(`INSERT INTO versions SELECT * FROM unnest($1::text[], $2::text[])`, [
      versions,
      versions.map(semverSortKey),
    ]);
  });

  afterAll(() => client.end());

  it.each([...new Set(CASES.map(([requirement]) => requirement)), '!= 1.2.3 and != 2.0.0'])(
    'agrees with the matcher for %p',
    async (text) => {
      const requirement = parsed(text);
      const params: unknown[] = [];
      const where = versionRequirementSql(requirement, 'firmware_version_key', params);
      const { rows } = await client.query<{ version: string }>(
        `SELECT version FROM versions WHERE ${where} ORDER BY version`,
        params,
      );
      const all = generatedVersions(400);
      const expected = [...new Set(all.filter((v) => matchesVersion(requirement, v)))].sort();
      expect([...new Set(rows.map((r) => r.version))].sort()).toEqual(expected);
      if (text !== '') expect(expected.length).toBeLessThan(new Set(all).size);
    },
  );
});
