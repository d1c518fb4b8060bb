import fc from 'fast-check';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { MAX_JSON_BODY_BYTES, MAX_JSON_DEPTH, MAX_JSON_VALUES } from '../src/common/validation/json-limits';
import { DETAILS_MAX_DEPTH } from '../src/iroh/dto/iroh-fields';
import type { TestApp } from './support/test-app';
import { orgScenario } from './support/scenario';
import { type TestUser, unique } from './support/fixtures';

/**
 * Schema-driven fuzzing: every operation of the served /api/openapi.json gets random and boundary bodies,
 * query strings and path values, and deep, wide and long structures (written as text: JSON.stringify would
 * overflow on them) in every free-form field, any body field or as the whole body. Asserts: never a 5xx, never a
 * hang, a refused request (4xx) changes nothing (a fingerprint of the tables: row counts and the newest
 * updated_at), and a body that is certainly over the JSON limits gets their 400.
 *
 * `FUZZ_RUNS` sets the number of requests (default 300); `FUZZ_REPORT=path` writes a Markdown summary;
 * `FUZZ_SEED` replays a run. `npm run fuzz` does 20,000 requests and writes test/fuzzing.md.
 */

const RUNS = Number(process.env.FUZZ_RUNS ?? 300);
const SEED = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : Date.now() % 2 ** 31;
const REQUEST_TIMEOUT_MS = 10_000;
/** Tables whose changes are legitimate side effects of any request, or of the process itself. */
const VOLATILE_TABLES = new Set([
  'audit_logs',
  'rate_limit_buckets',
  'schema_migrations',
  'gateway_instances',
]);
/**
 * Tables whose rows background work of an earlier accepted request goes on updating (an import's progress, a
 * delta's build): a refused request is judged on their row counts alone, not on their newest `updated_at`.
 */
const BACKGROUND_PROGRESS_TABLES = new Set(['device_imports', 'firmware_deltas']);
// `access_tokens.last_used_at` (kept current by reads) is not part of the fingerprint: only row counts and
// `updated_at` are, and the token touch is a raw UPDATE of last_used_at alone.

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

interface Operation {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  path: string;
  pathParams: string[];
  queryParams: string[];
  bodyFields: string[];
  /** Body fields documented as free-form objects (`additionalProperties`), e.g. iroh `details`. */
  freeFormFields: string[];
  multipart: boolean;
  isPublic: boolean;
}

const HUGE = 'x'.repeat(70_000);
const RAW = '%RAW%';

/** Percent-encodes the UTF-8 bytes (a lone surrogate becomes U+FFFD); `RAW`-prefixed values go as they are. */
function enc(value: string): string {
  if (value.startsWith(RAW)) return value.slice(RAW.length);
  return [...Buffer.from(value, 'utf8')]
    .map((b) =>
      /[A-Za-z0-9\-_.~]/.test(String.fromCharCode(b))
        ? String.fromCharCode(b)
        : `%${b.toString(16).toUpperCase().padStart(2, '0')}`,
    )
    .join('');
}
const EVIL_STRINGS = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  HUGE,
  'é'.repeat(300),
  '😀'.repeat(100),
  '\uD800',
  '\u202Eevil',
  "' OR 1=1 --",
  "'; DROP TABLE users; --",
  '%',
  '_',
  '%_%\\',
  '\\',
  '../../etc/passwd',
  '%2e%2e%2f',
  '%00',
  'null',
  'true',
  '-1',
  '0',
  '1e309',
  '99999999999999999999999',
  '2026-13-45T99:99:99Z',
  '<script>alert(1)</script>',
  '{"a":1}',
  '=cmd|/C calc',
  'connected',
  'fwup',
  'view',
  'admin',
  'asc',
  'desc',
  'identifier',
  // Sent as they are in a path or query string: malformed percent-encoding.
  `${RAW}%zz`,
  `${RAW}%E0%A4%A`,
  `${RAW}%`,
];
const EVIL_NUMBERS = [0, -1, 1, 2 ** 31, -(2 ** 31) - 1, 2 ** 53 + 1, -(2 ** 63), 1e308, 1.5, -0.0001];

const evilString = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...EVIL_STRINGS) },
  { weight: 2, arbitrary: fc.string({ maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }) },
);

