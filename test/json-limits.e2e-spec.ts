import { randomBytes } from 'node:crypto';
import { MAX_JSON_DEPTH, MAX_JSON_VALUES } from '../src/common/validation/json-limits';
import { DETAILS_MAX_DEPTH } from '../src/iroh/dto/iroh-fields';
import type { TestUser } from './support/fixtures';
import { detail, fieldError } from './support/contract-bodies';
import type { TestApp } from './support/test-app';
import { orgScenario } from './support/scenario';

const TOO_DEEP = detail(
  `request body is nested too deeply: at most ${MAX_JSON_DEPTH} levels of objects and arrays`,
);
const TOO_MANY_VALUES = detail(
  `request body has too many values: at most ${MAX_JSON_VALUES} ` +
    '(every object, array, string, number, boolean and null counts)',
);

/** `{"a":{"a":...1...}}`: `levels` objects inside one another. */
const nestedObjects = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;
/** `[[[...]]]`: `levels` arrays inside one another. */
const nestedArrays = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;
/** An object with `keys` members `"k0":1, "k1":1, ...` (`keys + 1` values); 100,000 keys fit in 1 MB. */
const wideObject = (keys: number) =>
  `{${Array.from({ length: keys }, (_, i) => `"k${i.toString(36)}":1`).join(',')}}`;
const newKey = () => randomBytes(32).toString('hex');

