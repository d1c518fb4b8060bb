import { Logger } from '@nestjs/common';
import { WebSocket } from 'ws';
import type { AuthenticatedDevice } from '../device-auth/device-authenticator';
import { encodePush } from './phoenix-frames';

/**
 * The log context of every part of the device gateway: its lines keep the context they had when the gateway was
 * one class (operators filter on it).
 */
export const GATEWAY_LOG_CONTEXT = 'DeviceGateway';

/** Frames waiting for their turn on one connection before it is considered abusive and closed. */
export const MAX_QUEUED_FRAMES = 500;

const SETTLED = Promise.resolve();

/** Update progress reported on a connection (see DeviceChannel). */
export interface UpdateProgress {
  status: string | null;
  value: number | null;
  writtenAt: number;
  timer: NodeJS.Timeout | null;
}

/**
 * One device socket: what the device joined and reported, and its frame queue (frames of one connection are
 * handled one after another, as Phoenix channels do).
 */
export class DeviceConnection {
  /** Joined topics and their join refs. */
  readonly topics = new Map<string, string | null>();
  firmwareUuid: string | null = null;
  /** The `fwup_version` the device reported on join (whether it can apply an fwup delta). */
  fwupVersion: string | null = null;
  downloadingUuid: string | null = null;
  /** The firmware of the last `update` pushed on this connection (what its progress reports are about). */
  updatingUuid: string | null = null;
  /** The device joined with device API 2.1.0 or later: it runs support scripts sent as `scripts/run`. */
  runsScripts = false;
  /**
   * Extensions offered in the `extensions` join reply, and those the device reported attached (null until the
   * `extensions` join: a connection costs memory only for what it uses).
   */
  offered: Set<string> | null = null;
  attached: Set<string> | null = null;
  lastInbound = Date.now();
  /** Update progress (null until the first `fwup_progress`). */
  progress: UpdateProgress | null = null;
  private queue: Promise<void> = SETTLED;
  private queued = 0;

  private static readonly logger = new Logger(GATEWAY_LOG_CONTEXT);

  constructor(
    readonly ws: WebSocket,
    readonly device: AuthenticatedDevice,
  ) {}

  get deviceId(): string {
    return this.device.deviceId;
  }

  /** More frames wait than a well-behaved device sends. */
  get floods(): boolean {
    return this.queued >= MAX_QUEUED_FRAMES;
  }

  /** Runs `task` after every task queued before it, while the socket is open; a failure is logged. */
  enqueue(task: () => Promise<void>): Promise<void> {
    this.queued++;
    const run = this.queue.then(async () => {
      try {
        if (this.ws.readyState === WebSocket.OPEN) await task();
      } catch (err) {
        DeviceConnection.logger.error(
          { err, device: this.device.identifier },
          'device message handling failed',
        );
      } finally {
        // An idle connection keeps no promise of its own.
        if (--this.queued === 0 && this.queue === run) this.queue = SETTLED;
      }
    });
    this.queue = run;
    return run;
  }

  /** A server push on `topic`, with the topic's join ref. */
  push(topic: string, event: string, payload: unknown): void {
    this.send(encodePush(this.topics.get(topic) ?? null, topic, event, payload));
  }

  send(text: string): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(text);
  }

  /** Closes cleanly, and for good when the device has not answered the close frame within `graceMs`. */
  close(code: number, reason: string, graceMs = 2000): Promise<void> {
    const { ws } = this;
    if (ws.readyState === WebSocket.CLOSED) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        ws.terminate();
        resolve();
      }, graceMs);
      timer.unref();
      ws.once('close', () => {
        clearTimeout(timer);
        resolve();
      });
      ws.close(code, reason);
    });
  }
}
