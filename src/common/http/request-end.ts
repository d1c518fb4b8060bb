import { performance } from 'node:perf_hooks';
import type { Request, Response } from 'express';

const STARTED = Symbol('request started');

type TrackedResponse = Response & { [STARTED]?: number };

/** Told of every response that finished (not of one whose connection went away first), with its duration. */
export type FinishedResponse = (req: Request, res: Response, durationMs: number) => void;

/** Milliseconds since the request entered the server; undefined for a request trackRequests did not see. */
export function elapsedMs(res: Response): number | undefined {
  const started = (res as TrackedResponse)[STARTED];
  return started === undefined ? undefined : performance.now() - started;
}

/**
 * The handler timeout of every request it applies to, without a timer each: the open requests in the order they
 * started (a Set keeps insertion order), and one interval, running only while some are open, that expires those
 * past `timeoutMs` from the oldest on and stops at the first that is not (all have the same timeout). A request
 * expires between `timeoutMs` and `timeoutMs` plus one sweep interval (a tenth of the timeout, 1 s at most).
 */
export class RequestDeadlines {
  private readonly open = new Set<TrackedResponse>();
  private sweeper: NodeJS.Timeout | null = null;
  private readonly sweepMs: number;

  constructor(
    private readonly timeoutMs: number,
    private readonly applies: (req: Request) => boolean,
    private readonly expire: (req: Request, res: Response) => void,
  ) {
    this.sweepMs = Math.max(5, Math.min(1000, Math.floor(timeoutMs / 10)));
  }

  /** Starts the request's deadline, if it has one (trackRequests has stamped its start). */
  start(req: Request, res: Response): void {
    if (this.timeoutMs <= 0 || !this.applies(req)) return;
    this.open.add(res);
    if (this.sweeper === null) {
      this.sweeper = setInterval(() => this.sweep(), this.sweepMs);
      this.sweeper.unref();
    }
  }

  /** The request ended: no deadline any more. */
  end(res: Response): void {
    this.open.delete(res);
  }

  private sweep(): void {
    const now = performance.now();
    for (const res of this.open) {
      if (now - (res[STARTED] ?? now) < this.timeoutMs) break;
      this.open.delete(res);
      this.expire(res.req, res);
    }
    if (this.open.size === 0 && this.sweeper !== null) {
      clearInterval(this.sweeper);
      this.sweeper = null;
    }
  }
}

/**
 * The start and the end of every request, for the request log, the request metrics and the request timeout: one
 * clock reading when the request arrives, one when it ends, and one `close` listener per response, a function
 * shared by all responses (`this` is the response), not a closure each. A response emits `close` once: after
 * `finish` when it was sent, or alone when its connection went first; its deadline ends either way, and only
 * finished responses reach `finished`. Called for every request before the routes. (One listener instead of three
 * closures — log, metrics, timeout — no timer per request, and no Nest middleware route for the metrics: part of
 * what fleethub adds to each request, measured against the framework floor; bench/README.md §1.)
 */
export function trackRequests(
  finished: readonly FinishedResponse[],
  deadlines: RequestDeadlines,
): (req: Request, res: Response) => void {
  function ended(this: TrackedResponse): void {
    deadlines.end(this);
    if (!this.writableFinished) return;
    const durationMs = performance.now() - (this[STARTED] ?? 0);
    for (let i = 0; i < finished.length; i++) finished[i](this.req, this, durationMs);
  }
  return (req, res) => {
    (res as TrackedResponse)[STARTED] = performance.now();
    deadlines.start(req, res);
    res.on('close', ended);
  };
}
