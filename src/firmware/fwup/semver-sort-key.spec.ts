import { compare, valid } from 'semver';
import { SEMVER_SORT_KEY_MAX_LENGTH, semverSortKey } from './semver-sort-key';

/** Byte-wise comparison, as PostgreSQL's "C" collation compares. */
function compareKeys(a: string, b: string): number {
  return Math.sign(Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')));
}

function key(version: string): string {
  const k = semverSortKey(version);
  if (k === null) throw new Error(`no key for ${version}`);
  return k;
}

/** Small deterministic PRNG (mulberry32), so that a failure can be reproduced. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

class VersionGenerator {
  constructor(private readonly random: () => number) {}

  private int(n: number): number {
    return Math.floor(this.random() * n);
  }

  private pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)];
  }

  /** Mostly small numbers so that equal parts are common, sometimes long ones. */
  number(maxDigits: number): string {
    const r = this.random();
    if (r < 0.5) return String(this.int(3));
    if (r < 0.8) return String(this.int(20));
    const digits = 1 + this.int(maxDigits);
    let s = String(1 + this.int(9));
    while (s.length < digits) s += String(this.int(10));
    return s;
  }

  identifier(): string {
    if (this.random() < 0.45) return this.number(15);
    const alphabet = 'abcxyzABCXYZ019-';
    const words = ['alpha', 'beta', 'rc', 'a', 'b', 'alpha-', 'RC', 'x9', '0a', '-', '--', 'a-b'];
    if (this.random() < 0.5) return this.pick(words);
    let s = '';
    const length = 1 + this.int(6);
    while (s.length < length) s += this.pick([...alphabet]);
    return /^[0-9]+$/.test(s) ? `${s}x` : s;
  }

  version(): string {
    let v = `${this.number(15)}.${this.number(15)}.${this.number(15)}`;
    if (this.random() < 0.7) {
      const ids = Array.from({ length: 1 + this.int(4) }, () => this.identifier());
      v += `-${ids.join('.')}`;
    }
    if (this.random() < 0.2) v += `+build.${this.int(100)}.${this.pick(['x', '001', 'sha-5114f85'])}`;
    return v;
  }
}