const evilScalar: fc.Arbitrary<Json> = fc.oneof(
  { weight: 4, arbitrary: evilString },
  { weight: 2, arbitrary: fc.constantFrom<Json>(...EVIL_NUMBERS) },
  { weight: 1, arbitrary: fc.integer() },
  { weight: 1, arbitrary: fc.constantFrom<Json>(null, true, false) },
);

const evilValue: fc.Arbitrary<Json> = fc.letrec<{ value: Json }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { weight: 6, arbitrary: evilScalar },
    { weight: 1, arbitrary: fc.array(tie('value'), { maxLength: 4 }) },
    { weight: 1, arbitrary: fc.dictionary(evilString, tie('value'), { maxKeys: 3 }) },
  ),
})).value;

/**
 * A structure for a body, written as JSON text only when sent (JSON.stringify would overflow on the deepest, and
 * fast-check prints samples): objects, arrays or both alternating `depth` levels deep around a leaf; an object or
 * array of `count` values; or a string of `length` characters made of `unit` (as written in JSON).
 */
type Shape =
  | { kind: 'objects' | 'arrays' | 'mixed'; depth: number; leaf: Json }
  | { kind: 'wide object' | 'wide array'; count: number; leaf: Json }
  | { kind: 'long string'; length: number; unit: string };

const DEPTHS = [
  DETAILS_MAX_DEPTH - 1,
  DETAILS_MAX_DEPTH,
  DETAILS_MAX_DEPTH + 1,
  MAX_JSON_DEPTH - 2,
  MAX_JSON_DEPTH - 1,
  MAX_JSON_DEPTH,
  MAX_JSON_DEPTH + 1,
  100,
  3_000,
  10_000,
  100_000,
];
const COUNTS = [
  2_047,
  2_048,
  2_049,
  MAX_JSON_VALUES - 3,
  MAX_JSON_VALUES - 2,
  MAX_JSON_VALUES - 1,
  MAX_JSON_VALUES,
  MAX_JSON_VALUES + 1,
  10_000,
  90_000,
];

const shape: fc.Arbitrary<Shape> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constantFrom('objects' as const, 'arrays' as const, 'mixed' as const),
      depth: fc.oneof(fc.constantFrom(...DEPTHS), fc.integer({ min: 1, max: 2 * MAX_JSON_DEPTH })),
      leaf: evilScalar,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constantFrom('wide object' as const, 'wide array' as const),
      count: fc.oneof(fc.constantFrom(...COUNTS), fc.integer({ min: 1, max: 5_000 })),
      leaf: evilScalar,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('long string' as const),
      length: fc.constantFrom(4_096, 4_097, 70_000, MAX_JSON_BODY_BYTES - 200),
      unit: fc.constantFrom('x', 'é', '\\"', '[', '\\u0000', '\\ud800'),
    }),
  },
);

/** The shape's JSON text, its depth in levels of objects and arrays, and its number of JSON values. */
function writeShape(shape: Shape): { text: string; depth: number; values: number } {
  switch (shape.kind) {
    case 'objects':
    case 'arrays':
    case 'mixed': {
      const isObject = (level: number) =>
        shape.kind === 'objects' || (shape.kind === 'mixed' && level % 2 === 0);
      const levels = Array.from({ length: shape.depth }, (_, level) => level);
      const opening = levels.map((level) => (isObject(level) ? '{"a":' : '[')).join('');
      const closing = levels
        .reverse()
        .map((level) => (isObject(level) ? '}' : ']'))
        .join('');
      return {
        text: `${opening}${JSON.stringify(shape.leaf)}${closing}`,
        depth: shape.depth,
        values: shape.depth + 1,
      };
    }
    case 'wide object':
    case 'wide array': {
      const items = Array.from({ length: shape.count }, (_, i) =>
        i === 0 ? JSON.stringify(shape.leaf) : '0',
      );
      const text =
        shape.kind === 'wide object'
          ? `{${items.map((item, i) => `"k${i.toString(36)}":${item}`).join(',')}}`
          : `[${items.join(',')}]`;
      return { text, depth: 1, values: shape.count + 1 };
    }
    case 'long string':
      return {
        text: `{"a":"${shape.unit.repeat(Math.floor(shape.length / shape.unit.length))}"}`,
        depth: 1,
        values: 2,
      };
  }
}

