import fc from 'fast-check';
import { hasMoreCodePoints } from './values';

describe('hasMoreCodePoints', () => {
  it('counts code points: a surrogate pair is one, a lone surrogate is one', () => {
    expect(hasMoreCodePoints('😀😀', 2)).toBe(false);
    expect(hasMoreCodePoints('😀😀😀', 2)).toBe(true);
    expect(hasMoreCodePoints('\ud800\ud800', 1)).toBe(true);
    expect(hasMoreCodePoints('é'.repeat(255), 255)).toBe(false);
    expect(hasMoreCodePoints('', 0)).toBe(false);
  });

  it('agrees with counting the spread string, for any text', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', maxLength: 40 }), fc.nat({ max: 45 }), (text, max) => {
        expect(hasMoreCodePoints(text, max)).toBe([...text].length > max);
      }),
    );
  });

  it('decides a 1 MiB string by its length', () => {
    const started = Date.now();
    for (let i = 0; i < 100; i++) expect(hasMoreCodePoints('😀'.repeat(262_144), 255)).toBe(true);
    expect(Date.now() - started).toBeLessThan(1000);
  });
});
