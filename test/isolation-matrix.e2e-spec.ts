import { RequestMethod } from '@nestjs/common';
import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { ModulesContainer } from '@nestjs/core';
import { randomBytes, randomUUID } from 'node:crypto';
import { BrowserSessionsRepository } from '../src/browser-sessions/browser-sessions.repository';
import { PUBLIC_ROUTE, ROUTE_NAME } from '../src/common/auth/decorators';
import { EVENT_STREAM_ROUTE } from '../src/common/http/event-stream-response';
import { ROUTE_POLICIES, type RouteName, type RoutePolicy } from '../src/common/auth/route-policies';
import { type Role, roleSatisfies } from '../src/common/auth/roles';
import type { TestApp } from './support/test-app';
import { orgScenario } from './support/scenario';
import { type TestUser, unique } from './support/fixtures';
import type { FwupKeyPair } from './support/fw-builder';
import { FORBIDDEN, NOT_FOUND, UNAUTHORIZED } from './support/contract-bodies';

/**
 * Every route the app serves × every kind of caller → the contract's answer (sections 3 and 4). The routes
 * come from the running app's modules, so a new route is covered without touching this file; a route whose
 * path parameters this file cannot fill fails loudly.
 */

interface AppRoute {
  id: string;
  method: string;
  path: string;
  name: RouteName;
  policy: RoutePolicy;
  /** Answers a stream that stays open (Server-Sent Events): read until its first bytes only. */
  stream: boolean;
}

/**
 * A stream route's answer as supertest parses it: an open stream (200) is cut after its first bytes (its body is
 * `{}`); an error's JSON body is read whole.
 */
function streamHead(response: unknown, done: (err: Error | null, body: unknown) => void): void {
  const res = response as NodeJS.ReadableStream & { statusCode?: number; destroy(): void };
  if (res.statusCode === 200) {
    res.once('data', () => {
      res.destroy();
      done(null, {});
    });
    return;
  }
  let text = '';
  res.setEncoding('utf8');
  res.on('data', (chunk: string) => (text += chunk));
  res.on('end', () => done(null, JSON.parse(text) as unknown));
}

function joinPath(...parts: string[]): string {
  return (
    '/' +
    parts
      .map((p) => p.replace(/^\/+|\/+$/g, ''))
      .filter((p) => p !== '')
      .join('/')
  );
}

function appRoutes(t: TestApp): { routes: AppRoute[]; unnamed: string[] } {
  const routes: AppRoute[] = [];
  const unnamed: string[] = [];
  for (const module of t.app.get(ModulesContainer).values()) {
    for (const wrapper of module.controllers.values()) {
      const controller = wrapper.metatype as (new (...args: unknown[]) => unknown) | null;
      if (!controller) continue;
      const base = Reflect.getMetadata(PATH_METADATA, controller) as string | string[] | undefined;
      const proto = controller.prototype as Record<string, unknown>;
      for (const key of Object.getOwnPropertyNames(proto)) {
        const handler = proto[key];
        if (key === 'constructor' || typeof handler !== 'function') continue;
        const sub = Reflect.getMetadata(PATH_METADATA, handler) as string | string[] | undefined;
        if (sub === undefined) continue;
        const method = RequestMethod[Reflect.getMetadata(METHOD_METADATA, handler) as number];
        const isPublic = Boolean(
          Reflect.getMetadata(PUBLIC_ROUTE, handler) ?? Reflect.getMetadata(PUBLIC_ROUTE, controller),
        );
        const name = (Reflect.getMetadata(ROUTE_NAME, handler) ??
          Reflect.getMetadata(ROUTE_NAME, controller)) as RouteName | undefined;
        for (const b of [base ?? ''].flat()) {
          for (const s of [sub].flat()) {
            const path = joinPath(b, s);
            const id = `${method} ${path} (${controller.name}.${key})`;
            if (isPublic) continue;
            if (!name || !(name in ROUTE_POLICIES)) {
              unnamed.push(id);
              continue;
            }
            const stream = Reflect.getMetadata(EVENT_STREAM_ROUTE, handler) === true;
            routes.push({ id, method, path, name, policy: ROUTE_POLICIES[name], stream });
          }
        }
      }
    }
  }
  return { routes, unnamed };
}