function shapeName(shape: Shape): string {
  switch (shape.kind) {
    case 'objects':
    case 'arrays':
    case 'mixed':
      return `${shape.depth} levels of ${shape.kind}`;
    case 'wide object':
    case 'wide array':
      return `a ${shape.kind} of ${shape.count} values`;
    case 'long string':
      return `a string of ${shape.length} characters of ${shape.unit}`;
  }
}

function resolveRef(doc: OpenApiDoc, schema: SchemaObject | undefined, depth = 0): SchemaObject | undefined {
  if (!schema || depth > 5) return schema;
  if (schema.$ref) {
    const name = schema.$ref.split('/').pop()!;
    return resolveRef(doc, doc.components?.schemas?.[name], depth + 1);
  }
  return schema;
}

interface SchemaObject {
  $ref?: string;
  type?: string;
  properties?: Record<string, SchemaObject>;
  additionalProperties?: boolean | SchemaObject;
  allOf?: SchemaObject[];
  anyOf?: SchemaObject[];
  oneOf?: SchemaObject[];
}
interface OpenApiDoc {
  paths: Record<string, Record<string, OperationObject>>;
  components?: { schemas?: Record<string, SchemaObject> };
}
interface OperationObject {
  parameters?: { in: string; name: string }[];
  requestBody?: { content: Record<string, { schema?: SchemaObject }> };
  responses?: Record<string, { content?: Record<string, unknown> }>;
  security?: unknown[];
}

/** The properties of a body schema; for a body of alternative forms (`anyOf`/`oneOf`), those of every form. */
function bodyProperties(doc: OpenApiDoc, schema: SchemaObject | undefined): [string, SchemaObject][] {
  const resolved = resolveRef(doc, schema);
  const forms = resolved?.anyOf ?? resolved?.oneOf;
  if (forms) return forms.flatMap((form) => bodyProperties(doc, form));
  return Object.entries(resolved?.properties ?? {});
}

/** Field names of a request body schema, one level of nesting included (e.g. `product.name`). */
function bodyFields(doc: OpenApiDoc, schema: SchemaObject | undefined): string[] {
  const fields: string[] = [];
  for (const [name, property] of bodyProperties(doc, schema)) {
    fields.push(name);
    const inner = resolveRef(doc, property);
    for (const sub of Object.keys(inner?.properties ?? {})) fields.push(`${name}.${sub}`);
  }
  return fields;
}

/** Body fields (one level of nesting included) documented as objects with any properties. */
function freeFormFields(doc: OpenApiDoc, schema: SchemaObject | undefined): string[] {
  const isFreeForm = (property: SchemaObject | undefined) =>
    property?.type === 'object' && property.additionalProperties !== undefined && !property.properties;
  const fields: string[] = [];
  for (const [name, property] of bodyProperties(doc, schema)) {
    const inner = resolveRef(doc, property);
    if (isFreeForm(inner)) fields.push(name);
    for (const [sub, subProperty] of Object.entries(inner?.properties ?? {})) {
      if (isFreeForm(resolveRef(doc, subProperty))) fields.push(`${name}.${sub}`);
    }
  }
  return fields;
}

function operations(doc: OpenApiDoc): Operation[] {
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      // A stream that stays open (Server-Sent Events) would hold a request to its deadline: its refusals and
      // bad parameters are tested in test/live-events.e2e-spec.ts and the isolation matrix.
      if (op.responses?.['200']?.content?.['text/event-stream'] !== undefined) continue;
      const content = op.requestBody?.content ?? {};
      ops.push({
        method: method as Operation['method'],
        path,
        pathParams: (op.parameters ?? []).filter((p) => p.in === 'path').map((p) => p.name),
        queryParams: (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name),
        bodyFields: bodyFields(doc, content['application/json']?.schema),
        freeFormFields: freeFormFields(doc, content['application/json']?.schema),
        multipart: 'multipart/form-data' in content,
        isPublic: Array.isArray(op.security) && op.security.length === 0,
      });
    }
  }
  return ops;
}

function setPath(target: Record<string, Json>, dotted: string, value: Json): void {
  const [head, ...rest] = dotted.split('.');
  if (rest.length === 0) {
    target[head] = value;
    return;
  }
  const inner = target[head];
  const object = inner && typeof inner === 'object' && !Array.isArray(inner) ? inner : {};
  target[head] = object;
  setPath(object, rest.join('.'), value);
}

