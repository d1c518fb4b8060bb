import { request, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';

export interface ServerSentEvent {
  event: string;
  data: unknown;
}

/**
 * A Server-Sent Events client for tests, on Node's own HTTP client: the answer's status and headers (and body,
 * when it is not a stream), every event parsed in order, comments counted, and control over reading (`pause`
 * leaves the bytes in the kernel's buffers, as a slow browser would).
 */
export class EventStreamClient {
  readonly events: ServerSentEvent[] = [];
  comments = 0;
  /** Bytes received so far. */
  received = 0;
  /** The error body when the answer is not a stream. */
  body = '';
  readonly ended: Promise<void>;
  private buffer = '';
  private consumed = 0;
  private listeners: (() => void)[] = [];
  private endedFlag = false;

  private constructor(
    readonly status: number,
    readonly headers: IncomingHttpHeaders,
    private readonly res: IncomingMessage,
  ) {
    res.setEncoding('utf8');
    this.ended = new Promise((resolve) => {
      const done = () => {
        this.endedFlag = true;
        resolve();
        for (const listener of this.listeners) listener();
      };
      res.on('end', done);
      res.on('close', done);
      res.on('error', done);
    });
    res.on('data', (chunk: string) => {
      this.received += Buffer.byteLength(chunk);
      if (status !== 200) {
        this.body += chunk;
        return;
      }
      this.buffer += chunk;
      let end: number;
      while ((end = this.buffer.indexOf('\n\n')) >= 0) {
        const block = this.buffer.slice(0, end);
        this.buffer = this.buffer.slice(end + 2);
        this.parse(block);
      }
      for (const listener of this.listeners) listener();
    });
  }

  /** Opens `url` (GET) with these headers; resolves once the answer's headers are in. */
  static open(url: string, headers: Record<string, string> = {}): Promise<EventStreamClient> {
    return new Promise((resolve, reject) => {
      const req = request(url, { headers: { Accept: 'text/event-stream', ...headers } }, (res) =>
        resolve(new EventStreamClient(res.statusCode ?? 0, res.headers, res)),
      );
      req.on('error', reject);
      req.end();
    });
  }

  /** The error body, parsed, once the answer (not a stream) has ended. */
  async json(): Promise<unknown> {
    await this.ended;
    return JSON.parse(this.body) as unknown;
  }

  get isEnded(): boolean {
    return this.endedFlag;
  }

  /** The next event not yet taken that matches (events before it that do not match are kept). */
  next(match: (e: ServerSentEvent) => boolean = () => true, timeoutMs = 10_000): Promise<ServerSentEvent> {
    return new Promise((resolve, reject) => {
      const check = (): boolean => {
        for (let i = this.consumed; i < this.events.length; i++) {
          if (match(this.events[i])) {
            const [event] = this.events.splice(i, 1);
            done();
            resolve(event);
            return true;
          }
        }
        if (this.endedFlag) {
          done();
          reject(new Error(`stream ended; events: ${JSON.stringify(this.events.slice(this.consumed))}`));
          return true;
        }
        return false;
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`no matching event; received: ${JSON.stringify(this.events.slice(this.consumed))}`));
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

  /** The next event of this name (and matching `match`). */
  nextOf(name: string, match: (data: Record<string, unknown>) => boolean = () => true, timeoutMs = 10_000) {
    return this.next((e) => e.event === name && match(e.data as Record<string, unknown>), timeoutMs);
  }

  /** Stops reading: what the server sends waits in the kernel's buffers, then in the server. */
  pause(): void {
    this.res.pause();
  }

  resume(): void {
    this.res.resume();
  }

  close(): void {
    this.res.destroy();
  }

  private parse(block: string): void {
    let event = 'message';
    const data: string[] = [];
    let comment = false;
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) comment = true;
      else if (line.startsWith('event: ')) event = line.slice(7);
      else if (line.startsWith('data: ')) data.push(line.slice(6));
    }
    if (data.length === 0) {
      if (comment) this.comments++;
      return;
    }
    this.events.push({ event, data: JSON.parse(data.join('\n')) as unknown });
  }
}
