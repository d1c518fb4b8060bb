import { isLine, type LineEvent, type LiveEvent, type StatusEvent, statusKey } from './live-event';

/** PostgreSQL caps a NOTIFY payload at 8000 bytes; the bus at 7900. Messages stay below this. */
export const MAX_MESSAGE_BYTES = 7800;
/** Ids per interest announcement (bigint ids of up to 20 digits: well under the message size). */
export const IDS_PER_MESSAGE = 250;
/** Status events waiting for the bus beyond this many: they are dropped and their products' streams end. */
export const MAX_QUEUED_STATUSES = 10_000;
/** Lines waiting for the bus beyond this many: the oldest are dropped (the streams are told how many). */
export const MAX_QUEUED_LINES = 2_000;

/** What instances tell each other on the live channel (`from`: the sending instance). */
export type LiveBusMessage =
  /** Events for the listeners of other instances. */
  | { k: 'ev'; from: string; e: LiveEvent[] }
  /** The sender has listeners for these products (`p`) and devices (`d`), for the next INTEREST_TTL_MS. */
  | { k: 'want'; from: string; p: string[]; d: string[] }
  /** The sender no longer has listeners for these. */
  | { k: 'unwant'; from: string; p: string[]; d: string[] }
  /** A new or reconnected instance: the others announce what they want. */
  | { k: 'hello'; from: string }
  /** Events of these products were lost on the way (the bus fell behind or failed): their streams end. */
  | { k: 'lost'; from: string; p: string[] }
  /** This many lines of these devices were dropped on the way. */
  | { k: 'skip'; from: string; d: [string, number][] };

type Control = Extract<LiveBusMessage, { k: 'want' | 'unwant' | 'hello' }>;
type Unaddressed<T> = T extends unknown ? Omit<T, 'from'> : never;

/** Parses a received message; null for anything malformed (never throws). */
export function decodeBusMessage(text: string): LiveBusMessage | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null) return null;
  const message = value as Record<string, unknown>;
  if (typeof message.from !== 'string') return null;
  const strings = (list: unknown) => Array.isArray(list) && list.every((id) => typeof id === 'string');
  switch (message.k) {
    case 'ev':
      return Array.isArray(message.e) ? (message as LiveBusMessage) : null;
    case 'want':
    case 'unwant':
      return strings(message.p) && strings(message.d) ? (message as LiveBusMessage) : null;
    case 'hello':
      return message as LiveBusMessage;
    case 'lost':
      return strings(message.p) ? (message as LiveBusMessage) : null;
    case 'skip':
      return Array.isArray(message.d) &&
        message.d.every(
          (entry) =>
            Array.isArray(entry) &&
            typeof entry[0] === 'string' &&
            typeof entry[1] === 'number' &&
            Number.isSafeInteger(entry[1]) &&
            entry[1] > 0,
        )
        ? (message as LiveBusMessage)
        : null;
    default:
      return null;
  }
}

/** A received event as it must be to be delivered (a malformed one is ignored). */
export function wellFormedEvent(value: unknown): value is LiveEvent {
  if (typeof value !== 'object' || value === null) return false;
  const event = value as Record<string, unknown>;
  if (typeof event.product !== 'string' || typeof event.data !== 'object' || event.data === null)
    return false;
  switch (event.name) {
    case 'device.connection':
    case 'device.update':
    case 'deployment_group.counts':
      return true;
    case 'device.console':
    case 'device.log':
      return typeof event.device === 'string';
    default:
      return false;
  }
}

/**
 * What this instance sends on the live channel, in order: announcements first, then events packed many to a
 * NOTIFY. One message is in flight at a time (messages published one after another arrive in that order); what
 * comes meanwhile waits and goes together. While waiting, a status event replaces the earlier one of its key,
 * lines beyond MAX_QUEUED_LINES drop the oldest (counted, and said in a `skip`), and statuses beyond
 * MAX_QUEUED_STATUSES are dropped with a `lost` for their products: memory stays bounded when the database is slow.
 */
export class LiveOutbox {
  private controls: { message: Control; sent: () => void }[] = [];
  private statuses = new Map<string, StatusEvent>();
  private lines: LineEvent[] = [];
  private lineStart = 0;
  private skipped = new Map<string, number>();
  private lost = new Set<string>();
  private running = false;

  constructor(
    private readonly from: string,
    private readonly send: (payload: string) => Promise<void>,
    private readonly onFailure: (err: unknown) => void,
    /** After a failed send, the next waits this long (the database is down or overloaded: no hot loop). */
    private readonly retryMs = 1000,
  ) {}