interface ShapedBody {
  name: string;
  text: string;
  /** Certainly over the depth or value limit (whatever the other fields hold) and within the size limit. */
  overLimits: boolean;
}

const PLACEHOLDER = '@@fuzz-shape@@';

const LIMIT_REFUSALS = [
  `request body is nested too deeply: at most ${MAX_JSON_DEPTH} levels of objects and arrays`,
  `request body has too many values: at most ${MAX_JSON_VALUES} ` +
    '(every object, array, string, number, boolean and null counts)',
].map((detail) => ({ status: 400, body: { errors: { detail } } }));

/**
 * The body text with the shape in a free-form field, any body field, or as the whole body (when the operation
 * has no such field); the other fields hold random values.
 */
function shapedBody(op: Operation, body: Extract<Sample['body'], { kind: 'shape' }>): ShapedBody {
  const written = writeShape(body.shape);
  const candidates = body.target === 'free-form' ? op.freeFormFields : op.bodyFields;
  let text = written.text;
  let level = 1;
  if (body.target !== 'whole' && candidates.length > 0) {
    const object: Record<string, Json> = {};
    for (const [index, value] of body.fields) {
      if (op.bodyFields.length > 0) setPath(object, op.bodyFields[index % op.bodyFields.length], value);
    }
    const path = candidates[body.field % candidates.length];
    setPath(object, path, PLACEHOLDER);
    text = JSON.stringify(object).replace(JSON.stringify(PLACEHOLDER), () => written.text);
    level = path.split('.').length + 1;
  }
  const depth = level - 1 + written.depth;
  // The bulk import (src/common/http/large-json-body.ts) has the depth limit, not the value count.
  const largeBody = op.method === 'post' && /\/devices\/import$/.test(op.path);
  return {
    name: `${shapeName(body.shape)} at level ${level}`,
    text,
    overLimits:
      Buffer.byteLength(text, 'utf8') <= MAX_JSON_BODY_BYTES &&
      (depth > MAX_JSON_DEPTH || (!largeBody && written.values > MAX_JSON_VALUES)),
  };
}

interface Sample {
  op: number;
  /** Per path parameter: a real fixture value (null) or a hostile one. */
  pathValues: (string | null)[];
  query: [string, string | string[]][];
  body:
    | { kind: 'fields'; fields: [number, Json][] }
    | { kind: 'json'; value: Json }
    | { kind: 'raw'; text: string; type: string }
    | {
        kind: 'shape';
        fields: [number, Json][];
        shape: Shape;
        /** Into a free-form field (of an operation that has one), any body field, or as the whole body. */
        target: 'free-form' | 'field' | 'whole';
        field: number;
      }
    | { kind: 'none' };
  auth: 'admin' | 'none' | 'garbage';
}

