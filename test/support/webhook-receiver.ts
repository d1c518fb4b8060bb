import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request a receiver got. */
export interface ReceivedWebhook {
  headers: IncomingHttpHeaders;
  body: string;
  json: { id: string; type: string; subject: string; data: Record<string, unknown>; [key: string]: unknown };
  at: number;
}

/** How a receiver answers one request: a status, an optional body, an optional delay before answering. */
export type ReceiverAnswer = { status: number; body?: string; delayMs?: number };

/**
 * A webhook endpoint for tests: a real HTTP server on 127.0.0.1 (only), recording every request. `answer` decides
 * each response (default 200); the nth request of an event id is told by `attemptsOf`.
 */
export class WebhookReceiver {
  readonly received: ReceivedWebhook[] = [];
  answer: (request: ReceivedWebhook, index: number) => ReceiverAnswer = () => ({ status: 200 });
  private server: Server | null = null;

  async start(): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        let json: ReceivedWebhook['json'];
        try {
          json = JSON.parse(body) as ReceivedWebhook['json'];
        } catch {
          json = { id: '', type: '', subject: '', data: {} };
        }
        const request: ReceivedWebhook = { headers: req.headers, body, json, at: Date.now() };
        const index = this.received.length;
        this.received.push(request);
        const answer = this.answer(request, index);
        const reply = () => {
          res.statusCode = answer.status;
          res.end(answer.body ?? '');
        };
        if (answer.delayMs) setTimeout(reply, answer.delayMs).unref();
        else reply();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    return this;
  }

  get port(): number {
    return (this.server!.address() as AddressInfo).port;
  }

  /** The receiver's URL (`http://127.0.0.1:<port><path>`). */
  url(path = '/hook'): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  /** The events received of a type (every attempt counts). */
  ofType(type: string): ReceivedWebhook[] {
    return this.received.filter((r) => r.json.type === type);
  }

  /** Requests that carried this event id. */
  attemptsOf(eventId: string): ReceivedWebhook[] {
    return this.received.filter((r) => r.headers['webhook-id'] === eventId);
  }

  async close(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
