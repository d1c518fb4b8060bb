import { Logger, RequestMethod, type Type } from '@nestjs/common';
import {
  HTTP_CODE_METADATA,
  INTERCEPTORS_METADATA,
  METHOD_METADATA,
  MODULE_METADATA,
} from '@nestjs/common/constants';
import { buildDocumentWithoutDatabase } from '../scripts/openapi';
import { FEATURE_MODULES } from '../src/app.module';
import { DOCUMENTED_ANSWER, type DocumentedAnswer } from '../src/common/openapi/api-docs';
import { CreatedInterceptor } from '../src/common/http/created';
import { DEVICE_FILTERS, DEVICE_SORTS } from '../src/devices/device-list.query';
import { HealthModule } from '../src/health/health.module';
import { createTestApp, type TestApp } from './support/test-app';

/** `npm run lint:openapi` lints a document built without a database: it must be the one the server serves. */
describe('the OpenAPI document built without a database', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('equals /api/openapi.json', async () => {
    const served = await t.http().get('/api/openapi.json').expect(200);
    expect(await buildDocumentWithoutDatabase()).toEqual(served.body);
  });

  it('declares a server, a license and described tags; only public operations go without security', async () => {
    const doc = await buildDocumentWithoutDatabase();
    expect(doc.servers).toEqual([{ url: '/', description: 'This fleethub server' }]);
    expect(doc.info.license?.name).toBe('Apache-2.0');
    for (const tag of doc.tags ?? [])
      expect({ tag: tag.name, described: Boolean(tag.description) }).toEqual({
        tag: tag.name,
        described: true,
      });
    expect(doc.paths['/healthz'].get?.security).toBeUndefined();
    expect(doc.paths['/api/users/me'].get?.security).toEqual([{ bearer_auth: [] }]);
  });
});

describe('the device list query in the OpenAPI document', () => {
  it('documents every filter and sort the server reads', async () => {
    const doc = await buildDocumentWithoutDatabase();
    const list = doc.paths['/api/orgs/{org_name}/products/{product_name}/devices'].get!;
    const names = (list.parameters as { name: string; schema?: { enum?: string[] } }[]).map((p) => p.name);
    expect(names).toEqual(expect.arrayContaining(DEVICE_FILTERS.map((filter) => `filters[${filter}]`)));
    const sort = (list.parameters as { name: string; schema?: { enum?: string[] } }[]).find(
      (p) => p.name === 'sort',
    );
    expect(sort?.schema?.enum).toEqual([...DEVICE_SORTS]);
  });
});

describe('the schemas of the OpenAPI document', () => {
  it('are named once each: two DTO classes of one name would make one of them describe the other', async () => {
    const warn = jest.spyOn(Logger, 'warn').mockImplementation(() => undefined);
    try {
      const doc = await buildDocumentWithoutDatabase();
      const duplicates = warn.mock.calls
        .map(([message]) => String(message))
        .filter((m) => m.includes('Duplicate DTO'));
      expect(duplicates).toEqual([]);
      const schemas = doc.components?.schemas ?? {};
      expect(
        Object.keys((schemas.DeviceDeploymentGroupView as { properties: object }).properties).sort(),
      ).toEqual(['firmware_uuid', 'firmware_version', 'is_active', 'name']);
      expect((schemas.DeploymentGroupView as { properties: object }).properties).toHaveProperty(
        'concurrent_updates',
      );
    } finally {
      warn.mockRestore();
    }
  });
});

/** ApiOperationDoc only documents: each handler's own decorators decide its status and `Location`, and must agree. */
describe('what the document says each operation answers', () => {
  /** @nestjs/swagger's metadata key of @ApiExcludeController() (its constants are not exported). */
  const API_EXCLUDE_CONTROLLER = 'swagger/apiExcludeController';
  const NEST_DEFAULT_STATUS: Partial<Record<RequestMethod, number>> = { [RequestMethod.POST]: 201 };

  function handlers(): { name: string; handler: object }[] {
    const seen = new Set<unknown>();
    const found: { name: string; handler: object }[] = [];
    const visit = (module: unknown) => {
      if (!module || seen.has(module)) return;
      seen.add(module);
      for (const controller of (Reflect.getMetadata(MODULE_METADATA.CONTROLLERS, module) ??
        []) as Type<unknown>[]) {
        // Served outside the API document (GET /metrics): nothing to agree with.
        if (Reflect.getMetadata(API_EXCLUDE_CONTROLLER, controller)) continue;
        const prototype = controller.prototype as Record<string, unknown>;
        for (const key of Object.getOwnPropertyNames(prototype)) {
          const handler = prototype[key];
          if (key === 'constructor' || typeof handler !== 'function') continue;
          if (Reflect.getMetadata(METHOD_METADATA, handler) === undefined) continue;
          found.push({ name: `${controller.name}.${key}`, handler });
        }
      }
      for (const imported of (Reflect.getMetadata(MODULE_METADATA.IMPORTS, module) ?? []) as unknown[])
        visit(imported);
    };
    [...FEATURE_MODULES, HealthModule].forEach(visit);
    return found;
  }

  it('is what the handlers answer: the success status and Location', () => {
    const routes = handlers();
    expect(routes.length).toBeGreaterThan(50);
    for (const { name, handler } of routes) {
      const documented = Reflect.getMetadata(DOCUMENTED_ANSWER, handler) as DocumentedAnswer | undefined;
      const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod;
      const status =
        (Reflect.getMetadata(HTTP_CODE_METADATA, handler) as number | undefined) ??
        NEST_DEFAULT_STATUS[method] ??
        200;
      const interceptors = (Reflect.getMetadata(INTERCEPTORS_METADATA, handler) ?? []) as unknown[];
      const answered = { status, location: interceptors.includes(CreatedInterceptor) };
      expect({ name, ...answered }).toEqual({ name, ...(documented ?? { status: 'undocumented' }) });
    }
  });
});
