import { performance } from 'node:perf_hooks';
import type { Request, Response } from 'express';

const STARTED = Symbol('request started');
const TIMER = Symbol('request timer');

type TrackedResponse = Response & { [STARTED]?: number; [TIMER]?: NodeJS.Timeout };

/** Told of every response that finished (not of one whose connection went away first), with its duration. */
export type FinishedResponse = (req: Request, res: Response, durationMs: number) => void;

/** Milliseconds since the request entered the server; undefined for a request trackRequests did not see. */
export function elapsedMs(res: Response): number | undefined {
  const started = (res as TrackedResponse)[STARTED];
  return started === undefined ? undefined : performance.now() - started;
}

/**
 * The start and the end of every request, for the request log, the request metrics and the request timeout: one
 * clock reading when the request arrives, one when it ends, and one `close` listener per response, a function
 * shared by all responses (`this` is the response), not a closure each. A response emits `close` once: after
 * `finish` when it was sent, or alone when its connection went first; the timer (`startTimer`'s, if it started
 * one) is cleared either way, and only finished responses reach `finished`. Called for every request before the
 * routes. (One listener instead of three closures — log, metrics, timeout — and no Nest middleware route for the
 * metrics: part of what fleethub adds to each request, measured against the framework floor; bench/README.md §1.)
 */
export function trackRequests(
  finished: readonly FinishedResponse[],
  startTimer: (req: Request, res: Response) => NodeJS.Timeout | undefined,
): (req: Request, res: Response) => void {
  function ended(this: TrackedResponse): void {
    const timer = this[TIMER];
    if (timer !== undefined) clearTimeout(timer);
    if (!this.writableFinished) return;
    const durationMs = performance.now() - (this[STARTED] ?? 0);
    for (let i = 0; i < finished.length; i++) finished[i](this.req, this, durationMs);
  }
  return (req, res) => {
    const tracked = res as TrackedResponse;
    tracked[STARTED] = performance.now();
    const timer = startTimer(req, res);
    if (timer !== undefined) tracked[TIMER] = timer;
    res.on('close', ended);
  };
}
