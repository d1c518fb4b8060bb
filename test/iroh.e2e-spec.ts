import { Logger } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import type { ReportingDevice } from '../src/iroh/dto/device-identity';
import { IrohClaimsService } from '../src/iroh/iroh-claims.service';
import { unique, type TestUser } from './support/fixtures';
import { createTestApp, type TestApp } from './support/test-app';
import { detail, fieldError, FORBIDDEN, NOT_FOUND, UNAUTHORIZED } from './support/contract-bodies';

const ALREADY_REGISTERED = detail('That endpoint id is already registered.');
const BAD_ID = fieldError('identifier', 'must be 64 hexadecimal characters');
const NOT_A_MEMBER = fieldError('user_email', 'does not belong to a member of this organization');
const BAD_OWNER = fieldError('owner', 'must be one of: device, user, none');
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** A fresh endpoint id: 64 lower-case hex characters. */
const newKey = () => randomBytes(32).toString('hex');
const base = (org: string) => `/api/orgs/${org}/iroh_endpoints`;

const NO_OWNER = { type: 'none', device_identifier: null, user_email: null, user_name: null };
const deviceOwner = (identifier: string) => ({
  type: 'device',
  device_identifier: identifier,
  user_email: null,
  user_name: null,
});

describe('iroh endpoints', () => {
  let t: TestApp;
  let iroh: IrohClaimsService;
  beforeAll(async () => {
    t = await createTestApp();
    iroh = t.app.get(IrohClaimsService);
  });
  afterAll(() => t.close());

  /** An admin and their fresh organization. */
  const UNSTORABLE_DETAILS = 'must not contain NUL characters or unpaired surrogates in its keys or strings';

  /** Each organization's admin, by name, so that `device(org)` can create through the API as them. */
  const owners = new Map<string, TestUser>();
  /** The product `device()` made for each device, by identifier. */
  const productOf = new Map<string, string>();

  async function setup(): Promise<{ owner: TestUser; org: string }> {
    const owner = await t.fixtures.user();
    const org = await t.fixtures.org(owner);
    owners.set(org, owner);
    return { owner, org };
  }

  async function orgId(org: string): Promise<string> {
    const [row] = await t.db.query('SELECT id FROM orgs WHERE name = $1', [org]);
    return row.id as string;
  }

  /** A device (in a product of its own) of `org`, as the device gateway would describe it. */
  async function device(org: string, identifier = unique('dev-')): Promise<ReportingDevice> {
    const owner = owners.get(org)!;
    const product = await t.fixtures.product(owner, org, unique('product-'));
    await t.fixtures.device(owner, org, product, identifier);
    productOf.set(identifier, product);
    // The gateway names a device by its row id, which no HTTP answer carries.
    const [row] = await t.db.query('SELECT id FROM devices WHERE identifier = $1', [identifier]);
    return { id: row.id as string, orgId: await orgId(org), identifier };
  }

  function register(user: TestUser, org: string, body: object) {
    return t.http().post(base(org)).set(user.auth).send(body);
  }

  async function registered(
    user: TestUser,
    org: string,
    body: { identifier?: string; [field: string]: unknown } = {},
  ): Promise<string> {
    const identifier = body.identifier ?? newKey();
    await register(user, org, { ...body, identifier }).expect(201);
    return identifier;
  }

  async function rows(identifier: string) {
    return t.db.query(
      `SELECT org_id, identifier, instance, details, source, device_id, user_id, last_reported_at, inserted_at
         FROM iroh_endpoints WHERE identifier = $1`,
      [identifier],
    );
  }

  async function list(user: TestUser, org: string, query = ''): Promise<{ identifier: string }[]> {
    const res = await t
      .http()
      .get(`${base(org)}${query ? `?${query}` : ''}`)
      .set(user.auth)
      .expect(200);
    return res.body.data;
  }

  const ids = (items: { identifier: string }[]) => items.map((item) => item.identifier);

  describe('POST /api/orgs/{org}/iroh_endpoints', () => {
    it('registers an endpoint held by the organization: 201, Location and the whole record', async () => {
      const { owner, org } = await setup();
      const identifier = newKey();
      const res = await register(owner, org, { identifier }).expect(201);
      expect(res.headers.location).toBe(`/api/orgs/${org}/iroh_endpoints/${identifier}`);
      expect(res.body).toEqual({
        data: {
          identifier,
          service: 'iroh',
          instance: 'default',
          details: {},
          source: 'operator',
          owner: NO_OWNER,
          last_reported_at: null,
          inserted_at: expect.stringMatching(ISO_UTC),
          updated_at: expect.stringMatching(ISO_UTC),
        },
      });
      expect(Object.keys(res.body.data)).toHaveLength(9);
      const [row] = await rows(identifier);
      expect(row.org_id).toBe(await orgId(org));
    });

    it('stores an upper-case id lower-cased, and finds it by either case', async () => {
      const { owner, org } = await setup();
      const identifier = newKey();
      const res = await register(owner, org, { identifier: identifier.toUpperCase() }).expect(201);
      expect(res.body.data.identifier).toBe(identifier);
      expect(res.headers.location).toBe(`/api/orgs/${org}/iroh_endpoints/${identifier}`);
      expect((await rows(identifier))[0].identifier).toBe(identifier);
      await t
        .http()
        .get(`${base(org)}/${identifier.toUpperCase()}`)
        .set(owner.auth)
        .expect(200);
      const dup = await register(owner, org, { identifier }).expect(409);
      expect(dup.body).toEqual(ALREADY_REGISTERED);
    });

    it('attaches it to a member by their email (any case)', async () => {
      const { owner, org } = await setup();
      const grace = await t.fixtures.user({ name: 'Grace Hopper' });
      await t.fixtures.addMember(org, grace, 'view');
      const identifier = newKey();
      const res = await register(owner, org, {
        identifier,
        user_email: grace.user.email.toUpperCase(),
      }).expect(201);
      expect(res.body.data.owner).toEqual({
        type: 'user',
        device_identifier: null,
        user_email: grace.user.email,
        user_name: 'Grace Hopper',
      });
      expect(res.body.data.source).toBe('operator');
    });

    it('takes an instance (trimmed) and details; null means the defaults', async () => {
      const { owner, org } = await setup();
      const res = await register(owner, org, {
        identifier: newKey(),
        instance: '  console ',
        details: { hostname: 'build-box', ports: [1, 2] },
      }).expect(201);
      expect(res.body.data.instance).toBe('console');
      expect(res.body.data.details).toEqual({ hostname: 'build-box', ports: [1, 2] });
      const nulls = await register(owner, org, {
        identifier: newKey(),
        instance: null,
        details: null,
        user_email: null,
      }).expect(201);
      expect(nulls.body.data).toEqual(
        expect.objectContaining({ instance: 'default', details: {}, owner: NO_OWNER }),
      );
      const blankEmail = await register(owner, org, { identifier: newKey(), user_email: '' }).expect(201);
      expect(blankEmail.body.data.owner).toEqual(NO_OWNER);
    });

    it('422 for a missing identifier', async () => {
      const { owner, org } = await setup();
      const res = await register(owner, org, {}).expect(422);
      expect(res.body).toEqual(fieldError('identifier', "can't be blank"));
    });

    it.each([
      ['63 characters', 'a'.repeat(63)],
      ['65 characters', 'a'.repeat(65)],
      ['a non-hex character', `${'a'.repeat(63)}g`],
      ['a ticket', `endpoint${'a'.repeat(64)}`],
      ['a relay url', 'https://relay.example.com/'],
      ['hex with a 0x prefix', `0x${'a'.repeat(62)}`],
      ['a number', 12345],
      ['an object', { key: 'a'.repeat(64) }],
    ])('422 for an identifier that is %s', async (_label, identifier) => {
      const { owner, org } = await setup();
      const res = await register(owner, org, { identifier }).expect(422);
      expect(res.body).toEqual(BAD_ID);
    });

    it.each([
      ['blank', '   ', "can't be blank"],
      ['longer than 64 characters', 'i'.repeat(65), 'should be at most 64 character(s)'],
      ['not a string', 7, 'must be a string'],
    ])('422 for an instance that is %s', async (_label, instance, message) => {
      const { owner, org } = await setup();
      const res = await register(owner, org, { identifier: newKey(), instance }).expect(422);
      expect(res.body).toEqual(fieldError('instance', message));
    });

    it('accepts an instance of exactly 64 characters', async () => {
      const { owner, org } = await setup();
      await register(owner, org, { identifier: newKey(), instance: 'i'.repeat(64) }).expect(201);
    });

    it.each([
      ['an array', [1, 2], 'must be a JSON object'],
      ['a string', 'hello', 'must be a JSON object'],
      ['a number', 3, 'must be a JSON object'],
      ['over 4 KiB serialized', { blob: 'x'.repeat(4096) }, 'must be at most 4096 bytes when serialized'],
      ['holding a NUL', { note: 'a\u0000b' }, UNSTORABLE_DETAILS],
      ['holding an unpaired surrogate', { nested: ['\ud800'] }, UNSTORABLE_DETAILS],
      ['keyed by an unpaired surrogate', { '\udc00': 1 }, UNSTORABLE_DETAILS],
    ])('422 for details that are %s', async (_label, details, message) => {
      const { owner, org } = await setup();
      const res = await register(owner, org, { identifier: newKey(), details }).expect(422);
      expect(res.body).toEqual(fieldError('details', message));
    });

    it('accepts details of exactly 4 KiB serialized', async () => {
      const { owner, org } = await setup();
      const details = { blob: 'x'.repeat(4096 - '{"blob":""}'.length) };
      expect(JSON.stringify(details)).toHaveLength(4096);
      await register(owner, org, { identifier: newKey(), details }).expect(201);
    });

    it('reports every invalid field at once', async () => {
      const { owner, org } = await setup();
      const res = await register(owner, org, { identifier: 'nope', instance: '', details: [] }).expect(422);
      expect(res.body).toEqual({
        errors: {
          identifier: ['must be 64 hexadecimal characters'],
          instance: ["can't be blank"],
          details: ['must be a JSON object'],
        },
      });
    });

    it('422 for an email that is not a member here, the same whether or not the account exists', async () => {
      const { owner, org } = await setup();
      const outsider = await t.fixtures.user();
      const elsewhere = await t.fixtures.user();
      await t.fixtures.org(elsewhere);
      const responses = [
        await register(owner, org, { identifier: newKey(), user_email: outsider.user.email }),
        await register(owner, org, { identifier: newKey(), user_email: elsewhere.user.email }),
        await register(owner, org, { identifier: newKey(), user_email: 'nobody-at-all@example.com' }),
      ];
      for (const res of responses) {
        expect(res.status).toBe(422);
        expect(res.body).toEqual(NOT_A_MEMBER);
      }
      expect(responses[0].text).toBe(responses[2].text);
      const [{ count }] = await t.db.query(
        'SELECT count(*)::int AS count FROM iroh_endpoints WHERE org_id = $1',
        [await orgId(org)],
      );
      expect(count).toBe(0);
    });

    it('409 for a key registered in another organization, without saying where', async () => {
      const a = await setup();
      const b = await setup();
      const identifier = await registered(a.owner, a.org);
      const res = await register(b.owner, b.org, { identifier }).expect(409);
      expect(res.body).toEqual(ALREADY_REGISTERED);
      expect(res.text).not.toContain(a.org);
      const upper = await register(b.owner, b.org, { identifier: identifier.toUpperCase() }).expect(409);
      expect(upper.body).toEqual(ALREADY_REGISTERED);
      expect(await rows(identifier)).toEqual([expect.objectContaining({ org_id: await orgId(a.org) })]);
    });

    it('409 for a key a device already holds, even in the same organization', async () => {
      const { owner, org } = await setup();
      const gadget = await device(org);
      const identifier = newKey();
      await iroh.reportDeviceIdentities(gadget, [{ identifier }]);
      const res = await register(owner, org, { identifier }).expect(409);
      expect(res.body).toEqual(ALREADY_REGISTERED);
    });

    it('concurrent registrations of one key: exactly one 201, the rest 409', async () => {
      const { owner, org } = await setup();
      const identifier = newKey();
      const responses = await Promise.all(
        Array.from({ length: 10 }, () => register(owner, org, { identifier })),
      );
      expect(responses.map((r) => r.status).sort()).toEqual([
        201, 409, 409, 409, 409, 409, 409, 409, 409, 409,
      ]);
      for (const res of responses.filter((r) => r.status === 409))
        expect(res.body).toEqual(ALREADY_REGISTERED);
      expect(await rows(identifier)).toHaveLength(1);
    });

    it('concurrent registrations of one key from two organizations: one wins', async () => {
      const a = await setup();
      const b = await setup();
      const identifier = newKey();
      const responses = await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          i % 2 === 0 ? register(a.owner, a.org, { identifier }) : register(b.owner, b.org, { identifier }),
        ),
      );
      expect(responses.filter((r) => r.status === 201)).toHaveLength(1);
      expect(responses.filter((r) => r.status === 409)).toHaveLength(5);
    });

    it('400 for a body that is not a JSON object', async () => {
      const { owner, org } = await setup();
      await t
        .http()
        .post(base(org))
        .set(owner.auth)
        .set('Content-Type', 'application/json')
        .send('[1]')
        .expect(400);
    });
  });

  describe('GET /api/orgs/{org}/iroh_endpoints', () => {
    it('is empty for an organization holding none', async () => {
      const { owner, org } = await setup();
      const res = await t.http().get(base(org)).set(owner.auth).expect(200);
      expect(res.body).toEqual({ data: [] });
    });

    it('lists newest first; ties by identifier, descending', async () => {
      const { owner, org } = await setup();
      const first = await registered(owner, org);
      const second = await registered(owner, org);
      const third = await registered(owner, org);
      expect(ids(await list(owner, org))).toEqual([third, second, first]);

      const tiedA = `a${newKey().slice(1)}`;
      const tiedB = `b${newKey().slice(1)}`;
      await register(owner, org, { identifier: tiedA }).expect(201);
      await register(owner, org, { identifier: tiedB }).expect(201);
      await t.db.query(
        `UPDATE iroh_endpoints SET inserted_at = '2099-01-01T00:00:00Z' WHERE identifier IN ($1, $2)`,
        [tiedA, tiedB],
      );
      expect(ids(await list(owner, org)).slice(0, 2)).toEqual([tiedB, tiedA]);
    });

    it('shows what holds each endpoint: a device, a member, nobody', async () => {
      const { owner, org } = await setup();
      const grace = await t.fixtures.user({ name: 'Grace Hopper' });
      await t.fixtures.addMember(org, grace, 'manage');
      const gadget = await device(org);
      const deviceKey = newKey();
      await iroh.reportDeviceIdentities(gadget, [{ identifier: deviceKey, details: { v: 1 } }]);
      const memberKey = await registered(owner, org, { user_email: grace.user.email });
      const orgKey = await registered(owner, org);
      const items = await list(owner, org);
      expect(ids(items)).toEqual([orgKey, memberKey, deviceKey]);
      expect(items[2]).toEqual({
        identifier: deviceKey,
        service: 'iroh',
        instance: 'default',
        details: { v: 1 },
        source: 'device_reported',
        owner: deviceOwner(gadget.identifier),
        last_reported_at: expect.stringMatching(ISO_UTC),
        inserted_at: expect.stringMatching(ISO_UTC),
        updated_at: expect.stringMatching(ISO_UTC),
      });
      expect(items[1]).toEqual(
        expect.objectContaining({
          owner: {
            type: 'user',
            device_identifier: null,
            user_email: grace.user.email,
            user_name: 'Grace Hopper',
          },
        }),
      );
      expect(items[0]).toEqual(expect.objectContaining({ owner: NO_OWNER, last_reported_at: null }));
    });

    it("does not list another organization's endpoints, nor other services", async () => {
      const a = await setup();
      const b = await setup();
      await registered(b.owner, b.org);
      const mine = await registered(a.owner, a.org);
      // Another service's endpoint: the API registers iroh endpoints only.
      await t.db.query(
        `INSERT INTO iroh_endpoints (org_id, identifier, service, source) VALUES ($1, $2, 'tailscale', 'operator')`,
        [await orgId(a.org), newKey()],
      );
      expect(ids(await list(a.owner, a.org))).toEqual([mine]);
    });

    describe('filters', () => {
      let owner: TestUser;
      let org: string;
      let deviceKey: string;
      let memberKey: string;
      let orgKey: string;
      let all: string[];

      beforeAll(async () => {
        ({ owner, org } = await setup());
        const grace = await t.fixtures.user({ name: 'Grace Hopper' });
        await t.fixtures.addMember(org, grace, 'view');
        const gadget = await device(org, unique('Gateway-Alpha-'));
        deviceKey = `d0${newKey().slice(2)}`;
        await iroh.reportDeviceIdentities(gadget, [{ identifier: deviceKey }]);
        memberKey = await registered(owner, org, { user_email: grace.user.email });
        orgKey = await registered(owner, org);
        all = [orgKey, memberKey, deviceKey];
        // Another organization with look-alike holders, which must never show up here.
        const other = await setup();
        const twin = await t.fixtures.user({ name: 'Grace Hopper' });
        await t.fixtures.addMember(other.org, twin, 'view');
        await registered(other.owner, other.org, { user_email: twin.user.email });
        await iroh.reportDeviceIdentities(await device(other.org, unique('Gateway-Alpha-')), [
          { identifier: newKey() },
        ]);
      });

      it('unfiltered lists all three', async () => {
        expect(ids(await list(owner, org))).toEqual(all);
      });

      it.each([
        ['device', () => [deviceKey]],
        ['user', () => [memberKey]],
        ['none', () => [orgKey]],
      ])('owner=%s narrows to that kind of holder', async (value, expected) => {
        expect(ids(await list(owner, org, `owner=${value}`))).toEqual(expected());
      });

      it.each([['operator'], ['DEVICE'], ['devices']])('422 for owner=%s', async (value) => {
        const res = await t
          .http()
          .get(`${base(org)}?owner=${value}`)
          .set(owner.auth)
          .expect(422);
        expect(res.body).toEqual(BAD_OWNER);
      });

      it('422 for a repeated owner', async () => {
        const res = await t
          .http()
          .get(`${base(org)}?owner=device&owner=user`)
          .set(owner.auth)
          .expect(422);
        expect(res.body).toEqual(BAD_OWNER);
      });

      it('matches the start of an endpoint id, in any case', async () => {
        expect(ids(await list(owner, org, `search=${memberKey.slice(0, 8)}`))).toEqual([memberKey]);
        expect(ids(await list(owner, org, `search=${memberKey.slice(0, 8).toUpperCase()}`))).toEqual([
          memberKey,
        ]);
        expect(ids(await list(owner, org, `search=${memberKey}`))).toEqual([memberKey]);
      });

      it('does not match the middle of an endpoint id', async () => {
        expect(await list(owner, org, `search=${memberKey.slice(20, 28)}`)).toEqual([]);
      });

      it("matches part of the holding device's identifier, in any case", async () => {
        expect(ids(await list(owner, org, 'search=way-alp'))).toEqual([deviceKey]);
        expect(ids(await list(owner, org, 'search=GATEWAY'))).toEqual([deviceKey]);
      });

      it("matches part of the holding member's name, in any case", async () => {
        expect(ids(await list(owner, org, 'search=ace%20hop'))).toEqual([memberKey]);
        expect(ids(await list(owner, org, 'search=GRACE'))).toEqual([memberKey]);
      });

      it('does not search member emails', async () => {
        expect(await list(owner, org, 'search=example.com')).toEqual([]);
      });

      it('trims the search term', async () => {
        expect(ids(await list(owner, org, 'search=%20%20grace%20'))).toEqual([memberKey]);
      });

      it('combines owner and search', async () => {
        expect(ids(await list(owner, org, `owner=device&search=${deviceKey.slice(0, 6)}`))).toEqual([
          deviceKey,
        ]);
        expect(await list(owner, org, `owner=user&search=${deviceKey.slice(0, 6)}`)).toEqual([]);
        expect(await list(owner, org, 'owner=none&search=grace')).toEqual([]);
        expect(ids(await list(owner, org, 'owner=user&search=grace'))).toEqual([memberKey]);
        expect(ids(await list(owner, org, `owner=none&search=${orgKey.slice(0, 10)}`))).toEqual([orgKey]);
      });

      it('blank filters are no filters', async () => {
        expect(ids(await list(owner, org, 'owner=&search='))).toEqual(all);
        expect(ids(await list(owner, org, 'owner=%20&search=%20%20'))).toEqual(all);
      });

      it('LIKE metacharacters match only themselves', async () => {
        for (const term of ['%25', '_', '%5C', '%25%25', '__', '%5C%25']) {
          expect({ term, items: await list(owner, org, `search=${term}`) }).toEqual({ term, items: [] });
        }
      });

      it('ignores query keys it does not know', async () => {
        expect(ids(await list(owner, org, 'sort=identifier&filters[owner]=nope&x=1'))).toEqual(all);
      });

      it('422 for a repeated or overlong search term', async () => {
        const repeated = await t
          .http()
          .get(`${base(org)}?search=a&search=b`)
          .set(owner.auth)
          .expect(422);
        expect(repeated.body).toEqual(fieldError('search', 'must be a string'));
        const long = await t
          .http()
          .get(`${base(org)}?search=${'a'.repeat(256)}`)
          .set(owner.auth)
          .expect(422);
        expect(long.body).toEqual(fieldError('search', 'should be at most 255 character(s)'));
      });

      it('a search with a NUL character is a 422, never a 500', async () => {
        const res = await t
          .http()
          .get(`${base(org)}?search=a%00b`)
          .set(owner.auth)
          .expect(422);
        expect(res.body).toEqual(fieldError('search', 'must not contain NUL characters'));
      });
    });

    describe('pagination', () => {
      let owner: TestUser;
      let org: string;
      let keys: string[];

      beforeAll(async () => {
        ({ owner, org } = await setup());
        keys = [];
        for (let i = 0; i < 5; i++) keys.unshift(await registered(owner, org));
      });

      it('has no pagination object unless asked', async () => {
        const res = await t.http().get(base(org)).set(owner.auth).expect(200);
        expect(Object.keys(res.body)).toEqual(['data']);
        expect(ids(res.body.data)).toEqual(keys);
      });

      it('pages through the list, newest first, without overlap', async () => {
        const page = async (n: number) =>
          (
            await t
              .http()
              .get(`${base(org)}?pagination[page]=${n}&pagination[page_size]=2`)
              .set(owner.auth)
              .expect(200)
          ).body;
        const one = await page(1);
        expect(one.pagination).toEqual({ page_number: 1, page_size: 2, total_entries: 5, total_pages: 3 });
        expect(ids(one.data)).toEqual(keys.slice(0, 2));
        expect(ids((await page(2)).data)).toEqual(keys.slice(2, 4));
        expect(ids((await page(3)).data)).toEqual(keys.slice(4));
        const past = await page(4);
        expect(past).toEqual({
          data: [],
          pagination: { page_number: 4, page_size: 2, total_entries: 5, total_pages: 3 },
        });
      });

      it('defaults to page 1 of 10, and accepts top-level page and page_size', async () => {
        const onlyPage = await t
          .http()
          .get(`${base(org)}?pagination[page]=1`)
          .set(owner.auth)
          .expect(200);
        expect(onlyPage.body.pagination).toEqual({
          page_number: 1,
          page_size: 10,
          total_entries: 5,
          total_pages: 1,
        });
        const alias = await t
          .http()
          .get(`${base(org)}?page=2&page_size=3`)
          .set(owner.auth)
          .expect(200);
        expect(alias.body.pagination).toEqual({
          page_number: 2,
          page_size: 3,
          total_entries: 5,
          total_pages: 2,
        });
        expect(ids(alias.body.data)).toEqual(keys.slice(3));
      });

      it('pages through search hits with their total, up to and past the last page', async () => {
        const { owner: searcher, org: searchOrg } = await setup();
        // Three ids start with "abcf" (a prefix ending in the last hex digit), one with "abd0" just past it.
        const hits: string[] = [];
        for (let i = 0; i < 3; i++) {
          hits.unshift(await registered(searcher, searchOrg, { identifier: `abcf${newKey().slice(4)}` }));
        }
        const neighbour = await registered(searcher, searchOrg, { identifier: `abd0${newKey().slice(4)}` });
        const page = async (term: string, n: number) =>
          (
            await t
              .http()
              .get(`${base(searchOrg)}?search=${term}&pagination[page]=${n}&pagination[page_size]=2`)
              .set(searcher.auth)
              .expect(200)
          ).body;
        const one = await page('ABCF', 1);
        expect(one.pagination).toEqual({ page_number: 1, page_size: 2, total_entries: 3, total_pages: 2 });
        expect(ids(one.data)).toEqual(hits.slice(0, 2));
        expect(ids((await page('abcf', 2)).data)).toEqual(hits.slice(2));
        expect(await page('abcf', 3)).toEqual({
          data: [],
          pagination: { page_number: 3, page_size: 2, total_entries: 3, total_pages: 2 },
        });
        expect((await page('abc', 1)).pagination.total_entries).toBe(3);
        expect(ids((await page('abd', 1)).data)).toEqual([neighbour]);
        expect(await page('abce', 1)).toEqual({
          data: [],
          pagination: { page_number: 1, page_size: 2, total_entries: 0, total_pages: 0 },
        });
      });

      it('keeps every total exact through creates, claims, deletes, member removal and device deletion', async () => {
        const { owner: admin, org: countedOrg } = await setup();
        const grace = await t.fixtures.user({ name: 'Grace Hopper' });
        await t.fixtures.addMember(countedOrg, grace, 'view');
        const totals = async () => {
          const paged = async (owner: string) =>
            (
              await t
                .http()
                .get(`${base(countedOrg)}?pagination[page]=1${owner ? `&owner=${owner}` : ''}`)
                .set(admin.auth)
                .expect(200)
            ).body.pagination.total_entries as number;
          const counted = await t.db.query(
            `SELECT count(*)::int AS total,
                    count(*) FILTER (WHERE device_id IS NOT NULL)::int AS device,
                    count(*) FILTER (WHERE device_id IS NULL AND user_id IS NOT NULL)::int AS "user",
                    count(*) FILTER (WHERE device_id IS NULL AND user_id IS NULL)::int AS none
               FROM iroh_endpoints WHERE org_id = $1`,
            [await orgId(countedOrg)],
          );
          const api = {
            total: await paged(''),
            device: await paged('device'),
            user: await paged('user'),
            none: await paged('none'),
          };
          expect(api).toEqual(counted[0]);
          return api;
        };

        const unowned = await registered(admin, countedOrg);
        const claimedLater = await registered(admin, countedOrg);
        await registered(admin, countedOrg, { user_email: grace.user.email });
        await registered(admin, countedOrg, { user_email: grace.user.email });
        expect(await totals()).toEqual({ total: 4, device: 0, user: 2, none: 2 });

        const gadget = await device(countedOrg);
        await iroh.reportDeviceIdentities(gadget, [{ identifier: claimedLater }]);
        await iroh.reportDeviceIdentities(gadget, [{ identifier: newKey(), instance: 'console' }]);
        expect(await totals()).toEqual({ total: 5, device: 2, user: 2, none: 1 });

        await t
          .http()
          .delete(`${base(countedOrg)}/${unowned}`)
          .set(admin.auth)
          .expect(204);
        // No HTTP call deletes a user account.
        await t.db.query('DELETE FROM users WHERE id = $1', [grace.user.id]);
        expect(await totals()).toEqual({ total: 4, device: 2, user: 0, none: 2 });

        await t
          .http()
          .delete(
            `/api/orgs/${countedOrg}/products/${productOf.get(gadget.identifier)}/devices/${gadget.identifier}`,
          )
          .set(admin.auth)
          .expect(204);
        expect(await totals()).toEqual({ total: 2, device: 0, user: 0, none: 2 });

        // Concurrent creates and deletes (spread over the pool's connections, so over counter shards).
        const many = await Promise.all(Array.from({ length: 12 }, () => registered(admin, countedOrg)));
        await Promise.all(
          many.slice(0, 5).map((id) =>
            t
              .http()
              .delete(`${base(countedOrg)}/${id}`)
              .set(admin.auth)
              .expect(204),
          ),
        );
        expect(await totals()).toEqual({ total: 9, device: 0, user: 0, none: 9 });
      });

      it('counts only what the filters match', async () => {
        const res = await t
          .http()
          .get(`${base(org)}?search=${keys[1].slice(0, 12)}&pagination[page_size]=1`)
          .set(owner.auth)
          .expect(200);
        expect(res.body.pagination).toEqual({
          page_number: 1,
          page_size: 1,
          total_entries: 1,
          total_pages: 1,
        });
      });

      it('total_pages is 0 when nothing matches', async () => {
        const res = await t
          .http()
          .get(`${base(org)}?owner=device&page=1`)
          .set(owner.auth)
          .expect(200);
        expect(res.body).toEqual({
          data: [],
          pagination: { page_number: 1, page_size: 10, total_entries: 0, total_pages: 0 },
        });
      });

      it.each([
        ['pagination[page]=0', 'pagination[page]', 'must be an integer of at least 1'],
        ['pagination[page]=-1', 'pagination[page]', 'must be an integer of at least 1'],
        ['pagination[page]=abc', 'pagination[page]', 'must be an integer of at least 1'],
        ['pagination[page]=1.5', 'pagination[page]', 'must be an integer of at least 1'],
        ['page=0', 'page', 'must be an integer of at least 1'],
        ['pagination[page]=1&pagination[page]=2', 'pagination[page]', 'must be an integer of at least 1'],
        ['pagination[page_size]=0', 'pagination[page_size]', 'must be an integer from 1 to 500'],
        ['pagination[page_size]=501', 'pagination[page_size]', 'must be an integer from 1 to 500'],
        ['page_size=x', 'page_size', 'must be an integer from 1 to 500'],
        ['pagination[page]=99999999999999999999', 'pagination[page]', 'must be at most 10000000'],
      ])('422 naming the parameter for %s', async (query, name, message) => {
        const res = await t
          .http()
          .get(`${base(org)}?${query}`)
          .set(owner.auth)
          .expect(422);
        expect(res.body).toEqual({ errors: { [name]: [message] } });
      });

      it('accepts page_size 500', async () => {
        const res = await t
          .http()
          .get(`${base(org)}?pagination[page_size]=500`)
          .set(owner.auth)
          .expect(200);
        expect(res.body.data).toHaveLength(5);
      });
    });
  });

  describe('GET /api/orgs/{org}/iroh_endpoints/{identifier}', () => {
    it('finds one by its key', async () => {
      const { owner, org } = await setup();
      const identifier = await registered(owner, org, { instance: 'console' });
      const res = await t
        .http()
        .get(`${base(org)}/${identifier}`)
        .set(owner.auth)
        .expect(200);
      expect(res.body).toEqual({
        data: expect.objectContaining({ identifier, instance: 'console', owner: NO_OWNER }),
      });
    });

    it("404 for a key nobody holds, for another organization's, and for something that is not a key", async () => {
      const a = await setup();
      const b = await setup();
      const theirs = await registered(b.owner, b.org);
      for (const path of [newKey(), theirs, 'not-a-key', '%00', `${newKey()}0`]) {
        const res = await t
          .http()
          .get(`${base(a.org)}/${path}`)
          .set(a.owner.auth);
        expect({ path, status: res.status, body: res.body }).toEqual({ path, status: 404, body: NOT_FOUND });
      }
    });

    it('does not show other services', async () => {
      const { owner, org } = await setup();
      const identifier = newKey();
      // Another service's endpoint: the API registers iroh endpoints only.
      await t.db.query(
        `INSERT INTO iroh_endpoints (org_id, identifier, service, source) VALUES ($1, $2, 'tailscale', 'operator')`,
        [await orgId(org), identifier],
      );
      await t
        .http()
        .get(`${base(org)}/${identifier}`)
        .set(owner.auth)
        .expect(404, NOT_FOUND);
      await t
        .http()
        .delete(`${base(org)}/${identifier}`)
        .set(owner.auth)
        .expect(404, NOT_FOUND);
    });
  });

  describe('DELETE /api/orgs/{org}/iroh_endpoints/{identifier}', () => {
    it('removes one (any case), and then it is gone', async () => {
      const { owner, org } = await setup();
      const identifier = await registered(owner, org);
      const res = await t
        .http()
        .delete(`${base(org)}/${identifier.toUpperCase()}`)
        .set(owner.auth)
        .expect(204);
      expect(res.text).toBe('');
      await t
        .http()
        .get(`${base(org)}/${identifier}`)
        .set(owner.auth)
        .expect(404, NOT_FOUND);
      expect(await rows(identifier)).toEqual([]);
      await t
        .http()
        .delete(`${base(org)}/${identifier}`)
        .set(owner.auth)
        .expect(404, NOT_FOUND);
    });

    it("404 for a key nobody holds, and for another organization's, which remains", async () => {
      const a = await setup();
      const b = await setup();
      const theirs = await registered(b.owner, b.org);
      await t
        .http()
        .delete(`${base(a.org)}/${newKey()}`)
        .set(a.owner.auth)
        .expect(404, NOT_FOUND);
      await t
        .http()
        .delete(`${base(a.org)}/${theirs}`)
        .set(a.owner.auth)
        .expect(404, NOT_FOUND);
      await t
        .http()
        .delete(`${base(a.org)}/not-a-key`)
        .set(a.owner.auth)
        .expect(404, NOT_FOUND);
      expect(await rows(theirs)).toHaveLength(1);
    });

    it('a deleted device-reported endpoint comes back when the device reports it again', async () => {
      const { owner, org } = await setup();
      const gadget = await device(org);
      const identifier = newKey();
      expect(await iroh.reportDeviceIdentities(gadget, [{ identifier }])).toEqual([
        { identifier, instance: 'default', outcome: 'created' },
      ]);
      await t
        .http()
        .delete(`${base(org)}/${identifier}`)
        .set(owner.auth)
        .expect(204);
      await t
        .http()
        .get(`${base(org)}/${identifier}`)
        .set(owner.auth)
        .expect(404);
      expect(await iroh.reportDeviceIdentities(gadget, [{ identifier }])).toEqual([
        { identifier, instance: 'default', outcome: 'created' },
      ]);
      const res = await t
        .http()
        .get(`${base(org)}/${identifier}`)
        .set(owner.auth)
        .expect(200);
      expect(res.body.data).toEqual(
        expect.objectContaining({ source: 'device_reported', owner: deviceOwner(gadget.identifier) }),
      );
    });
  });

  describe('roles', () => {
    it('a view member may read, but not register or delete', async () => {
      const { owner, org } = await setup();
      const viewer = await t.fixtures.user();
      await t.fixtures.addMember(org, viewer, 'view');
      const identifier = await registered(owner, org);
      expect(ids(await list(viewer, org))).toEqual([identifier]);
      await t
        .http()
        .get(`${base(org)}/${identifier}`)
        .set(viewer.auth)
        .expect(200);
      const post = await register(viewer, org, { identifier: newKey() }).expect(403);
      expect(post.body).toEqual(NOT_FOUND);
      const del = await t
        .http()
        .delete(`${base(org)}/${identifier}`)
        .set(viewer.auth)
        .expect(403);
      expect(del.body).toEqual(NOT_FOUND);
      expect(await rows(identifier)).toHaveLength(1);
    });

    it('a manage member may register and delete', async () => {
      const { org } = await setup();
      const manager = await t.fixtures.user();
      await t.fixtures.addMember(org, manager, 'manage');
      const identifier = await registered(manager, org);
      await t
        .http()
        .delete(`${base(org)}/${identifier}`)
        .set(manager.auth)
        .expect(204);
    });

    it('an outsider gets 404 with the same body on every route', async () => {
      const { owner, org } = await setup();
      const outsider = await t.fixtures.user();
      const identifier = await registered(owner, org);
      const responses = [
        await t.http().get(base(org)).set(outsider.auth),
        await t
          .http()
          .get(`${base(org)}/${identifier}`)
          .set(outsider.auth),
        await register(outsider, org, { identifier: newKey() }),
        await t
          .http()
          .delete(`${base(org)}/${identifier}`)
          .set(outsider.auth),
        await t.http().get(base('no-such-org')).set(outsider.auth),
      ];
      for (const res of responses) {
        expect(res.status).toBe(404);
        expect(res.body).toEqual(NOT_FOUND);
      }
      expect(await rows(identifier)).toHaveLength(1);
    });

    it('no token: 401 on every route', async () => {
      const { owner, org } = await setup();
      const identifier = await registered(owner, org);
      const responses = [
        await t.http().get(base(org)),
        await t.http().get(`${base(org)}/${identifier}`),
        await t.http().post(base(org)).send({ identifier: newKey() }),
        await t.http().delete(`${base(org)}/${identifier}`),
      ];
      for (const res of responses) {
        expect(res.status).toBe(401);
        expect(res.body).toEqual(UNAUTHORIZED);
      }
    });

    it('a read-scoped token may list but not register', async () => {
      const { owner, org } = await setup();
      const reader = {
        ...owner,
        auth: { Authorization: `Bearer ${await t.fixtures.token(owner.user, { scope: 'read' })}` },
      };
      await t.http().get(base(org)).set(reader.auth).expect(200);
      const res = await register(reader, org, { identifier: newKey() }).expect(403);
      expect(res.body).toEqual(FORBIDDEN);
    });
  });

  describe('IrohService.reportDeviceIdentities (claim rules)', () => {
    let warn: jest.SpyInstance;
    beforeEach(() => {
      warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    });
    afterEach(() => warn.mockRestore());

    it('nobody holds the key: recorded for the device', async () => {
      const { owner, org } = await setup();
      const gadget = await device(org);
      const identifier = newKey();
      const result = await iroh.reportDeviceIdentities(gadget, [
        { identifier: identifier.toUpperCase(), details: { relay: 'https://relay.example.com' } },
      ]);
      expect(result).toEqual([{ identifier, instance: 'default', outcome: 'created' }]);
      const [row] = await rows(identifier);
      expect(row).toEqual(
        expect.objectContaining({
          org_id: gadget.orgId,
          device_id: gadget.id,
          user_id: null,
          source: 'device_reported',
          instance: 'default',
          details: { relay: 'https://relay.example.com' },
          last_reported_at: expect.any(Date),
        }),
      );
      const res = await t
        .http()
        .get(`${base(org)}/${identifier}`)
        .set(owner.auth)
        .expect(200);
      expect(res.body.data.owner).toEqual(deviceOwner(gadget.identifier));
    });

    it("a new key replaces the device's previous key for that instance; other instances coexist", async () => {
      const { org } = await setup();
      const gadget = await device(org);
      const [first, second, consoleKey] = [newKey(), newKey(), newKey()];
      await iroh.reportDeviceIdentities(gadget, [
        { identifier: first },
        { identifier: consoleKey, instance: 'console' },
      ]);
      const result = await iroh.reportDeviceIdentities(gadget, [{ identifier: second }]);
      expect(result).toEqual([{ identifier: second, instance: 'default', outcome: 'created' }]);
      expect(await rows(first)).toEqual([]);
      expect(await rows(second)).toHaveLength(1);
      expect(await rows(consoleKey)).toEqual([
        expect.objectContaining({ instance: 'console', device_id: gadget.id }),
      ]);
    });

    it('the same key again: details and last_reported_at are refreshed', async () => {
      const { org } = await setup();
      const gadget = await device(org);
      const identifier = newKey();
      await iroh.reportDeviceIdentities(gadget, [{ identifier, details: { v: 1 } }]);
      const [before] = await rows(identifier);
      await new Promise((r) => setTimeout(r, 10));
      const result = await iroh.reportDeviceIdentities(gadget, [{ identifier, details: { v: 2 } }]);
      expect(result).toEqual([{ identifier, instance: 'default', outcome: 'updated' }]);
      const [after] = await rows(identifier);
      expect(after.details).toEqual({ v: 2 });
      expect(after.last_reported_at.getTime()).toBeGreaterThan(before.last_reported_at.getTime());
      expect(after.inserted_at).toEqual(before.inserted_at);
    });

    it("an unowned operator row of the device's organization is claimed, replacing the device's old key", async () => {
      const { owner, org } = await setup();
      const gadget = await device(org);
      const old = newKey();
      await iroh.reportDeviceIdentities(gadget, [{ identifier: old, instance: 'console' }]);
      const identifier = await registered(owner, org, { details: { note: 'ahead of time' } });
      const [before] = await rows(identifier);
      const result = await iroh.reportDeviceIdentities(gadget, [
        { identifier, instance: 'console', details: { v: 3 } },
      ]);
      expect(result).toEqual([{ identifier, instance: 'console', outcome: 'claimed' }]);
      const [after] = await rows(identifier);
      expect(after).toEqual(
        expect.objectContaining({
          device_id: gadget.id,
          user_id: null,
          source: 'device_reported',
          instance: 'console',
          details: { v: 3 },
          last_reported_at: expect.any(Date),
          inserted_at: before.inserted_at,
        }),
      );
      expect(await rows(old)).toEqual([]);
      const res = await t
        .http()
        .get(`${base(org)}/${identifier}`)
        .set(owner.auth)
        .expect(200);
      expect(res.body.data).toEqual(
        expect.objectContaining({ source: 'device_reported', owner: deviceOwner(gadget.identifier) }),
      );
      expect(warn).not.toHaveBeenCalled();
    });

    it('a key held by a member is refused and logged; nothing changes', async () => {
      const { owner, org } = await setup();
      const grace = await t.fixtures.user();
      await t.fixtures.addMember(org, grace, 'view');
      const gadget = await device(org);
      const identifier = await registered(owner, org, { user_email: grace.user.email });
      const before = await rows(identifier);
      const result = await iroh.reportDeviceIdentities(gadget, [{ identifier, details: { secret: 'nope' } }]);
      expect(result).toEqual([
        { identifier, instance: 'default', outcome: 'refused', reason: 'held_by_member' },
      ]);
      expect(await rows(identifier)).toEqual(before);
      expect(warn).toHaveBeenCalledTimes(1);
      const [fields, message] = warn.mock.calls[0];
      expect(message).toBe('iroh endpoint report refused');
      expect(fields).toEqual(
        expect.objectContaining({
          device: gadget.identifier,
          endpointId: identifier,
          reason: 'held_by_member',
        }),
      );
      expect(JSON.stringify(warn.mock.calls)).not.toContain('nope');
    });

    it("another device's key is refused", async () => {
      const { org } = await setup();
      const [first, second] = [await device(org), await device(org)];
      const identifier = newKey();
      await iroh.reportDeviceIdentities(first, [{ identifier }]);
      const before = await rows(identifier);
      expect(await iroh.reportDeviceIdentities(second, [{ identifier }])).toEqual([
        { identifier, instance: 'default', outcome: 'refused', reason: 'held_by_another_device' },
      ]);
      expect(await rows(identifier)).toEqual(before);
      expect(warn).toHaveBeenCalledTimes(1);
    });

    it("another organization's unowned key is refused and stays there", async () => {
      const a = await setup();
      const b = await setup();
      const gadget = await device(a.org);
      const identifier = await registered(b.owner, b.org);
      const before = await rows(identifier);
      expect(await iroh.reportDeviceIdentities(gadget, [{ identifier }])).toEqual([
        { identifier, instance: 'default', outcome: 'refused', reason: 'held_by_another_organization' },
      ]);
      expect(await rows(identifier)).toEqual(before);
      expect(before[0].org_id).toBe(await orgId(b.org));
      await t
        .http()
        .get(`${base(a.org)}/${identifier}`)
        .set(a.owner.auth)
        .expect(404);
    });

    it("a device in another organization cannot take a device's key", async () => {
      const a = await setup();
      const b = await setup();
      const identifier = newKey();
      await iroh.reportDeviceIdentities(await device(a.org), [{ identifier }]);
      expect(await iroh.reportDeviceIdentities(await device(b.org), [{ identifier }])).toEqual([
        { identifier, instance: 'default', outcome: 'refused', reason: 'held_by_another_organization' },
      ]);
    });

    it('its own key reported under another instance is refused', async () => {
      const { org } = await setup();
      const gadget = await device(org);
      const identifier = newKey();
      await iroh.reportDeviceIdentities(gadget, [{ identifier }]);
      const before = await rows(identifier);
      expect(await iroh.reportDeviceIdentities(gadget, [{ identifier, instance: 'console' }])).toEqual([
        { identifier, instance: 'console', outcome: 'refused', reason: 'held_under_another_instance' },
      ]);
      expect(await rows(identifier)).toEqual(before);
    });

    it('invalid entries are skipped; the valid ones in the same report are applied', async () => {
      const { org } = await setup();
      const gadget = await device(org);
      const good = newKey();
      const result = await iroh.reportDeviceIdentities(gadget, [
        { identifier: 'abc123' },
        { identifier: 'a'.repeat(63) },
        { identifier: 42 as unknown as string },
        null as unknown as { identifier: string },
        { identifier: newKey(), instance: 'i'.repeat(65) },
        { identifier: newKey(), instance: 5 as unknown as string },
        { identifier: newKey(), details: [1] },
        { identifier: newKey(), details: { blob: 'x'.repeat(5000) } },
        { identifier: good, instance: '  ' },
      ]);
      expect(result.map((r) => [r.outcome, r.reason])).toEqual([
        ['skipped', 'invalid_identifier'],
        ['skipped', 'invalid_identifier'],
        ['skipped', 'invalid_identifier'],
        ['skipped', 'invalid_identifier'],
        ['skipped', 'invalid_instance'],
        ['skipped', 'invalid_instance'],
        ['skipped', 'invalid_details'],
        ['skipped', 'invalid_details'],
        ['created', undefined],
      ]);
      const [{ count }] = await t.db.query(
        'SELECT count(*)::int AS count FROM iroh_endpoints WHERE device_id = $1',
        [gadget.id],
      );
      expect(count).toBe(1);
      expect(await rows(good)).toEqual([expect.objectContaining({ instance: 'default' })]);
    });

    it('processes at most 10 entries of one report', async () => {
      const { org } = await setup();
      const gadget = await device(org);
      const result = await iroh.reportDeviceIdentities(
        gadget,
        Array.from({ length: 11 }, (_, i) => ({ identifier: newKey(), instance: `i${i}` })),
      );
      expect(result.filter((r) => r.outcome === 'created')).toHaveLength(10);
      expect(result[10]).toEqual(
        expect.objectContaining({ outcome: 'skipped', reason: 'too_many_identities' }),
      );
    });

    it('concurrent reports of one fresh key by two devices: one holds it, the other is refused', async () => {
      const { org } = await setup();
      const [first, second] = [await device(org), await device(org)];
      const identifier = newKey();
      const results = (
        await Promise.all(
          Array.from({ length: 8 }, (_, i) =>
            iroh.reportDeviceIdentities(i % 2 === 0 ? first : second, [{ identifier }]),
          ),
        )
      ).map(([result]) => result.outcome);
      const held = await rows(identifier);
      expect(held).toHaveLength(1);
      expect(results.filter((o) => o === 'created')).toHaveLength(1);
      expect(results.filter((o) => o === 'refused')).toHaveLength(4);
      expect(results.filter((o) => o === 'updated')).toHaveLength(3);
      expect([first.id, second.id]).toContain(held[0].device_id);
    });

    it('a claim racing an operator delete never fails', async () => {
      const { owner, org } = await setup();
      const gadget = await device(org);
      const identifier = await registered(owner, org);
      const [report, del] = await Promise.all([
        iroh.reportDeviceIdentities(gadget, [{ identifier }]),
        t
          .http()
          .delete(`${base(org)}/${identifier}`)
          .set(owner.auth),
      ]);
      expect(['claimed', 'created']).toContain(report[0].outcome);
      expect(del.status).toBe(204);
    });
  });

  it('documents the four operations under "Iroh Endpoints"', async () => {
    const res = await t.http().get('/api/openapi.json').expect(200);
    const paths = res.body.paths;
    const collection = paths['/api/orgs/{org_name}/iroh_endpoints'];
    const item = paths['/api/orgs/{org_name}/iroh_endpoints/{identifier}'];
    for (const op of [collection.post, collection.get, item.get, item.delete]) {
      expect(op.tags).toEqual(['Iroh Endpoints']);
    }
    expect(Object.keys(collection.post.responses)).toEqual(
      expect.arrayContaining(['201', '401', '403', '404', '409', '422']),
    );
    expect(collection.post.responses['201'].headers.Location).toBeDefined();
    expect(collection.get.parameters.map((p: { name: string }) => p.name)).toEqual(
      expect.arrayContaining(['org_name', 'search', 'owner', 'pagination[page]', 'pagination[page_size]']),
    );
    expect(Object.keys(item.delete.responses)).toEqual(expect.arrayContaining(['204', '404']));
  });
});
