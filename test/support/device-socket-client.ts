import type { IncomingHttpHeaders } from 'node:http';
import WebSocket from 'ws';

export type Frame = [string | null, string | null, string, string, unknown];

/** A protocol-level device for tests: raw Phoenix V2 frames over `ws`, every received frame kept in order. */
export class DeviceSocketClient {
  readonly frames: Frame[] = [];
  private consumed = 0;
  private ref = 0;
  private listeners: (() => void)[] = [];
  readonly closed: Promise<number>;
  readonly joinRefs = new Map<string, string>();

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data: Buffer) => {
      this.frames.push(JSON.parse(data.toString('utf8')) as Frame);
      for (const listener of this.listeners) listener();
    });
    this.closed = new Promise((resolve) => ws.on('close', (code) => resolve(code)));
  }

  static connect(
    baseUrl: string,
    headers: Record<string, string>,
    path = '/device-socket/websocket?vsn=2.0.0',
  ): Promise<DeviceSocketClient> {
    const ws = new WebSocket(baseUrl.replace(/^http/, 'ws') + path, { headers });
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(new DeviceSocketClient(ws)));
      ws.once('error', reject);
      ws.once('unexpected-response', (_req, res) =>
        reject(new Error(`upgrade refused: ${res.statusCode ?? 0}`)),
      );
    });
  }

  /** Connects to a full websocket URL with `ws` client options (a TLS client certificate, ...). */
  static open(url: string, options: WebSocket.ClientOptions): Promise<DeviceSocketClient> {
    const ws = new WebSocket(url, options);
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(new DeviceSocketClient(ws)));
      ws.once('error', reject);
      ws.once('unexpected-response', (_req, res) =>
        reject(new Error(`upgrade refused: ${res.statusCode ?? 0}`)),
      );
    });
  }

  /**
   * How a connection that must not get in ended: with an HTTP answer to the upgrade (its status), or closed
   * without any (the socket error's message).
   */
  static outcome(
    url: string,
    options: WebSocket.ClientOptions,
  ): Promise<{ status: number } | { closed: string }> {
    const ws = new WebSocket(url, options);
    return new Promise((resolve) => {
      ws.once('open', () => {
        ws.terminate();
        resolve({ status: 101 });
      });
      ws.once('error', (err) => resolve({ closed: err.message }));
      ws.once('unexpected-response', (_req, res) => {
        res.resume();
        resolve({ status: res.statusCode ?? 0 });
      });
    });
  }

  /** The refused upgrade's status, headers and body. */
  static refused(
    baseUrl: string,
    headers: Record<string, string>,
    path = '/device-socket/websocket?vsn=2.0.0',
  ): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
    const ws = new WebSocket(baseUrl.replace(/^http/, 'ws') + path, { headers });
    return new Promise((resolve, reject) => {
      ws.once('open', () => reject(new Error('upgrade accepted')));
      ws.once('error', () => undefined);
      ws.once('unexpected-response', (_req, res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      });
    });
  }

  nextRef(): string {
    return String(++this.ref);
  }

  sendRaw(text: string): void {
    this.ws.send(text);
  }

  send(joinRef: string | null, ref: string | null, topic: string, event: string, payload: unknown): void {
    this.ws.send(JSON.stringify([joinRef, ref, topic, event, payload]));
  }

  /** A push on a joined topic (ref as Slipstream sends it). */
  push(topic: string, event: string, payload: unknown): string {
    const ref = this.nextRef();
    this.send(this.joinRefs.get(topic) ?? null, ref, topic, event, payload);
    return ref;
  }

  async join(topic: string, payload: unknown): Promise<Frame> {
    const ref = this.nextRef();
    this.joinRefs.set(topic, ref);
    this.send(ref, ref, topic, 'phx_join', payload);
    return this.next((f) => f[3] === 'phx_reply' && f[1] === ref);
  }

  async heartbeat(): Promise<Frame> {
    const ref = this.nextRef();
    this.send(null, ref, 'phoenix', 'heartbeat', {});
    return this.next((f) => f[2] === 'phoenix' && f[1] === ref);
  }

  /** The next not yet consumed frame (in order); frames before it that do not match are kept. */
  next(match: (f: Frame) => boolean = () => true, timeoutMs = 5000): Promise<Frame> {
    return new Promise((resolve, reject) => {
      const check = () => {
        for (let i = this.consumed; i < this.frames.length; i++) {
          if (match(this.frames[i])) {
            const [frame] = this.frames.splice(i, 1);
            done();
            resolve(frame);
            return true;
          }
        }
        return false;
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`no matching frame; received: ${JSON.stringify(this.frames.slice(this.consumed))}`));
      }, timeoutMs);
      const listener = () => void check();
      const done = () => {
        clearTimeout(timer);
        this.listeners = this.listeners.filter((l) => l !== listener);
      };
      this.listeners.push(listener);
      check();
    });
  }

  /** The next `count` frames on a topic and event. */
  async many(topic: string, event: string, count: number): Promise<Frame[]> {
    const result: Frame[] = [];
    for (let i = 0; i < count; i++) result.push(await this.next((f) => f[2] === topic && f[3] === event));
    return result;
  }

  /** Frames not consumed by `next`. */
  pending(): Frame[] {
    return this.frames.slice(this.consumed);
  }

  async close(): Promise<void> {
    if (this.ws.readyState === WebSocket.CLOSED) return;
    this.ws.close();
    await this.closed;
  }
}
