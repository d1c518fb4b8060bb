import { get, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Express } from 'express';
import { ExpressHttpAdapter } from './express-adapter';

describe('ExpressHttpAdapter', () => {
  let server: Server;
  let app: Express;

  beforeEach(async () => {
    const adapter = new ExpressHttpAdapter();
    adapter.initHttpServer({});
    app = adapter.getInstance<Express>();
    app.get('/probe', (_req, res) => {
      res.json({ ok: true });
    });
    server = adapter.getHttpServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });

  afterEach(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  const probe = () =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const { port } = server.address() as AddressInfo;
      get(`http://127.0.0.1:${port}/probe`, (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      }).on('error', reject);
    });

  it("creates requests and responses with Express's prototypes before Express sees them", async () => {
    const seen: { request: boolean; response: boolean }[] = [];
    server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
      seen.push({
        request: Object.getPrototypeOf(req) === app.request,
        response: Object.getPrototypeOf(res) === app.response,
      });
    });
    expect(await probe()).toEqual({ status: 200, body: '{"ok":true}' });
    expect(seen).toEqual([{ request: true, response: true }]);
  });
});
