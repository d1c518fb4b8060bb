import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Server as NetServer, type Socket } from 'node:net';

/** During a drain, keep-alive connections are looked at this often… */
export const IDLE_SWEEP_MS = 100;
/**
 * …and one that has sent nothing for this long is closed. Longer than a client's pause between two requests
 * even on a loaded machine: closing an idle keep-alive connection races the client's next request on it.
 */
export const IDLE_SILENCE_MS = 500;
/** The listener closes once no connection has arrived for this long (the balancer has stopped sending)… */
export const LISTENER_QUIET_MS = 200;
/** …or after this long waiting for it, whichever comes first. */
export const LISTENER_QUIET_MAX_MS = 1000;

const RESPONSE = Symbol('response');
const BYTES_READ_AT_SWEEP = Symbol('bytesReadAtSweep');
const SILENT_SINCE = Symbol('silentSince');

/** An accepted socket: its latest response (once it has carried a request), and what the sweeps saw of it. */
type TrackedSocket = Socket & {
  [RESPONSE]?: ServerResponse;
  [BYTES_READ_AT_SWEEP]?: number;
  [SILENT_SINCE]?: number;
};

/**
 * Lets the keep-alive HTTP connections go when the process stops, without cutting a request: from the start of
 * the drain every response says `Connection: close` (those of requests already in flight included, unless their
 * headers are out), so Node closes each connection after its answer and the client opens its next one elsewhere;
 * a connection that sits idle is closed once it has been silent for IDLE_SILENCE_MS.
 *
 * Not Node's `server.closeIdleConnections()` (which `server.close()` calls): it counts as idle a keep-alive
 * connection whose next request is already in the kernel's buffer but not yet read (many of them, under load) and
 * resets it, so that request fails (`ECONNRESET`; behind HAProxy the client's own connection is closed without an
 * answer). Silence means the client sent nothing meanwhile; the sweep runs just after the event loop has read its
 * sockets (setImmediate), so bytes that arrived since the last sweep are counted.
 */
export class ConnectionDrain {
  private readonly sockets = new Set<TrackedSocket>();
  private draining = false;
  private sweeper: NodeJS.Timeout | null = null;
  private lastConnectionAt = 0;

  constructor(private readonly server: Server) {
    server.on('connection', (socket: TrackedSocket) => {
      this.lastConnectionAt = Date.now();
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
    // A device socket (an upgrade) is no longer HTTP: the device gateway closes those itself, over the drain.
    server.on('upgrade', (req: IncomingMessage) => {
      const socket = req.socket as TrackedSocket;
      this.sockets.delete(socket);
      // Alone here (no gateway), this listener must not keep the socket open: Node destroys unhandled upgrades.
      if (server.listenerCount('upgrade') === 1) socket.destroy();
    });
  }

  /** Every request passes here first: its response is remembered, and told to close during a drain. */
  track(req: IncomingMessage, res: ServerResponse): void {
    (req.socket as TrackedSocket)[RESPONSE] = res;
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

  /**
   * Closes the listener and resolves once every connection is gone. The listener closes only when no connection
   * has arrived for LISTENER_QUIET_MS (up to LISTENER_QUIET_MAX_MS): closing a listening socket resets the
   * connections the kernel accepted and the process has not yet taken (its backlog), requests already sent on
   * them included, and a busy event loop leaves some there for a while after the balancer has stopped sending.
   * The connections left are not reset here (see the class): they finish, or the sweep closes them.
   */
  async closeListener(): Promise<void> {
    const giveUpAt = Date.now() + LISTENER_QUIET_MAX_MS;
    for (;;) {
      // Two turns of the event loop: a whole poll phase in between has accepted whatever was waiting.
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setImmediate(resolve));
      const now = Date.now();
      if (now - this.lastConnectionAt >= LISTENER_QUIET_MS || now >= giveUpAt) break;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await new Promise<void>((resolve) => NetServer.prototype.close.call(this.server, () => resolve()));
  }

  /** Requests whose response has not been sent in full. */
  get inFlight(): number {
    let count = 0;
    for (const socket of this.sockets) if (isAnswering(socket)) count++;
    return count;
  }

  /** Stops sweeping; what is left is in flight. */
  stop(): void {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = null;
  }

  /** Destroys every HTTP connection, requests in flight included (the shutdown's limit, or a second signal). */
  cutAll(): number {
    const cut = this.inFlight;
    this.stop();
    this.server.closeAllConnections();
    return cut;
  }

  /**
   * Closes what has been silent for IDLE_SILENCE_MS: a connection between two requests, or a new one that has
   * sent nothing yet. A new socket that has read part of its first request is left alone; the shutdown's limit
   * bounds it.
   */
  private sweep(): void {
    const now = Date.now();
    for (const socket of this.sockets) {
      const idle = socket[RESPONSE] === undefined ? socket.bytesRead === 0 : !isAnswering(socket);
      if (!idle || socket[BYTES_READ_AT_SWEEP] !== socket.bytesRead) {
        socket[BYTES_READ_AT_SWEEP] = idle ? socket.bytesRead : undefined;
        socket[SILENT_SINCE] = now;
      } else if (now - (socket[SILENT_SINCE] ?? now) >= IDLE_SILENCE_MS) {
        socket.destroy();
      }
    }
  }
}

function isAnswering(socket: TrackedSocket): boolean {
  const res = socket[RESPONSE];
  return res !== undefined && !res.writableFinished && !socket.destroyed;
}
