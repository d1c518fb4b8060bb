import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** During a drain, keep-alive connections are looked at this often; one silent for a whole period is closed. */
export const IDLE_SWEEP_MS = 100;

const RESPONSE = Symbol('response');
const BYTES_READ_AT_SWEEP = Symbol('bytesReadAtSweep');

/** A socket that carried a request: its latest response, and what the last sweep saw of it. */
type TrackedSocket = Socket & { [RESPONSE]?: ServerResponse; [BYTES_READ_AT_SWEEP]?: number };

/**
 * Lets the keep-alive HTTP connections go when the process stops, without cutting a request: from the start of
 * the drain every response says `Connection: close` (those of requests already in flight included, unless their
 * headers are out), so Node closes each connection after its answer and the client opens its next one elsewhere;
 * a connection that sits idle is closed once it has been silent for a whole IDLE_SWEEP_MS.
 *
 * Not Node's `server.closeIdleConnections()` at once: it counts as idle a connection whose next request is
 * already in the kernel's buffer but not yet read (most of them, under load) or a new connection whose request
 * is not parsed yet, and resets it, so that request fails (`ECONNRESET`). A silent period means the client sent
 * nothing meanwhile; the sweep runs just after the event loop has read its sockets (setImmediate), so bytes that
 * arrived in the period are counted.
 */
export class ConnectionDrain {
  private readonly sockets = new Set<TrackedSocket>();
  private draining = false;
  private sweeper: NodeJS.Timeout | null = null;

  /** Every request passes here first: its connection is tracked, and told to close during a drain. */
  track(req: IncomingMessage, res: ServerResponse): void {
    const socket = req.socket as TrackedSocket;
    if (socket[RESPONSE] === undefined) {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    }
    socket[RESPONSE] = res;
    if (this.draining) res.setHeader('Connection', 'close');
  }

  /** From now on connections close after their response, and idle ones close; see the class. */
  start(): void {
    if (this.draining) return;
    this.draining = true;
    for (const socket of this.sockets) {
      const res = socket[RESPONSE];
      if (res && !res.headersSent) res.setHeader('Connection', 'close');
    }
    this.sweep();
    this.sweeper = setInterval(() => setImmediate(() => this.sweep()), IDLE_SWEEP_MS);
    this.sweeper.unref();
  }

  /** Requests whose response has not been sent in full. */
  get inFlight(): number {
    let count = 0;
    for (const socket of this.sockets) if (isAnswering(socket)) count++;
    return count;
  }

  /** Stops sweeping; `server.close()` has closed whatever is idle, and what is left is in flight. */
  stop(): void {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = null;
  }

  /** Destroys every HTTP connection, requests in flight included (the shutdown's limit, or a second signal). */
  cutAll(server: Server): number {
    const cut = this.inFlight;
    this.stop();
    server.closeAllConnections();
    return cut;
  }

  private sweep(): void {
    for (const socket of this.sockets) {
      if (isAnswering(socket)) {
        socket[BYTES_READ_AT_SWEEP] = undefined;
      } else if (socket[BYTES_READ_AT_SWEEP] === socket.bytesRead) {
        socket.destroy();
      } else {
        socket[BYTES_READ_AT_SWEEP] = socket.bytesRead;
      }
    }
  }
}

function isAnswering(socket: TrackedSocket): boolean {
  const res = socket[RESPONSE];
  return res !== undefined && !res.writableFinished && !socket.destroyed;
}
