import fc from 'fast-check';
import {
  bodyShapeError,
  jsonShapeProblem,
  jsonTextProblem,
  MAX_JSON_DEPTH,
  MAX_JSON_VALUES,
  rawBodyShapeError,
} from './json-limits';

/** `{"a":{"a":...1...}}` with `levels` objects. */
const nestedObjects = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;
const nestedArrays = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;
/** An array holding `values - 1` numbers: `values` values in all. */
const arrayOfValues = (values: number) =>
  `[${Array(values - 1)
    .fill('0')
    .join(',')}]`;

describe('jsonTextProblem (before parsing)', () => {
  it.each(['1', '"a"', '{}', ' [ ] '])('counts %j as one value', (text) => {
    expect(jsonTextProblem(text, { maxDepth: 100, maxValues: 1 })).toBeNull();
    expect(jsonTextProblem(`[${text}]`, { maxDepth: 100, maxValues: 1 })).toBe('too_many_values');
  });

  it.each([
    ['an array of three', '[1,2,3]', 4],
    ['members holding empty containers', '{"a":[],"b":{}}', 3],
    ['brackets and commas inside strings', '[[],[[]],{"x":[1,{"y":"z,]}\\"[{"}]}]', 9],
    ['escaped backslashes before a quote', '["\\\\",["\\\\\\\\"]]', 4],
    ['whitespace everywhere', '\n{ "a" : [ 1 , { } ] ,\t"b" : null }\r\n', 5],
  ])('counts the values of %s exactly', (_name, text, values) => {
    expect(jsonTextProblem(text, { maxDepth: 100, maxValues: values })).toBeNull();
    expect(jsonTextProblem(text, { maxDepth: 100, maxValues: values - 1 })).toBe('too_many_values');
  });

  it(`accepts ${MAX_JSON_DEPTH} levels and refuses ${MAX_JSON_DEPTH + 1}, objects or arrays`, () => {
    expect(jsonTextProblem(nestedObjects(MAX_JSON_DEPTH))).toBeNull();
    expect(jsonTextProblem(nestedArrays(MAX_JSON_DEPTH))).toBeNull();
    expect(jsonTextProblem(nestedObjects(MAX_JSON_DEPTH + 1))).toBe('too_deep');
    expect(jsonTextProblem(nestedArrays(MAX_JSON_DEPTH + 1))).toBe('too_deep');
  });

  it(`accepts ${MAX_JSON_VALUES} values and refuses one more`, () => {
    expect(jsonTextProblem(arrayOfValues(MAX_JSON_VALUES))).toBeNull();
    expect(jsonTextProblem(arrayOfValues(MAX_JSON_VALUES + 1))).toBe('too_many_values');
  });

  it('refuses half a million levels and 100,000 keys in 1 MB quickly', () => {
    const wide = `{${Array.from({ length: 100_000 }, (_, i) => `"k${i}":1`).join(',')}}`;
    const started = Date.now();
    expect(jsonTextProblem(nestedArrays(500_000))).toBe('too_deep');
    expect(jsonTextProblem(wide)).toBe('too_many_values');
    expect(jsonTextProblem(Buffer.from(wide))).toBe('too_many_values');
    expect(Date.now() - started).toBeLessThan(500);
  });

  it('ignores depth and commas inside a long string, and reads UTF-8 bytes as the string', () => {
    const text = `{"a":"${'[{,é😀\\"'.repeat(50_000)}"}`;
    expect(jsonTextProblem(text)).toBeNull();
    expect(jsonTextProblem(Buffer.from(text, 'utf8'))).toBeNull();
  });

  const anyJson = fc.jsonValue({ maxDepth: 6 });
  const limits = fc.record({
    maxDepth: fc.integer({ min: 1, max: 7 }),
    maxValues: fc.integer({ min: 1, max: 60 }),
  });

  it('agrees with the walk over the parsed value, as text and as UTF-8 bytes, for any JSON', () => {
    fc.assert(
      fc.property(anyJson, limits, fc.boolean(), (value, bounds, pretty) => {
        const text = JSON.stringify(value, null, pretty ? 2 : undefined);
        const expected = jsonShapeProblem(JSON.parse(text), bounds);
        // Both stop at the first broken limit, in different orders: compare "over a limit" and, when only
        // one limit can be broken, which one.
        const fromText = jsonTextProblem(text, bounds);
        const fromBytes = jsonTextProblem(Buffer.from(text, 'utf8'), bounds);
        expect(fromText === null).toBe(expected === null);
        expect(fromBytes).toBe(fromText);
        const unbounded = { maxDepth: 1000, maxValues: 1_000_000 };
        expect(jsonTextProblem(text, { ...unbounded, maxValues: bounds.maxValues })).toBe(
          jsonShapeProblem(value, { ...unbounded, maxValues: bounds.maxValues }),
        );
        expect(jsonTextProblem(text, { ...unbounded, maxDepth: bounds.maxDepth })).toBe(
          jsonShapeProblem(value, { ...unbounded, maxDepth: bounds.maxDepth }),
        );
      }),
      { numRuns: 2000 },
    );
  });
});

describe('jsonShapeProblem (a parsed value)', () => {
  it('walks a million levels without recursion', () => {
    const deep = JSON.parse(nestedArrays(1_000_000)) as unknown;
    expect(jsonShapeProblem(deep)).toBe('too_deep');
    expect(jsonShapeProblem(deep, { maxDepth: 2_000_000, maxValues: 2_000_000 })).toBeNull();
  });

  it('counts every value, containers and the outermost one included', () => {
    const value = { a: [1, 'x', null, true], b: {} };
    expect(jsonShapeProblem(value, { maxDepth: 2, maxValues: 7 })).toBeNull();
    expect(jsonShapeProblem(value, { maxDepth: 2, maxValues: 6 })).toBe('too_many_values');
    expect(jsonShapeProblem(value, { maxDepth: 1, maxValues: 7 })).toBe('too_deep');
    expect(jsonShapeProblem('scalar', { maxDepth: 1, maxValues: 1 })).toBeNull();
  });
});

describe('body errors', () => {
  it('are 400s naming the limit', () => {
    const deep = rawBodyShapeError(Buffer.from(nestedObjects(10_000)));
    expect(deep).toMatchObject({
      code: 'BAD_REQUEST',
      detail: `request body is nested too deeply: at most ${MAX_JSON_DEPTH} levels of objects and arrays`,
    });
    expect(bodyShapeError(JSON.parse(arrayOfValues(MAX_JSON_VALUES + 1)))?.detail).toMatch(
      /^request body has too many values: at most 4096 /,
    );
    expect(bodyShapeError({ a: [1] })).toBeUndefined();
    expect(rawBodyShapeError(Buffer.from('{"a":[1]}'))).toBeUndefined();
  });
});
