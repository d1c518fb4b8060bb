import { METHOD_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { RequestMethod } from '@nestjs/common';
import { FEATURE_MODULES } from '../src/app.module';
import { PUBLIC_ROUTE, ROUTE_NAME } from '../src/common/auth/decorators';
import { ROUTE_POLICIES } from '../src/common/auth/route-policies';
import { HealthModule } from '../src/health/health.module';
import { createTestApp, type TestApp } from './support/test-app';

interface RouteInfo {
  controller: string;
  handler: string;
  method: string;
  isPublic: boolean;
  routeName: string | undefined;
  /** Left out of the OpenAPI document on purpose (`@ApiExcludeController`/`@ApiExcludeEndpoint`). */
  undocumented: boolean;
}

/** Every handler of every controller the app serves, with its auth metadata. */
function allRoutes(): RouteInfo[] {
  const routes: RouteInfo[] = [];
  for (const module of [...FEATURE_MODULES, HealthModule]) {
    const controllers = (Reflect.getMetadata('controllers', module) ?? []) as Function[];
    for (const controller of controllers) {
      const proto = controller.prototype as Record<string, Function>;
      for (const key of Object.getOwnPropertyNames(proto)) {
        const handler = proto[key];
        if (key === 'constructor' || typeof handler !== 'function') continue;
        if (Reflect.getMetadata(PATH_METADATA, handler) === undefined) continue;
        const method = RequestMethod[Reflect.getMetadata(METHOD_METADATA, handler) as number];
        routes.push({
          controller: controller.name,
          handler: key,
          method,
          isPublic: Boolean(
            Reflect.getMetadata(PUBLIC_ROUTE, handler) ?? Reflect.getMetadata(PUBLIC_ROUTE, controller),
          ),
          routeName: (Reflect.getMetadata(ROUTE_NAME, handler) ??
            Reflect.getMetadata(ROUTE_NAME, controller)) as string | undefined,
          undocumented: Boolean(
            (Reflect.getMetadata('swagger/apiExcludeEndpoint', handler) as { disable?: boolean } | undefined)
              ?.disable ||
            (Reflect.getMetadata('swagger/apiExcludeController', controller) as boolean[] | undefined)?.[0],
          ),
        });
      }
    }
  }
  return routes;
}

describe('route table', () => {
  const routes = allRoutes();

  it('finds the routes', () => {
    expect(routes.length).toBeGreaterThan(10);
  });

  it.each(routes.map((r) => [`${r.controller}.${r.handler}`, r] as const))(
    '%s is either @Public() or names a policy in ROUTE_POLICIES',
    (_name, route) => {
      expect(route.isPublic || (route.routeName !== undefined && route.routeName in ROUTE_POLICIES)).toBe(
        true,
      );
      expect(route.isPublic && route.routeName !== undefined).toBe(false);
    },
  );

  it('public routes are only the ones meant to be', () => {
    const publicRoutes = routes.filter((r) => r.isPublic).map((r) => `${r.controller}.${r.handler}`);
    expect(publicRoutes.sort()).toEqual([
      // Devices download archives from signed, expiring links (the link is the credential).
      'ArchiveDownloadController.download',
      'AuthController.login',
      'AuthController.loginDeprecated',
      // A browser's own session: sign-in takes credentials; reading and ending it, the session cookie (checked
      // by the service, with the CSRF token for the DELETE).
      'BrowserSessionsController.show',
      'BrowserSessionsController.signIn',
      'BrowserSessionsController.signOut',
      // NervesHub's browser sign-in for its CLI: the session token (unguessable) is the credential.
      'CliSessionPageController.show',
      'CliSessionPageController.submit',
      'CliSessionsController.check',
      'CliSessionsController.start',
      // Devices download firmware (and fwup deltas) from signed, expiring links (the link is the credential).
      'FirmwareDownloadController.download',
      'FirmwareDownloadController.downloadDelta',
      'HealthController.alive',
      'HealthController.ready',
      // An invitation's link (unguessable, expiring, single use) is the credential.
      'InvitationPageController.accept',
      'InvitationPageController.show',
      'MetricsController.scrape',
      // Single sign-on: whether it is on; the browser's start and the provider's callback (the `state` it was
      // started with, in the browser's cookie and checked once, and the provider's signed answer are the credential).
      'SingleSignOnController.status',
      'SingleSignOnPageController.callback',
      'SingleSignOnPageController.start',
    ]);
  });

  describe('OpenAPI', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await createTestApp();
    });
    afterAll(() => t.close());

    it('documents every operation with a summary, a tag and its error responses', async () => {
      const res = await t.http().get('/api/openapi.json').expect(200);
      const doc = res.body as {
        paths: Record<
          string,
          Record<
            string,
            {
              summary?: string;
              tags?: string[];
              responses: Record<string, unknown>;
              security?: Record<string, unknown>[];
            }
          >
        >;
      };
      let operations = 0;
      for (const [path, item] of Object.entries(doc.paths)) {
        for (const [method, op] of Object.entries(item)) {
          operations++;
          const where = `${method.toUpperCase()} ${path}`;
          expect({ where, summary: Boolean(op.summary) }).toEqual({ where, summary: true });
          expect({ where, tags: op.tags?.length }).toEqual({ where, tags: 1 });
          expect({ where, has503: '503' in op.responses }).toEqual({ where, has503: true });
          // Every route behind the AuthGuard (a token or the session cookie) can answer these three; the browser
          // session's own routes, secured by the cookie alone, document what they answer.
          if (op.security?.some((scheme) => 'bearer_auth' in scheme)) {
            for (const status of ['401', '403', '404']) {
              expect({ where, status, documented: status in op.responses }).toEqual({
                where,
                status,
                documented: true,
              });
            }
          }
        }
      }
      expect(operations).toBe(routes.filter((r) => !r.undocumented).length);
    });
  });
});
