import { Readable } from 'node:stream';
import { isLine, type LiveEvent, sseFrame, statusKey } from './live-event';
import type { LiveListener } from './live-events';

/** How much one stream may hold back for a reader that does not keep up. */
export interface StreamBounds {
  /** Distinct statuses (a device's connection or update, a group's counts) waiting; more: the stream is closed. */
  maxStatuses: number;
  /**
   * Console output and log lines waiting, in characters of their frames (UTF-16 code units, as held in memory);
   * beyond it the oldest are dropped (`stream.skipped`).
   */
  maxLineBytes: number;
  /** Bytes handed to the response at a time (also the Readable's high-water mark). */
  chunkBytes: number;
}

export const STREAM_BOUNDS: StreamBounds = {
  maxStatuses: 1000,
  maxLineBytes: 256 * 1024,
  chunkBytes: 16 * 1024,
};

/** Who opened the stream: what ends it (a revoked token or session, a lost membership). */
export interface StreamOwner {
  userId: string;
  orgId: string;
  /** The actor's `tokenId`: the token's id, or `session:<id>` for a browser session. */
  tokenId: string;
  sessionId: string | null;
}

const KEEPALIVE = ': keepalive\n\n';

/**
 * One client's Server-Sent Events, as a byte stream that the response reads at its own pace (Node's back-pressure:
 * `_read` is called when the client has taken what was given). What waits for it is bounded: a status replaces
 * the one of its key still waiting (the latest wins); lines beyond `maxLineBytes` drop the oldest, and the client
 * is told how many with a `stream.skipped` event before the lines that follow; more than `maxStatuses` distinct
 * statuses waiting means the client cannot keep up at all, and the stream fails (its response is closed).
 */
export class EventStream extends Readable implements LiveListener {
  private readonly statuses = new Map<string, string>();
  private lines: string[] = [];
  private lineStart = 0;
  private lineBytes = 0;
  private skippedLines = 0;
  private keepalivePending = false;
  /** `_read` was called and not yet answered with data: the next frame goes out at once. */
  private wanting = false;
  private finished = false;
  /** When the response last asked for data (`Date.now()`). */
  lastReadAt = Date.now();

  constructor(
    readonly id: string,
    readonly productId: string,
    readonly deviceId: string | null,
    readonly owner: StreamOwner,
    private readonly bounds: StreamBounds = STREAM_BOUNDS,
  ) {
    super({ highWaterMark: bounds.chunkBytes });
    // Sent at once: the response's headers go out with it, and the client knows the stream is open.
    this.push(': open\n\n');
  }

  /** Characters held back (frames waiting, not yet handed to the response). */
  get queuedBytes(): number {
    let bytes = this.lineBytes;
    for (const frame of this.statuses.values()) bytes += frame.length;
    return bytes;
  }

  /** Whether frames wait for the reader. */
  get pending(): boolean {
    return (
      this.statuses.size > 0 ||
      this.lines.length > this.lineStart ||
      this.skippedLines > 0 ||
      this.keepalivePending
    );
  }

  deliver(event: LiveEvent): void {
    if (this.finished) return;
    if (event.name === 'device.console' || event.name === 'device.log') {
      if (event.device !== this.deviceId) return;
    } else if (event.product !== this.productId) {
      return;
    }
    const frame = sseFrame(event.name, event.data);
    if (isLine(event)) {
      this.lines.push(frame);
      this.lineBytes += frame.length;
      while (this.lineBytes > this.bounds.maxLineBytes && this.lines.length > this.lineStart) {
        this.lineBytes -= this.lines[this.lineStart].length;
        this.lines[this.lineStart++] = '';
        this.skippedLines++;
      }
      if (this.lineStart > 1024 && this.lineStart * 2 > this.lines.length) {
        this.lines = this.lines.slice(this.lineStart);
        this.lineStart = 0;
      }
    } else {
      const key = statusKey(event);
      this.statuses.delete(key);
      this.statuses.set(key, frame);
      if (this.statuses.size > this.bounds.maxStatuses) {
        this.fail('the client does not keep up with the events');
        return;
      }
    }
    this.pump();
  }

  skipped(lines: number): void {
    if (this.finished || this.deviceId === null) return;
    this.skippedLines += lines;
    this.pump();
  }

  lost(): void {
    this.close();
  }

  /** A comment line, unless something is waiting anyway: proxies and browsers see the stream alive. */
  keepalive(): void {
    if (this.finished || this.pending) return;
    this.keepalivePending = true;
    this.pump();
  }

  /**
   * Ends the stream after what was already handed to the response (the client reconnects, maybe elsewhere); a
   * reader that has not taken it within `graceMs` is cut.
   */
  close(graceMs = 5000): void {
    if (this.finished) return;
    this.finished = true;
    this.clear();
    this.push(null);
    setTimeout(() => {
      if (!this.destroyed) this.fail('the client did not take the end of its stream');
    }, graceMs).unref();
  }

  /**
   * Ends the stream at once: its response is closed without waiting for the client (destroyed with an error, the
   * one way a piped response learns that its source will not end).
   */
  fail(reason: string): void {
    if (this.destroyed) return;
    this.finished = true;
    this.clear();
    this.destroy(new StreamOverrun(reason));
  }

  override _read(): void {
    this.lastReadAt = Date.now();
    this.wanting = true;
    this.pump();
  }

  override _destroy(err: Error | null, callback: (error?: Error | null) => void): void {
    this.finished = true;
    this.clear();
    callback(err);
  }

  private clear(): void {
    this.statuses.clear();
    this.lines = [];
    this.lineStart = 0;
    this.lineBytes = 0;
    this.skippedLines = 0;
    this.keepalivePending = false;
  }

  /** Hands waiting frames to the response while it wants more, a chunk at a time. */
  private pump(): void {
    while (this.wanting && !this.finished && this.pending) {
      this.wanting = this.push(this.nextChunk());
    }
  }

  /** Statuses first, then the skipped lines' count, then lines in order: up to `chunkBytes` (one frame at least). */
  private nextChunk(): string {
    let chunk = '';
    const fits = (frame: string) => chunk === '' || chunk.length + frame.length <= this.bounds.chunkBytes;
    for (const [key, frame] of this.statuses) {
      if (!fits(frame)) return chunk;
      chunk += frame;
      this.statuses.delete(key);
    }
    if (this.skippedLines > 0) {
      const marker = sseFrame('stream.skipped', { lines: this.skippedLines });
      if (!fits(marker)) return chunk;
      chunk += marker;
      this.skippedLines = 0;
    }
    while (this.lines.length > this.lineStart) {
      const frame = this.lines[this.lineStart];
      if (!fits(frame)) return chunk;
      chunk += frame;
      this.lineBytes -= frame.length;
      this.lines[this.lineStart++] = '';
    }
    this.lines = [];
    this.lineStart = 0;
    if (this.keepalivePending) {
      this.keepalivePending = false;
      if (chunk === '') chunk = KEEPALIVE;
    }
    return chunk;
  }
}

/** Why a stream was closed without waiting for its reader. */
export class StreamOverrun extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StreamOverrun';
  }
}