describe('JSON bodies nested too deeply or holding too many values', () => {
  let t: TestApp;
  let owner: TestUser;
  let org: string;
  const product = 'limits';

  beforeAll(async () => {
    ({ t, admin: owner, org } = await orgScenario({ product }));
  });
  afterAll(() => t.close());

  function post(path: string, text: string, contentType = 'application/json') {
    return t.http().post(path).set(owner.auth).set('Content-Type', contentType).send(text);
  }

  /** Row counts and newest change of the tables a refused body must not touch. */
  async function state(): Promise<unknown> {
    return t.db.query(
      `SELECT (SELECT count(*) FROM iroh_endpoints)::int AS endpoints,
              (SELECT count(*) FROM products)::int AS products,
              (SELECT max(updated_at) FROM products) AS products_updated,
              (SELECT count(*) FROM devices)::int AS devices,
              (SELECT count(*) FROM support_scripts)::int AS scripts`,
    );
  }

  describe('an iroh endpoint with details nested 10,000 levels deep', () => {
    it('is a 400 with the contract body, and nothing is created', async () => {
      const before = await state();
      const identifier = newKey();
      const res = await post(
        `/api/orgs/${org}/iroh_endpoints`,
        `{"identifier":"${identifier}","details":${nestedObjects(10_000)}}`,
      );
      expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: TOO_DEEP });
      expect(await state()).toEqual(before);
      await t.http().get(`/api/orgs/${org}/iroh_endpoints/${identifier}`).set(owner.auth).expect(404);
    });

    it('arrays nested 500,000 levels deep (1 MB) too', async () => {
      const before = await state();
      const res = await post(
        `/api/orgs/${org}/iroh_endpoints`,
        `{"identifier":"${newKey()}","details":{"a":${nestedArrays(500_000)}}}`,
      );
      expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: TOO_DEEP });
      expect(await state()).toEqual(before);
    });
  });

  const routes = () =>
    [
      ['POST products', `/api/orgs/${org}/products`, (deep: string) => `{"name":"p-deep","x":${deep}}`],
      ['PATCH product', `/api/orgs/${org}/products/${product}`, (deep: string) => `{"product":${deep}}`],
      ['POST devices', `/api/orgs/${org}/products/${product}/devices`, (deep: string) => `[${deep}]`],
      ['POST scripts', `/api/orgs/${org}/products/${product}/scripts`, (deep: string) => `{"name":${deep}}`],
      ['POST users/auth (no token needed)', '/api/users/auth', (deep: string) => `{"email":${deep}}`],
    ] as const;

  it.each(['objects', 'arrays'])(
    'every JSON route answers a body of %s nested too deeply with the 400, changing nothing',
    async (kind) => {
      const deep = kind === 'objects' ? nestedObjects(5_000) : nestedArrays(100_000);
      for (const [name, path, body] of routes()) {
        const before = await state();
        const request = name.startsWith('PATCH') ? t.http().patch(path) : t.http().post(path);
        const res = await request.set(owner.auth).set('Content-Type', 'application/json').send(body(deep));
        expect({ name, status: res.status, body: res.body }).toEqual({ name, status: 400, body: TOO_DEEP });
        expect(await state()).toEqual(before);
      }
    },
  );

  it(`accepts ${MAX_JSON_DEPTH} levels and refuses ${MAX_JSON_DEPTH + 1}`, async () => {
    // The body is level 1, `x` holds the rest: ignored by the route, only its depth counts.
    const atLimit = await post(
      `/api/orgs/${org}/products`,
      `{"name":"p-depth","x":${nestedArrays(MAX_JSON_DEPTH - 1)}}`,
    );
    expect(atLimit.status).toBe(201);
    const over = await post(
      `/api/orgs/${org}/products`,
      `{"name":"p-depth-2","x":${nestedArrays(MAX_JSON_DEPTH)}}`,
    );
    expect({ status: over.status, body: over.body }).toEqual({ status: 400, body: TOO_DEEP });
  });

  it('refuses 100,000 keys within 1 MB with the 400, changing nothing', async () => {
    const before = await state();
    const body = `{"identifier":"${newKey()}","details":${wideObject(100_000)}}`;
    expect(body.length).toBeLessThan(1024 * 1024);
    const inDetails = await post(`/api/orgs/${org}/iroh_endpoints`, body);
    expect({ status: inDetails.status, body: inDetails.body }).toEqual({
      status: 400,
      body: TOO_MANY_VALUES,
    });
    const topLevel = await post(
      `/api/orgs/${org}/products`,
      wideObject(100_000).replace('{', '{"name":"p-wide",'),
    );
    expect({ status: topLevel.status, body: topLevel.body }).toEqual({ status: 400, body: TOO_MANY_VALUES });
    const array = await post(`/api/orgs/${org}/products`, `{"name":[${Array(300_000).fill('0').join(',')}]}`);
    expect({ status: array.status, body: array.body }).toEqual({ status: 400, body: TOO_MANY_VALUES });
    expect(await state()).toEqual(before);
  });

  it(`accepts ${MAX_JSON_VALUES} values and refuses one more`, async () => {
    // The body, the name and the array `x` are 3 values; the array's elements are the rest.
    const body = (values: number) =>
      `{"name":"p-values-${values}","x":[${Array(values - 3)
        .fill('0')
        .join(',')}]}`;
    expect((await post(`/api/orgs/${org}/products`, body(MAX_JSON_VALUES))).status).toBe(201);
    const over = await post(`/api/orgs/${org}/products`, body(MAX_JSON_VALUES + 1));
    expect({ status: over.status, body: over.body }).toEqual({ status: 400, body: TOO_MANY_VALUES });
  });

  it('checks the parsed body too when it comes in another UTF charset', async () => {
    const before = await state();
    const text = `{"identifier":"${newKey()}","details":${nestedObjects(10_000)}}`;
    const res = await t
      .http()
      .post(`/api/orgs/${org}/iroh_endpoints`)
      .set(owner.auth)
      .set('Content-Type', 'application/json; charset=utf-16le')
      // As they are: superagent would send a Buffer given for JSON as JSON.stringify(buffer).
      .serialize((bytes: Buffer) => bytes as unknown as string)
      .send(Buffer.from(text, 'utf16le'));
    expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: TOO_DEEP });
    expect(await state()).toEqual(before);
  });

  describe('iroh details', () => {
    it(`may nest ${DETAILS_MAX_DEPTH} levels; one more is a 422 on details, and nothing is created`, async () => {
      // `details` is the first level; nestedObjects(n) is n levels.
      const identifier = newKey();
      const ok = await post(
        `/api/orgs/${org}/iroh_endpoints`,
        `{"identifier":"${identifier}","details":${nestedObjects(DETAILS_MAX_DEPTH)}}`,
      );
      expect(ok.status).toBe(201);
      expect(JSON.stringify(ok.body.data.details)).toBe(nestedObjects(DETAILS_MAX_DEPTH));
      const before = await state();
      const deeper = await post(
        `/api/orgs/${org}/iroh_endpoints`,
        `{"identifier":"${newKey()}","details":${nestedObjects(DETAILS_MAX_DEPTH + 1)}}`,
      );
      expect({ status: deeper.status, body: deeper.body }).toEqual({
        status: 422,
        body: fieldError('details', `must be nested at most ${DETAILS_MAX_DEPTH} levels deep`),
      });
      expect(await state()).toEqual(before);
    });

    it('over 4 KiB, as many keys or as one long string, is a 422 on details', async () => {
      const before = await state();
      const tooLarge = fieldError('details', 'must be at most 4096 bytes when serialized');
      for (const details of [wideObject(3_000), `{"a":"${'x'.repeat(1_000_000 - 100)}"}`]) {
        const res = await post(
          `/api/orgs/${org}/iroh_endpoints`,
          `{"identifier":"${newKey()}","details":${details}}`,
        );
        expect({ status: res.status, body: res.body }).toEqual({ status: 422, body: tooLarge });
      }
      expect(await state()).toEqual(before);
    });
  });

  it('answers long strings in fields with a 422 naming the field', async () => {
    const before = await state();
    const res = await post(`/api/orgs/${org}/products`, `{"name":"${'é'.repeat(500_000)}"}`);
    expect({ status: res.status, body: res.body }).toEqual({
      status: 422,
      body: fieldError('name', 'should be at most 255 character(s)'),
    });
    expect(await state()).toEqual(before);
  });
});