describe('semverSortKey', () => {
  it('orders the SemVer 2.0.0 specification examples', () => {
    const ordered = [
      '0.0.0',
      '0.0.1',
      '0.9.0',
      '0.10.0',
      '1.0.0-0',
      '1.0.0-9',
      '1.0.0-10',
      '1.0.0-A',
      '1.0.0-a',
      '1.0.0-alpha',
      '1.0.0-alpha.1',
      '1.0.0-alpha.beta',
      '1.0.0-beta',
      '1.0.0-beta.2',
      '1.0.0-beta.11',
      '1.0.0-rc.1',
      '1.0.0',
      '1.0.1',
      '1.9.0',
      '1.10.0',
      '1.11.0',
      '2.0.0',
      '2.1.0',
      '2.1.1',
      '10.0.0',
      '9007199254740991.0.0',
    ];
    for (let i = 1; i < ordered.length; i++) {
      expect([ordered[i - 1], ordered[i], compareKeys(key(ordered[i - 1]), key(ordered[i]))]).toEqual([
        ordered[i - 1],
        ordered[i],
        -1,
      ]);
    }
  });

  it('compares alphanumeric identifiers in ASCII order, shorter prefix first', () => {
    const ordered = ['1.0.0-A-', '1.0.0-Z', '1.0.0-alpha', '1.0.0-alpha-', '1.0.0-alpha-1', '1.0.0-alphab'];
    for (let i = 1; i < ordered.length; i++)
      expect(compareKeys(key(ordered[i - 1]), key(ordered[i]))).toBe(-1);
    expect(compareKeys(key('1.0.0-alpha.x'), key('1.0.0-alpha-'))).toBe(-1);
  });

  it('ignores build metadata', () => {
    expect(key('1.0.0+20130313144700')).toBe(key('1.0.0'));
    expect(key('1.0.0-beta+exp.sha.5114f85')).toBe(key('1.0.0-beta'));
    expect(key('1.0.0+21AF26D3----117B344092BD')).toBe(key('1.0.0+a'));
  });

  it('returns null for anything that is not strict SemVer', () => {
    const invalid = [
      '',
      'v1.2.3',
      'V1.2.3',
      '=1.2.3',
      ' 1.2.3',
      '1.2.3 ',
      '1.2',
      '1',
      '1.2.3.4',
      '01.2.3',
      '1.02.3',
      '1.2.03',
      '1.2.3-01',
      '1.2.3-',
      '1.2.3+',
      '1.2.3-alpha..1',
      '1.2.3-alpha_1',
      '1.2.3+build..1',
      '-1.2.3',
      '1.2.3-é',
      '9007199254740992.0.0',
      'latest',
      `1.0.0-${'a'.repeat(300)}`,
    ];
    for (const version of invalid) expect([version, semverSortKey(version)]).toEqual([version, null]);
  });

  it('agrees with semver.compare on generated versions', () => {
    const gen = new VersionGenerator(prng(20240601));
    const versions = Array.from({ length: 1500 }, () => gen.version());
    for (const v of versions) expect([v, valid(v) !== null]).toEqual([v, true]);
    const keys = new Map(versions.map((v) => [v, key(v)]));

    const random = prng(7);
    for (let i = 0; i < 30000; i++) {
      const a = versions[Math.floor(random() * versions.length)];
      const b = versions[Math.floor(random() * versions.length)];
      const expected = compare(a, b);
      const actual = compareKeys(keys.get(a)!, keys.get(b)!);
      if (actual !== expected) throw new Error(`${a} vs ${b}: semver says ${expected}, keys say ${actual}`);
    }

    const byKey = [...versions].sort((a, b) => compareKeys(keys.get(a)!, keys.get(b)!));
    for (let i = 1; i < byKey.length; i++) expect(compare(byKey[i - 1], byKey[i])).toBeLessThanOrEqual(0);
  });

  it('orders numeric identifiers of any length numerically', () => {
    // Beyond 2^53 semver.compare loses precision, so compare with BigInt here.
    const random = prng(99);
    const digits = (n: number): string =>
      String(1 + Math.floor(random() * 9)) +
      Array.from({ length: n - 1 }, () => Math.floor(random() * 10)).join('');
    const numbers = Array.from({ length: 300 }, () => digits(1 + Math.floor(random() * 60)));
    numbers.push('9007199254740992', '9007199254740993', '0');
    for (const a of numbers.slice(0, 120)) {
      for (const b of numbers.slice(100)) {
        const expected = BigInt(a) === BigInt(b) ? 0 : BigInt(a) < BigInt(b) ? -1 : 1;
        expect(compareKeys(key(`1.0.0-rc.${a}`), key(`1.0.0-rc.${b}`))).toBe(expected);
      }
    }
  });

  it('keeps keys ASCII and within the column size for versions up to the longest semver accepts', () => {
    const worst = `0.0.0-${Array.from({ length: 125 }, () => '1').join('.')}`;
    expect(worst.length).toBe(255);
    const longest = [
      worst,
      `0.0.0-${'1.'.repeat(124)}11`,
      `9007199254740991.9007199254740991.9007199254740991-${'9'.repeat(204)}`,
      `1.0.0-${'a.'.repeat(124)}bc`,
      `1.0.0-${'z'.repeat(250)}`,
    ];
    for (const version of longest) {
      expect(version.length).toBeLessThanOrEqual(256);
      const k = key(version);
      expect(k.length).toBeLessThanOrEqual(SEMVER_SORT_KEY_MAX_LENGTH);
      expect(k).toMatch(/^[\x21-\x7e]+$/);
    }
    const gen = new VersionGenerator(prng(3));
    for (let i = 0; i < 500; i++) {
      const v = gen.version();
      expect(key(v).length).toBeLessThanOrEqual(3 * v.length + 15);
    }
  });
});
