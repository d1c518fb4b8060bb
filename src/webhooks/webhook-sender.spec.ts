import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseCidr } from '../config/config';
import { AddressPolicy } from './address-policy';
import { RESPONSE_EXCERPT_BYTES, WebhookSender } from './webhook-sender';

/** A server on 127.0.0.1 answering with `handler`; every request it got is counted by path. */
async function server(handler: (req: IncomingMessage, res: ServerResponse) => void) {
  const hits: string[] = [];
  const s: Server = createServer((req, res) => {
    hits.push(req.url ?? '');
    handler(req, res);
  });
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as AddressInfo).port;
  return {
    url: (path: string) => `http://127.0.0.1:${port}${path}`,
    hits,
    close: () => {
      s.closeAllConnections();
      return new Promise<void>((resolve) => s.close(() => resolve()));
    },
  };
}

describe('WebhookSender', () => {
  const loopback = new AddressPolicy([parseCidr('127.0.0.1/32')!]);
  const noNames = { resolve: () => Promise.resolve([]) };
  let sender: WebhookSender;
  beforeEach(() => {
    sender = new WebhookSender(loopback, noNames, 500);
  });
  afterEach(() => sender.close());

  it('posts the body with the headers and reads the status and the start of the answer', async () => {
    let got: { headers: IncomingMessage['headers']; body: string } | null = null;
    const s = await server((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        got = { headers: req.headers, body };
        res.writeHead(200).end('x'.repeat(5000));
      });
    });
    try {
      const result = await sender.send(s.url('/hook'), { 'webhook-id': 'evt_1' }, '{"a":1}');
      expect(result).toEqual({
        status: 200,
        error: null,
        latencyMs: expect.any(Number),
        excerpt: 'x'.repeat(RESPONSE_EXCERPT_BYTES),
      });
      expect(got!.body).toBe('{"a":1}');
      expect(got!.headers).toMatchObject({ 'webhook-id': 'evt_1', 'content-type': 'application/json' });
    } finally {
      await s.close();
    }
  });

  it('does not follow redirects', async () => {
    const s = await server((req, res) => {
      if (req.url === '/hook') res.writeHead(302, { Location: '/elsewhere' }).end();
      else res.writeHead(200).end();
    });
    try {
      const result = await sender.send(s.url('/hook'), {}, '{}');
      expect(result.status).toBe(302);
      expect(s.hits).toEqual(['/hook']);
    } finally {
      await s.close();
    }
  });

  it('gives up an attempt at its deadline', async () => {
    const s = await server(() => undefined); // never answers
    try {
      const result = await sender.send(s.url('/hook'), {}, '{}');
      expect(result).toMatchObject({ status: null, error: 'timeout after 500 ms', excerpt: null });
      expect(result.latencyMs).toBeGreaterThanOrEqual(450);
    } finally {
      await s.close();
    }
  });

  it('refuses an internal literal address without connecting, and a name that resolves to nothing', async () => {
    const strict = new WebhookSender(new AddressPolicy([]), noNames, 500);
    try {
      expect(await strict.send('http://127.0.0.1:9/hook', {}, '{}')).toEqual({
        status: null,
        error: 'address refused: 127.0.0.1 is loopback',
        latencyMs: 0,
        excerpt: null,
      });
      expect(await strict.send('http://[::1]:9/hook', {}, '{}')).toMatchObject({
        error: 'address refused: ::1 is loopback',
      });
      expect(await strict.send('https://hooks.invalid/hook', {}, '{}')).toMatchObject({
        status: null,
        error: 'address refused: hooks.invalid: no address',
      });
    } finally {
      strict.close();
    }
  });
});
