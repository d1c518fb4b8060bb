import { Injectable } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { WebSocket } from 'ws';
import type { DeviceConnection } from './device-connection';
import { DeviceConnections } from './device-connections';

/** The last line NervesHub types after a script sent through the console (devices below device API 2.1.0). */
export const CONSOLE_SCRIPT_END = '[NERVESHUB:END]';
/** Output kept for one run: a script that prints more is cut here (the answer is one HTTP body). */
export const MAX_SCRIPT_OUTPUT = 1024 * 1024;

/** A run in progress on one connection. */
interface Run {
  /** The `scripts/run` ref; null: typed into the console, answered by console output. */
  ref: string | null;
  buffer: string;
  finish(output: string | null): void;
}

/**
 * Support scripts run on a device whose socket is held here, as NervesHub's Scripts.Runner does
 * (device-protocol.md §4.4): `scripts/run` on the device channel for device API 2.1.0 and later (the device
 * evaluates the text and pushes its output back with the same ref); for older devices, the text typed into the
 * console followed by an end marker, and the console output read up to that marker. One run at a time per device:
 * console output could not tell two runs apart, and one device answers one script at a time anyway.
 */
@Injectable()
export class ScriptRunner {
  private readonly runs = new Map<DeviceConnection, Run>();
  /** Per device, the end of the last run queued (runs of one device wait for each other). */
  private readonly queues = new Map<string, Promise<unknown>>();

  constructor(private readonly connections: DeviceConnections) {}

  /** True when this instance holds an open socket of the device. */
  holds(deviceId: string): boolean {
    return this.connections.of(deviceId)?.ws.readyState === WebSocket.OPEN;
  }

  /**
   * Runs `text` on the device's socket here: its output, or null when no socket here can run it (no device
   * channel from API 2.1.0 and no console) or the device does not answer within `timeoutMs` (the wait for an
   * earlier run of the device included).
   */
  run(deviceId: string, text: string, timeoutMs: number): Promise<string | null> {
    const deadline = Date.now() + timeoutMs;
    const previous = this.queues.get(deviceId) ?? Promise.resolve();
    const next = previous.then(() => this.runOnce(deviceId, text, deadline - Date.now()));
    const settled = next.catch(() => null);
    this.queues.set(deviceId, settled);
    void settled.then(() => {
      if (this.queues.get(deviceId) === settled) this.queues.delete(deviceId);
    });
    return next;
  }

  /** The device's `scripts/run` push: the answer to the run with that ref. */
  answered(conn: DeviceConnection, payload: Record<string, unknown>): void {
    const run = this.runs.get(conn);
    if (!run || run.ref === null || payload.ref !== run.ref) return;
    const output = typeof payload.output === 'string' ? payload.output : '';
    const returned = typeof payload.return === 'string' ? payload.return : '';
    run.finish(`${output}\n${returned}`.trim().slice(0, MAX_SCRIPT_OUTPUT));
  }

  /** Console output (`up`) of a connection: read by a run typed into its console. */
  consoleOutput(conn: DeviceConnection, data: string): void {
    const run = this.runs.get(conn);
    if (!run || run.ref !== null) return;
    run.buffer = (run.buffer + data).slice(-MAX_SCRIPT_OUTPUT);
    if (!run.buffer.includes(CONSOLE_SCRIPT_END)) return;
    // As NervesHub: everything up to the line that holds the marker.
    run.finish(run.buffer.split('\n').slice(0, -1).join('\n'));
  }

  /** The connection closed: its run ends without an answer. */
  closed(conn: DeviceConnection): void {
    this.runs.get(conn)?.finish(null);
  }

  private runOnce(deviceId: string, text: string, timeoutMs: number): Promise<string | null> {
    const conn = this.connections.of(deviceId);
    if (!conn || conn.ws.readyState !== WebSocket.OPEN || timeoutMs <= 0) return Promise.resolve(null);
    let ref: string | null;
    if (conn.topics.has('device') && conn.runsScripts) {
      // NervesHub's ref: 4 random bytes, base64 without padding.
      ref = randomBytes(4).toString('base64').replace(/=+$/, '');
    } else if (conn.topics.has('console')) {
      ref = null;
    } else {
      return Promise.resolve(null);
    }
    return new Promise((resolve) => {
      const finish = (output: string | null) => {
        clearTimeout(timer);
        if (this.runs.get(conn) === run) this.runs.delete(conn);
        resolve(output);
      };
      const timer = setTimeout(() => finish(null), timeoutMs);
      const run: Run = { ref, buffer: '', finish };
      this.runs.set(conn, run);
      if (ref !== null) {
        conn.push('device', 'scripts/run', { text, ref });
      } else {
        conn.push('console', 'dn', { data: `${text}\n# ${CONSOLE_SCRIPT_END}` });
        conn.push('console', 'dn', { data: '\r' });
      }
    });
  }
}
