/**
 * An open-loop load at a fixed rate, evenly spaced: request i is due at start + i / rate, whatever the answers
 * before it did, and its latency counts from that due time (a request that waited for a free connection waited
 * as its user would). autocannon's `overallRate` is not that: each connection sends its share of the second
 * back to back when the second starts, so 100 requests/s over 16 connections arrive as a burst of 100 every
 * second and the latencies measure the burst's queue.
 */
import { Agent, request } from 'node:http';
import type { Measurement } from './report';

export interface PacedLoad {
  /** Stops issuing, waits for the requests in flight (at most 30 s), and summarises; null when none completed. */
  stop(): Promise<Measurement | null>;
}

export function startPacedLoad(
  url: string,
  headers: Record<string, string>,
  rate: number,
  connections: number,
): PacedLoad {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const intervalMs = 1000 / rate;
  const started = performance.now();
  const latencies: number[] = [];
  let issued = 0;
  let errors = 0;
  let non2xx = 0;
  let inFlight = 0;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let drained: (() => void) | undefined;

  const settle = (due: number, outcome: 'ok' | 'non2xx' | 'error') => {
    inFlight -= 1;
    if (outcome === 'error') errors += 1;
    else {
      if (outcome === 'non2xx') non2xx += 1;
      latencies.push(performance.now() - due);
    }
    if (stopped && inFlight === 0) drained?.();
  };

  const send = (due: number) => {
    inFlight += 1;
    const req = request(url, { agent, headers }, (res) => {
      const status = res.statusCode ?? 0;
      res.resume();
      res.once('end', () => settle(due, status >= 200 && status < 300 ? 'ok' : 'non2xx'));
      res.once('error', () => settle(due, 'error'));
    });
    req.setTimeout(30_000, () => req.destroy(new Error('timeout')));
    req.once('error', () => settle(due, 'error'));
    req.end();
  };

  const tick = () => {
    const now = performance.now();
    while (!stopped && started + issued * intervalMs <= now) {
      send(started + issued * intervalMs);
      issued += 1;
    }
    if (!stopped) timer = setTimeout(tick, Math.max(0, started + issued * intervalMs - performance.now()));
  };
  tick();

  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      const elapsedS = (performance.now() - started) / 1000;
      if (inFlight > 0) {
        await Promise.race([
          new Promise<void>((resolve) => (drained = resolve)),
          new Promise((resolve) => setTimeout(resolve, 30_000)),
        ]);
      }
      agent.destroy();
      if (latencies.length === 0) return null;
      const sorted = [...latencies].sort((a, b) => a - b);
      const at = (p: number) => Math.round(sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]);
      const mean = sorted.reduce((sum, value) => sum + value, 0) / sorted.length;
      return {
        requests_per_s: Math.round(latencies.length / elapsedS),
        requests_total: latencies.length,
        latency_ms: {
          p50: at(50),
          p90: at(90),
          p99: at(99),
          max: Math.round(sorted[sorted.length - 1]),
          mean: Number(mean.toFixed(2)),
        },
        errors: errors + inFlight,
        non_2xx: non2xx,
        server_cpu_percent: 0,
      };
    },
  };
}
