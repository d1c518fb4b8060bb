import { buildDocumentWithoutDatabase } from '../scripts/openapi';
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
