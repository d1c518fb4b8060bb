/**
 * The webhook benchmark's receivers (bench/webhooks.ts), a child process of their own so that their work (parsing,
 * verifying every signature) does not compete with the harness's event loop (the producer, the API load).
 *
 * `--healthy=N` servers on 127.0.0.1 answer 204 to each delivery after verifying its Standard Webhooks signature
 * with the secret the harness sends (src/webhooks/webhook-signature.ts: HMAC-SHA256 of `id.timestamp.body`, every
 * `v1,` signature of the header tried), and record receive time − the event's `timestamp` (when the change was
 * committed's transaction started: `webhook_events.occurred_at`); one more server accepts connections and reads
 * requests but never answers. IPC: `ready` {ports, never_answering_port} → `secrets` → `count` / `collect` (the
 * latencies since the last collect, summarised, then forgotten; then only events from `since` on).
 */
import { timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { signature } from '../src/webhooks/webhook-signature';

export interface EndpointStats {
  received: number;
  /** Distinct event ids (a redelivery of an event already received is counted in `received` only). */
  unique: number;
  bad_signatures: number;
  /** Deliveries of events from before the phase (a backlog of the one before): not in `unique` nor the latencies. */
  earlier: number;
  latency_ms: { p50: number; p99: number; max: number } | null;
}

export type ReceiverMessage =
  | { type: 'ready'; ports: number[]; never_answering_port: number }
  | { type: 'counts'; received: number[]; never_answering_requests: number }
  | { type: 'stats'; endpoints: EndpointStats[]; never_answering_requests: number };

export type ReceiverCommand =
  | { type: 'secrets'; secrets: string[] }
  | { type: 'count' }
  /** Forget everything; from now on count only events that occurred at or after `since` (ms since the epoch). */
  | { type: 'collect'; since: number }
  | { type: 'stop' };

interface Endpoint {
  secret: string | null;
  received: number;
  badSignatures: number;
  earlier: number;
  seen: Set<string>;
  latencies: number[];
}

const send = (message: ReceiverMessage) => process.send?.(message);

function verified(secret: string, headers: http.IncomingHttpHeaders, body: string): boolean {
  const id = headers['webhook-id'];
  const timestamp = headers['webhook-timestamp'];
  const header = headers['webhook-signature'];
  if (typeof id !== 'string' || typeof timestamp !== 'string' || typeof header !== 'string') return false;
  const expected = Buffer.from(signature(secret, id, Number(timestamp), body));
  return header.split(' ').some((candidate) => {
    const given = Buffer.from(candidate);
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
}

function summarise(latencies: number[]): EndpointStats['latency_ms'] {
  if (latencies.length === 0) return null;
  const sorted = [...latencies].sort((a, b) => a - b);
  const at = (p: number) => sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)];
  return { p50: at(50), p99: at(99), max: sorted[sorted.length - 1] };
}

function listen(server: http.Server): Promise<number> {
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)),
  );
}

async function main(): Promise<void> {
  const healthy = Number(/--healthy=(\d+)/.exec(process.argv.join(' '))?.[1] ?? 10);
  const endpoints: Endpoint[] = Array.from({ length: healthy }, () => ({
    secret: null,
    received: 0,
    badSignatures: 0,
    earlier: 0,
    seen: new Set<string>(),
    latencies: [],
  }));
  const servers = endpoints.map((endpoint) =>
    http.createServer((req, res) => {
      const parts: Buffer[] = [];
      req.on('data', (chunk: Buffer) => parts.push(chunk));
      req.on('end', () => {
        const receivedAt = Date.now();
        const body = Buffer.concat(parts).toString('utf8');
        endpoint.received += 1;
        if (endpoint.secret === null || !verified(endpoint.secret, req.headers, body)) {
          endpoint.badSignatures += 1;
          res.writeHead(401).end();
          return;
        }
        const event = JSON.parse(body) as { id: string; timestamp: string };
        const occurredAt = Date.parse(event.timestamp);
        if (occurredAt < since) endpoint.earlier += 1;
        else if (!endpoint.seen.has(event.id)) {
          endpoint.seen.add(event.id);
          endpoint.latencies.push(receivedAt - occurredAt);
        }
        res.writeHead(204).end();
      });
    }),
  );
  let neverAnsweringRequests = 0;
  let since = 0;
  // Reads each request and never answers: the dispatcher's attempts to it end by their timeout.
  const neverAnswering = http.createServer((req) => {
    neverAnsweringRequests += 1;
    req.resume();
  });
  neverAnswering.requestTimeout = 0;
  neverAnswering.headersTimeout = 0;
  neverAnswering.keepAliveTimeout = 0;
  const ports = await Promise.all(servers.map(listen));
  const neverAnsweringPort = await listen(neverAnswering);
  process.on('message', (command: ReceiverCommand) => {
    if (command.type === 'secrets') command.secrets.forEach((s, i) => (endpoints[i].secret = s));
    else if (command.type === 'count')
      send({
        type: 'counts',
        received: endpoints.map((e) => e.seen.size),
        never_answering_requests: neverAnsweringRequests,
      });
    else if (command.type === 'collect') {
      send({
        type: 'stats',
        endpoints: endpoints.map((e) => ({
          received: e.received,
          unique: e.seen.size,
          bad_signatures: e.badSignatures,
          earlier: e.earlier,
          latency_ms: summarise(e.latencies),
        })),
        never_answering_requests: neverAnsweringRequests,
      });
      for (const e of endpoints) {
        e.received = 0;
        e.badSignatures = 0;
        e.earlier = 0;
        e.seen.clear();
        e.latencies = [];
      }
      neverAnsweringRequests = 0;
      since = command.since;
    } else if (command.type === 'stop') {
      for (const server of [...servers, neverAnswering]) {
        server.closeAllConnections();
        server.close();
      }
      process.disconnect();
    }
  });
  send({ type: 'ready', ports, never_answering_port: neverAnsweringPort });
}

void main();
