import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { AddressPolicy } from './address-policy';

/** Resolves a host name to its addresses (the system resolver; tests give their own). */
export interface WebhookResolver {
  resolve(hostname: string): Promise<LookupAddress[]>;
}

export const WEBHOOK_RESOLVER = Symbol('WEBHOOK_RESOLVER');

export const systemResolver: WebhookResolver = {
  resolve: (hostname) =>
    new Promise((resolve, reject) =>
      dnsLookup(hostname, { all: true, verbatim: true }, (err, addresses) =>
        err ? reject(err) : resolve(addresses),
      ),
    ),
};

/** The bytes of a response body kept for the delivery log; the rest is not read. */
export const RESPONSE_EXCERPT_BYTES = 1024;

export interface AttemptResult {
  /** The HTTP status, null when there was no answer. */
  status: number | null;
  /** Why there was no answer (or a refused address), else null. */
  error: string | null;
  latencyMs: number;
  excerpt: string | null;
}

class RefusedAddress extends Error {
  readonly code = 'EWEBHOOKREFUSED';
}

/**
 * A `lookup` for sockets: resolves with `resolver` and keeps only the addresses `policy` allows, so the address
 * a socket connects to is the one that was checked (a name that resolves to an internal address is refused
 * whenever it does, DNS rebinding included).
 */
export function safeLookup(policy: AddressPolicy, resolver: WebhookResolver): LookupFunction {
  return (hostname, options, callback) => {
    resolver
      .resolve(hostname)
      .then((addresses) => {
        const family = typeof options.family === 'number' ? options.family : 0;
        const candidates = addresses.filter((a) => family === 0 || a.family === family);
        const allowed = candidates.filter((a) => policy.refusal(a.address) === null);
        if (allowed.length === 0) {
          const reasons = candidates.map((a) => policy.refusal(a.address)).filter((r) => r !== null);
          const why = reasons.length > 0 ? reasons.join('; ') : 'no address';
          callback(new RefusedAddress(`address refused: ${hostname}: ${why}`), '', 0);
          return;
        }
        if (options.all) callback(null, allowed);
        else callback(null, allowed[0].address, allowed[0].family);
      })
      .catch((err: NodeJS.ErrnoException) => callback(err, '', 0));
  };
}

/** One HTTP POST per attempt: no redirects followed, a deadline, the body's first KiB read and the rest dropped. */
export class WebhookSender {
  private readonly lookup: LookupFunction;
  private readonly httpAgent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  private readonly httpsAgent = new https.Agent({ keepAlive: true, maxSockets: 256 });

  constructor(
    private readonly policy: AddressPolicy,
    resolver: WebhookResolver,
    private readonly timeoutMs: number,
  ) {
    this.lookup = safeLookup(policy, resolver);
  }

  close(): void {
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }

  send(target: string, headers: Record<string, string>, body: string): Promise<AttemptResult> {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const url = new URL(target);
    const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    // A literal address is never looked up: it is judged here, before any socket exists.
    if (isIP(host) !== 0) {
      const refusal = this.policy.refusal(host);
      if (refusal !== null)
        return Promise.resolve({
          status: null,
          error: `address refused: ${refusal}`,
          latencyMs: 0,
          excerpt: null,
        });
    }
    const secure = url.protocol === 'https:';
    return new Promise((resolve) => {
      let settled = false;
      const finish = (result: Omit<AttemptResult, 'latencyMs'>) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve({ ...result, latencyMs: elapsed() });
      };
      const options: http.RequestOptions = {
        method: 'POST',
        agent: secure ? this.httpsAgent : this.httpAgent,
        lookup: this.lookup,
        headers: {
          ...headers,
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
          'user-agent': 'fleethub-webhooks/1',
        },
      };
      const onResponse = (response: http.IncomingMessage) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const done = () => {
          const excerpt = Buffer.concat(chunks).subarray(0, RESPONSE_EXCERPT_BYTES).toString('utf8');
          finish({
            status: response.statusCode ?? null,
            error: null,
            excerpt: excerpt === '' ? null : excerpt,
          });
        };
        response.on('data', (chunk: Buffer) => {
          if (size >= RESPONSE_EXCERPT_BYTES) return;
          chunks.push(chunk);
          size += chunk.length;
          if (size >= RESPONSE_EXCERPT_BYTES) {
            // Enough for the log: the rest is not read (the connection is dropped, not reused).
            done();
            response.destroy();
          }
        });
        response.on('end', done);
        response.on('error', done);
        response.on('close', done);
      };
      const request = secure
        ? https.request(url, options, onResponse)
        : http.request(url, options, onResponse);
      const timer = setTimeout(() => {
        finish({ status: null, error: `timeout after ${this.timeoutMs} ms`, excerpt: null });
        request.destroy();
      }, this.timeoutMs);
      request.on('error', (err: NodeJS.ErrnoException) => {
        const message =
          err instanceof RefusedAddress ? err.message : `${err.code ?? 'error'}: ${err.message}`;
        finish({ status: null, error: message.slice(0, 500), excerpt: null });
      });
      request.end(body);
    });
  }
}