  /** Queues an announcement; resolves once it is published (or failed to be). */
  control(message: Unaddressed<Control>): Promise<void> {
    return new Promise((resolve) => {
      this.controls.push({ message: { ...message, from: this.from }, sent: resolve });
      this.kick();
    });
  }

  event(event: LiveEvent): void {
    if (isLine(event)) {
      this.lines.push(event);
      if (this.lines.length - this.lineStart > MAX_QUEUED_LINES) {
        const dropped = this.lines[this.lineStart++];
        this.skipped.set(dropped.device, (this.skipped.get(dropped.device) ?? 0) + 1);
        // The dropped ones leave the array now and then (never more than twice the limit held).
        if (this.lineStart >= MAX_QUEUED_LINES) {
          this.lines = this.lines.slice(this.lineStart);
          this.lineStart = 0;
        }
      }
    } else {
      const key = `${event.product}\0${statusKey(event)}`;
      // The latest wins, and moves to the end (events of one key stay in the order they happened).
      this.statuses.delete(key);
      this.statuses.set(key, event);
      if (this.statuses.size > MAX_QUEUED_STATUSES) {
        for (const queued of this.statuses.values()) this.lost.add(queued.product);
        this.statuses.clear();
      }
    }
    this.kick();
  }

  /** Messages waiting (for tests and metrics). */
  get queued(): number {
    return this.controls.length + this.statuses.size + this.lines.length - this.lineStart;
  }

  private get idle(): boolean {
    return this.queued === 0 && this.skipped.size === 0 && this.lost.size === 0;
  }

  private kick(): void {
    if (this.running) return;
    this.running = true;
    void this.run();
  }

  private async run(): Promise<void> {
    while (!this.idle) {
      const { payloads, sent, products } = this.take();
      try {
        for (const payload of payloads) await this.send(payload);
      } catch (err) {
        // Whoever listened to these products missed events: they are told so once the bus works again.
        for (const product of products) this.lost.add(product);
        this.onFailure(err);
        await new Promise((resolve) => setTimeout(resolve, this.retryMs).unref());
      } finally {
        for (const resolve of sent) resolve();
      }
    }
    // No await between the last check and this: an event queued from now on starts a new run.
    this.running = false;
  }

  /** Everything queued, as payloads in sending order. */
  private take(): { payloads: string[]; sent: (() => void)[]; products: Set<string> } {
    const payloads: string[] = [];
    const controls = this.controls;
    this.controls = [];
    for (const { message } of controls) payloads.push(JSON.stringify(message));
    const lost = [...this.lost];
    if (lost.length > 0) {
      this.lost.clear();
      for (let i = 0; i < lost.length; i += IDS_PER_MESSAGE) {
        payloads.push(JSON.stringify({ k: 'lost', from: this.from, p: lost.slice(i, i + IDS_PER_MESSAGE) }));
      }
    }
    if (this.skipped.size > 0) {
      const skipped = [...this.skipped];
      this.skipped.clear();
      for (let i = 0; i < skipped.length; i += IDS_PER_MESSAGE) {
        payloads.push(
          JSON.stringify({ k: 'skip', from: this.from, d: skipped.slice(i, i + IDS_PER_MESSAGE) }),
        );
      }
    }
    const events: LiveEvent[] = [...this.statuses.values(), ...this.lines.slice(this.lineStart)];
    this.statuses.clear();
    this.lines = [];
    this.lineStart = 0;
    const products = new Set([...lost, ...events.map((event) => event.product)]);
    payloads.push(...packEvents(this.from, events));
    return { payloads, sent: controls.map((c) => c.sent), products };
  }
}

/**
 * Events packed into as few `ev` messages as fit MAX_MESSAGE_BYTES each, in order. An event too large for a
 * message on its own is left out (producers bound what they publish: LiveEvents splits console output and
 * shortens log messages).
 */
export function packEvents(from: string, events: readonly LiveEvent[]): string[] {
  const head = `{"k":"ev","from":${JSON.stringify(from)},"e":[`;
  const overhead = Buffer.byteLength(head) + 2;
  const payloads: string[] = [];
  let parts: string[] = [];
  let bytes = overhead;
  for (const event of events) {
    const text = JSON.stringify(event);
    const size = Buffer.byteLength(text) + 1;
    if (overhead + size > MAX_MESSAGE_BYTES) continue;
    if (bytes + size > MAX_MESSAGE_BYTES) {
      payloads.push(`${head}${parts.join(',')}]}`);
      parts = [];
      bytes = overhead;
    }
    parts.push(text);
    bytes += size;
  }
  if (parts.length > 0) payloads.push(`${head}${parts.join(',')}]}`);
  return payloads;
}