describe('schema-driven fuzzing of /api/openapi.json', () => {
  let t: TestApp;
  let admin: TestUser;
  let org: string;
  let ops: Operation[];
  const fixture = { product: '', device: '', script: '', key: '', iroh: '', email: '' };
  const statuses = new Map<number, number>();
  const perOperation = new Map<string, Map<number, number>>();
  let requests = 0;
  let slowest = { ms: 0, what: '' };
  const shapes = { sent: 0, overLimits: 0 };

  async function fingerprint(): Promise<string> {
    const tables: { table_name: string; has_updated: boolean }[] = await t.db.query(
      `SELECT c.relname AS table_name,
              EXISTS (SELECT 1 FROM information_schema.columns col
                       WHERE col.table_schema = 'public' AND col.table_name = c.relname
                         AND col.column_name = 'updated_at') AS has_updated
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' AND c.relkind = 'r' ORDER BY c.relname`,
    );
    const parts = tables
      .filter((row) => !VOLATILE_TABLES.has(row.table_name))
      .map((row) =>
        row.has_updated && !BACKGROUND_PROGRESS_TABLES.has(row.table_name)
          ? `SELECT '${row.table_name}' AS t, count(*)::text || '@' || coalesce(max(updated_at)::text, '-') AS v FROM "${row.table_name}"`
          : `SELECT '${row.table_name}' AS t, count(*)::text AS v FROM "${row.table_name}"`,
      );
    const rows: { t: string; v: string }[] = await t.db.query(parts.join(' UNION ALL '));
    return rows.map((r) => `${r.t}=${r.v}`).join(' ');
  }

  async function ensureFixtures(): Promise<void> {
    const api = () => t.http();
    // `DELETE /api/users/me/tokens/{id}` may have revoked the fuzzer's own token: it gets a new one.
    if ((await api().get('/api/users/me').set(admin.auth)).status === 401) {
      const token = await t.fixtures.token(admin.user);
      admin = { ...admin, token, auth: { Authorization: `Bearer ${token}` } };
    }
    const exists = async (value: string, path: string) =>
      value !== '' && (await api().get(path).set(admin.auth)).status === 200;
    if (!(await exists(fixture.product, `/api/orgs/${org}/products/${fixture.product}`))) {
      fixture.product = unique('fuzz-product-');
      await api()
        .post(`/api/orgs/${org}/products`)
        .set(admin.auth)
        .send({ name: fixture.product })
        .expect(201);
    }
    const base = `/api/orgs/${org}/products/${fixture.product}`;
    if (!(await exists(fixture.device, `${base}/devices/${fixture.device}`))) {
      fixture.device = unique('fuzz-device-');
      await api().post(`${base}/devices`).set(admin.auth).send({ identifier: fixture.device }).expect(201);
    }
    if (!(await exists(fixture.script, `${base}/scripts/${fixture.script}`))) {
      const res = await api()
        .post(`${base}/scripts`)
        .set(admin.auth)
        .send({ name: 's', text: 'x' })
        .expect(201);
      fixture.script = String(res.body.data.id);
    }
    const keys = await api().get(`/api/orgs/${org}/keys`).set(admin.auth).expect(200);
    if (!keys.body.data.some((k: { name: string }) => k.name === fixture.key)) {
      fixture.key = unique('fuzz-key-');
      await api()
        .post(`/api/orgs/${org}/keys`)
        .set(admin.auth)
        .send({ name: fixture.key, key: randomBytes(32).toString('base64') })
        .expect(201);
    }
    if (!(await exists(fixture.iroh, `/api/orgs/${org}/iroh_endpoints/${fixture.iroh}`))) {
      fixture.iroh = randomBytes(32).toString('hex');
      await api()
        .post(`/api/orgs/${org}/iroh_endpoints`)
        .set(admin.auth)
        .send({ identifier: fixture.iroh })
        .expect(201);
    }
  }

  function realValue(param: string, path: string): string {
    switch (param) {
      case 'org_name':
        return org;
      case 'product_name':
        return fixture.product;
      case 'identifier':
        return path.includes('/iroh_endpoints/') ? fixture.iroh : fixture.device;
      case 'id':
        return fixture.script;
      case 'email':
        return fixture.email;
      case 'name':
        return fixture.key;
      default:
        return 'no-such-thing';
    }
  }

  beforeAll(async () => {
    ({ t, admin, org } = await orgScenario({
      env: {
        FLEETHUB_RATE_LIMIT_API_PER_MIN: '0',
        FLEETHUB_RATE_LIMIT_LOGIN_PER_MIN: '0',
        FLEETHUB_RATE_LIMIT_AUTH_FAILURES_PER_MIN: '0',
      },
      admin: { password: 'fuzz-password-123' },
    }));
    const member = await t.fixtures.user();
    await t.fixtures.addMember(org, member, 'view');
    fixture.email = member.user.email;
    await ensureFixtures();
    const doc = (await t.http().get('/api/openapi.json').expect(200)).body as OpenApiDoc;
    ops = operations(doc);
  });
  afterAll(() => t.close());

  it('finds the operations', () => {
    expect(ops.length).toBeGreaterThan(30);
  });

  it(
    `answers ${RUNS} hostile requests without a 5xx, a hang, or a change on refusal (seed ${SEED})`,
    async () => {
      const started = Date.now();
      const sample: fc.Arbitrary<Sample> = fc.record({
        op: fc.nat(),
        pathValues: fc.array(fc.option(evilString, { nil: null, freq: 2 }), { minLength: 4, maxLength: 4 }),
        query: fc.array(
          fc.tuple(
            fc.oneof(
              fc.nat().map((n) => `#${n}`),
              evilString,
              fc.constantFrom('filters[x]', 'sort', 'page'),
            ),
            fc.oneof(evilString, fc.array(evilString, { minLength: 2, maxLength: 3 })),
          ),
          { maxLength: 4 },
        ),
        body: fc.oneof(
          {
            weight: 5,
            arbitrary: fc.record({
              kind: fc.constant('fields' as const),
              fields: fc.array(fc.tuple(fc.nat(), evilValue), { maxLength: 5 }),
            }),
          },
          { weight: 2, arbitrary: fc.record({ kind: fc.constant('json' as const), value: evilValue }) },
          {
            weight: 1,
            arbitrary: fc.record({
              kind: fc.constant('raw' as const),
              text: fc.constantFrom(
                '{"a":',
                '[',
                '\u0000',
                'null',
                '"x"',
                '{"product":{"name":"\\ud800"}}',
                HUGE,
                '{'.repeat(5000),
              ),
              type: fc.constantFrom(
                'application/json',
                'text/plain',
                'multipart/form-data; boundary=x',
                'application/x-www-form-urlencoded',
              ),
            }),
          },
          {
            weight: 2,
            arbitrary: fc.record({
              kind: fc.constant('shape' as const),
              fields: fc.array(fc.tuple(fc.nat(), evilValue), { maxLength: 3 }),
              shape,
              target: fc.constantFrom<'free-form' | 'field' | 'whole'>(
                'free-form',
                'free-form',
                'field',
                'whole',
              ),
              field: fc.nat(),
            }),
          },
          { weight: 1, arbitrary: fc.constant({ kind: 'none' as const }) },
        ),
        auth: fc.constantFrom<Sample['auth']>('admin', 'admin', 'admin', 'admin', 'none', 'garbage'),
      });

      await fc.assert(
        fc.asyncProperty(sample, async (s) => {
          const freeFormOps = ops.filter((candidate) => candidate.freeFormFields.length > 0);
          const op =
            s.body.kind === 'shape' && s.body.target === 'free-form' && freeFormOps.length > 0
              ? freeFormOps[s.op % freeFormOps.length]
              : ops[s.op % ops.length];
          let pathIndex = 0;
          const url = op.path.replace(/\{([^}]+)\}/g, (_, param: string) => {
            const evil = s.pathValues[pathIndex++ % s.pathValues.length];
            return enc(evil ?? realValue(param, op.path));
          });
          const query = s.query
            .map(([key, value]) => {
              const name =
                /^#\d+$/.test(key) && op.queryParams.length > 0
                  ? op.queryParams[Number(key.slice(1)) % op.queryParams.length]
                  : key;
              return [value]
                .flat()
                .map((v) => `${enc(name)}=${enc(v)}`)
                .join('&');
            })
            .filter((part) => part !== '')
            .join('&');
          const target = query ? `${url}?${query}` : url;

          let shaped: ShapedBody | null = null;
          const before = await fingerprint();
          const agent = t.http();
          let req = agent[op.method](target).timeout({
            response: REQUEST_TIMEOUT_MS,
            deadline: REQUEST_TIMEOUT_MS,
          });
          if (s.auth === 'admin') req = req.set(admin.auth);
          if (s.auth === 'garbage') req = req.set('Authorization', 'Bearer nhu_' + 'A'.repeat(46));
          if (op.method !== 'get' && op.method !== 'delete') {
            if (s.body.kind === 'fields') {
              const body: Record<string, Json> = {};
              for (const [index, value] of s.body.fields) {
                if (op.bodyFields.length > 0)
                  setPath(body, op.bodyFields[index % op.bodyFields.length], value);
              }
              req = req.send(body);
            } else if (s.body.kind === 'json') {
              req = req.set('Content-Type', 'application/json').send(JSON.stringify(s.body.value));
            } else if (s.body.kind === 'raw') {
              req = req.set('Content-Type', s.body.type).send(s.body.text);
            } else if (s.body.kind === 'shape') {
              shaped = shapedBody(op, s.body);
              req = req.set('Content-Type', 'application/json').send(shaped.text);
            }
          }
          const t0 = Date.now();
          const res = await req;
          const took = Date.now() - t0;
          if (took > slowest.ms) {
            const body = shaped
              ? `, ${shaped.name}`
              : s.body.kind === 'raw'
                ? `, a raw ${s.body.type} body`
                : '';
            slowest = { ms: took, what: `${op.method.toUpperCase()} ${op.path} → ${res.status}${body}` };
          }
          requests += 1;
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          const key = `${op.method.toUpperCase()} ${op.path}`;
          const perOp = perOperation.get(key) ?? new Map<number, number>();
          perOp.set(res.status, (perOp.get(res.status) ?? 0) + 1);
          perOperation.set(key, perOp);

          const what = `${op.method.toUpperCase()} ${target.slice(0, 300)} → ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`;
          if (res.status >= 500) throw new Error(`server error: ${what}`);
          if (shaped) {
            shapes.sent += 1;
            // Node refuses a request line or headers over its limit (431) before the body is read.
            if (shaped.overLimits && res.status !== 431) {
              shapes.overLimits += 1;
              const refusal = { status: res.status, body: res.body as unknown };
              if (!LIMIT_REFUSALS.some((expected) => JSON.stringify(expected) === JSON.stringify(refusal)))
                throw new Error(
                  `a body over the JSON limits (${shaped.name}) was not refused with their 400: ${what}`,
                );
            }
          }
          if (res.status >= 400) {
            const after = await fingerprint();
            if (after !== before)
              throw new Error(`a refused request changed data: ${what}\n${before}\n${after}`);
          } else if (op.method === 'delete' || op.method === 'put' || op.method === 'patch') {
            await ensureFixtures();
          }
        }),
        { numRuns: RUNS, seed: SEED, endOnFailure: true },
      );

      if (process.env.FUZZ_REPORT) writeReport(process.env.FUZZ_REPORT, Date.now() - started);
    },
    Math.max(120_000, RUNS * 250),
  );

  function writeReport(file: string, durationMs: number): void {
    const fmt = (m: Map<number, number>) =>
      [...m.entries()]
        .sort(([a], [b]) => a - b)
        .map(([status, count]) => `${status}×${count}`)
        .join(', ');
    const lines = [
      '# Fuzzing',
      '',
      'Schema-driven fuzzing of every operation in the served `/api/openapi.json` (`test/fuzz.e2e-spec.ts`,',
      'fast-check): random and boundary bodies, query strings and path values (huge strings, unicode, NUL, lone',
      'surrogates, nulls, arrays for objects, negative and enormous numbers, SQL and LIKE metacharacters, broken',
      'JSON, wrong content types), with a valid token, a garbage token or none. Deep, wide and long structures',
      `go into every free-form field (\`details\` of iroh endpoints), any body field, or make the whole body:`,
      `objects, arrays and both alternating, up to 100,000 levels (around the limits of ${DETAILS_MAX_DEPTH} levels`,
      `for \`details\` and ${MAX_JSON_DEPTH} for a body); objects and arrays of up to 90,000 values (around the`,
      `limit of ${MAX_JSON_VALUES}); strings up to 1 MiB.`,
      '',
      'Checked for every request: no status ≥ 500; an answer within ' +
        `${REQUEST_TIMEOUT_MS / 1000} s;` +
        ' for every',
      'refused request (4xx) an unchanged fingerprint of the database (row count and newest `updated_at` of every',
      'table except `audit_logs`, `rate_limit_buckets`, `gateway_instances`; `last_used_at` is not part of it); and',
      'for every body certainly over the depth or value limit (and within 1 MiB), their 400.',
      '',
      'Run it with `npm run fuzz` (20,000 requests; `FUZZ_RUNS`, `FUZZ_SEED` to change or replay).',
      '',
      '## Last run',
      '',
      `- Date: ${new Date().toISOString()}`,
      `- Requests: ${requests} over ${ops.length} operations, seed ${SEED}`,
      `- Duration: ${(durationMs / 1000).toFixed(1)} s; slowest response ${slowest.ms} ms (${slowest.what})`,
      `- Result: no 5xx, no timeout, no change on a refused request, every body over the JSON limits refused`,
      `- Deep, wide or long structures: ${shapes.sent} requests, ${shapes.overLimits} of them over the depth or value limit`,
      `- Status codes: ${fmt(statuses)}`,
      '',
      '| Operation | Status codes seen |',
      '|---|---|',
      ...[...perOperation.entries()]
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([op, m]) => `| \`${op}\` | ${fmt(m)} |`),
      '',
    ];
    writeFileSync(file, lines.join('\n'));
    // Formatted like the rest of docs/ (prettier --check runs in CI); in a child process, because prettier loads
    // its plugins with dynamic imports, which Jest's module sandbox refuses.
    execFileSync(process.execPath, [
      require.resolve('prettier/bin/prettier.cjs'),
      '--write',
      '--log-level=warn',
      file,
    ]);
  }
});