interface Fixture {
  product: string;
  device: string;
  script: string;
  key: string;
  iroh: string;
  member: string;
  /** An email with a pending invitation to the organization. */
  invited: string;
  /** A device import job of `product`. */
  importJob: string;
  /** A deployment group of `product` (made only for the routes that name one). */
  group: string;
  /** A webhook of the organization (made only for the routes that name one: at most 20 per organization). */
  webhook: string;
  /** A spare personal access token of each signed-in caller (`/api/users/me/tokens/:id` is the caller's own). */
  tokens: Record<'outsider' | Role, string>;
  /** A browser session of each signed-in caller (`/api/users/me/sessions/:id` is the caller's own). */
  sessions: Record<'outsider' | Role, string>;
}

type Caller = 'no token' | 'expired token' | 'outsider' | 'view' | 'manage' | 'admin' | 'read token';
const CALLERS: Caller[] = ['no token', 'expired token', 'outsider', 'view', 'manage', 'admin', 'read token'];

/** Path parameters that name something the fixtures do not create; an allowed caller may get a 404 for them. */
const MAY_BE_MISSING = new Set(['uuid', 'key', 'serial']);

describe('isolation matrix: every route × every kind of caller', () => {
  let t: TestApp;
  let org: string;
  let admin: TestUser;
  const members: Partial<Record<Role, TestUser>> = {};
  let outsider: TestUser;
  let readToken: string;
  let expiredToken: string;
  let shared: Fixture;
  const discovered = { routes: [] as AppRoute[], unnamed: [] as string[] };

  let firmwareKey: FwupKeyPair;

  async function fixture(withGroup = false, withWebhook = false): Promise<Fixture> {
    const api = () => t.http();
    const product = unique('product-');
    await api().post(`/api/orgs/${org}/products`).set(admin.auth).send({ name: product }).expect(201);
    const device = unique('device-');
    await api()
      .post(`/api/orgs/${org}/products/${product}/devices`)
      .set(admin.auth)
      .send({ identifier: device })
      .expect(201);
    const script = await api()
      .post(`/api/orgs/${org}/products/${product}/scripts`)
      .set(admin.auth)
      .send({ name: 'script', text: 'IO.puts(1)' })
      .expect(201);
    const key = unique('key-');
    await api()
      .post(`/api/orgs/${org}/keys`)
      .set(admin.auth)
      .send({ name: key, key: randomBytes(32).toString('base64') })
      .expect(201);
    const iroh = randomBytes(32).toString('hex');
    await api()
      .post(`/api/orgs/${org}/iroh_endpoints`)
      .set(admin.auth)
      .send({ identifier: iroh })
      .expect(201);
    const group = 'group';
    if (withGroup) {
      const firmware = await t.fixtures.firmware(admin, org, product, { key: firmwareKey });
      await api()
        .post(`/api/orgs/${org}/products/${product}/deployments`)
        .set(admin.auth)
        .send({ name: group, firmware: firmware.uuid, conditions: {} })
        .expect(201);
    }
    // Its host never resolves in tests (test-app's resolver), so nothing is sent anywhere.
    const webhook = withWebhook
      ? String(
          (
            await api()
              .post(`/api/orgs/${org}/webhooks`)
              .set(admin.auth)
              .send({ url: 'https://hooks.invalid/matrix', event_types: ['*'] })
              .expect(201)
          ).body.data.id,
        )
      : 'none';
    const member = await t.fixtures.user();
    await t.fixtures.addMember(org, member, 'view');
    const importJob = String(
      (
        await api()
          .post(`/api/orgs/${org}/products/${product}/devices/import`)
          .set(admin.auth)
          .send(['not an entry'])
          .expect(201)
      ).body.data.id,
    );
    const invited = `invited-${randomUUID()}@example.com`;
    await api()
      .post(`/api/orgs/${org}/users/invite`)
      .set(admin.auth)
      .send({ email: invited, role: 'view' })
      .expect(204);
    const spareToken = async (user: TestUser): Promise<string> =>
      String((await api().post('/api/users/me/tokens').set(user.auth).send({}).expect(201)).body.data.id);
    const tokens = {
      outsider: await spareToken(outsider),
      view: await spareToken(members.view!),
      manage: await spareToken(members.manage!),
      admin: await spareToken(admin),
    };
    // Straight through the repository: signing in for every fixture would run into the login rate limit.
    const spareSession = async (user: TestUser): Promise<string> =>
      (
        await t.app
          .get(BrowserSessionsRepository)
          .insert(user.user.id, randomBytes(32), 'isolation matrix', '127.0.0.1', {
            idleSec: 3600,
            maxSec: 3600,
          })
      ).id;
    const sessions = {
      outsider: await spareSession(outsider),
      view: await spareSession(members.view!),
      manage: await spareSession(members.manage!),
      admin: await spareSession(admin),
    };
    return {
      product,
      device,
      script: String(script.body.data.id),
      key,
      iroh,
      member: member.user.email,
      invited,
      importJob,
      group,
      webhook,
      tokens,
      sessions,
    };
  }

  function fill(route: AppRoute, fx: Fixture, caller: Caller = 'admin'): string {
    return route.path.replace(/:([A-Za-z_]+)/g, (_, param: string) => {
      switch (param) {
        case 'org_name':
          return org;
        case 'product_name':
          return fx.product;
        case 'identifier':
          return route.path.includes('/iroh_endpoints/') ? fx.iroh : fx.device;
        case 'name_or_id':
          return fx.script;
        case 'id':
          if (route.path.includes('/device_imports/')) return fx.importJob;
          if (route.path.startsWith('/api/users/me/sessions/')) {
            return caller in fx.sessions
              ? fx.sessions[caller as keyof Fixture['sessions']]
              : fx.sessions.admin;
          }
          if (!route.path.startsWith('/api/users/me/tokens/')) return fx.script;
          return caller in fx.tokens ? fx.tokens[caller as keyof Fixture['tokens']] : fx.tokens.admin;
        case 'uuid':
          return randomUUID();
        case 'email':
          return encodeURIComponent(route.path.includes('/invitations/') ? fx.invited : fx.member);
        case 'name':
          return route.path.includes('/deployments/') ? fx.group : fx.key;
        case 'key':
          return 'nhp_missing';
        case 'serial':
          return '5111552077003819958';
        case 'webhook_id':
          return fx.webhook;
        default:
          throw new Error(`${route.id}: no sample value for the path parameter :${param}; add one to fill()`);
      }
    });
  }

  beforeAll(async () => {
    ({ t, admin, org } = await orgScenario({
      env: { FLEETHUB_RATE_LIMIT_API_PER_MIN: '0', FLEETHUB_RATE_LIMIT_AUTH_FAILURES_PER_MIN: '0' },
    }));
    for (const role of ['view', 'manage'] as const) {
      members[role] = await t.fixtures.user();
      await t.fixtures.addMember(org, members[role], role);
    }
    members.admin = admin;
    outsider = await t.fixtures.user();
    await t.fixtures.org(outsider); // a member elsewhere, not here
    readToken = await t.fixtures.token(admin.user, { scope: 'read' });
    expiredToken = await t.fixtures.token(admin.user, { expiresAt: new Date(Date.now() - 60_000) });
    firmwareKey = await t.fixtures.registeredKey(admin, org);
    shared = await fixture(true, true);
    Object.assign(discovered, appRoutes(t));
  });
  afterAll(() => t.close());

  it('finds the routes, and every non-public route names a policy', () => {
    expect(discovered.routes.length).toBeGreaterThan(40);
    expect(discovered.unnamed).toEqual([]);
    for (const route of discovered.routes) expect(() => fill(route, shared)).not.toThrow();
  });

  function authFor(caller: Caller): Record<string, string> {
    switch (caller) {
      case 'no token':
        return {};
      case 'expired token':
        return { Authorization: `Bearer ${expiredToken}` };
      case 'read token':
        return { Authorization: `Bearer ${readToken}` };
      case 'outsider':
        return outsider.auth;
      case 'view':
      case 'manage':
      case 'admin':
        return members[caller]!.auth;
    }
  }

  type Expectation =
    { kind: 'exact'; status: number; body: unknown } | { kind: 'allowed'; mayBeMissing: boolean };

  function expected(route: AppRoute, caller: Caller): Expectation {
    if (caller === 'no token' || caller === 'expired token') {
      return { kind: 'exact', status: 401, body: UNAUTHORIZED };
    }
    const isRead = ['GET', 'HEAD', 'OPTIONS'].includes(route.method);
    if (caller === 'read token' && !isRead) return { kind: 'exact', status: 403, body: FORBIDDEN };
    const mayBeMissing = [...route.path.matchAll(/:([A-Za-z_]+)/g)].some((m) => MAY_BE_MISSING.has(m[1]));
    if (route.policy.scope === 'user') return { kind: 'allowed', mayBeMissing };
    const role: Role | null = caller === 'outsider' ? null : caller === 'read token' ? 'admin' : caller;
    if (role === null) return { kind: 'exact', status: 404, body: NOT_FOUND };
    if (!roleSatisfies(role, route.policy.role)) return { kind: 'exact', status: 403, body: NOT_FOUND };
    return { kind: 'allowed', mayBeMissing };
  }

  it('answers every route × caller as the contract says', async () => {
    const failures: string[] = [];
    let checked = 0;
    for (const route of discovered.routes) {
      for (const caller of CALLERS) {
        const want = expected(route, caller);
        // A change that is allowed gets its own fixtures, so that it cannot spoil the next case.
        const fx =
          want.kind === 'allowed' && route.method !== 'GET'
            ? await fixture(
                route.path.includes('/deployments/:name'),
                route.path.includes('/webhooks/:webhook_id'),
              )
            : shared;
        const path = fill(route, fx, caller);
        const method = route.method.toLowerCase() as 'get' | 'post' | 'put' | 'patch' | 'delete';
        let req = t.http()[method](path).set(authFor(caller));
        if (method !== 'get' && method !== 'delete') req = req.send({});
        if (route.stream) req = req.buffer(true).parse(streamHead);
        const res = await req;
        checked += 1;
        const label = `${route.id} as ${caller}: got ${res.status} ${JSON.stringify(res.body)}`;
        if (want.kind === 'exact') {
          if (res.status !== want.status || JSON.stringify(res.body) !== JSON.stringify(want.body)) {
            failures.push(`${label}, want ${want.status} ${JSON.stringify(want.body)}`);
          }
        } else {
          // A support script for a device that is not connected: NervesHub's 403 with its own message, the
          // route's answer to a caller it let in (the denial body is the constant text).
          const deviceUnavailable =
            res.status === 403 &&
            JSON.stringify(res.body) ===
              JSON.stringify({ errors: { detail: 'device not available or responding' } });
          const deniedLike =
            res.status === 401 ||
            (res.status === 403 && !deviceUnavailable) ||
            res.status >= 500 ||
            (res.status === 404 && !want.mayBeMissing);
          if (deniedLike) failures.push(`${label}, want an allowed answer`);
        }
      }
    }
    expect(failures).toEqual([]);
    expect(checked).toBe(discovered.routes.length * CALLERS.length);
  }, 240_000); // every route × 7 callers, a fresh fixture per allowed change: minutes on a loaded machine
});
