import { useEffect, useState } from 'preact/hooks';
import { api } from './api/client';
import type { operations } from './api/schema';
import { seg } from './router';

/** Every message of the events stream, as the server's OpenAPI document types it: `{event, data}`. */
export type LiveMessage = operations['Live_events']['responses'][200]['content']['text/event-stream'];
export type LiveEventName = LiveMessage['event'];
/** The payload of the event `N`. */
export type LiveData<N extends LiveEventName> = Extract<LiveMessage, { event: N }>['data'];

/**
 * `connecting`: the first connection is on its way; `live`: events arrive as they happen; `reconnecting`: the
 * connection dropped (the server restarted, the network went) and is tried again.
 */
export type LiveState = 'connecting' | 'live' | 'reconnecting';

const EVENT_NAMES: readonly LiveEventName[] = [
  'device.connection',
  'device.update',
  'deployment_group.counts',
  'product.overview',
  'device.console',
  'device.log',
  'stream.skipped',
];

/** Waits between reconnection attempts: from half a second, doubling to 30 s, each with up to 50 % more. */
const FIRST_RETRY_MS = 500;
const MAX_RETRY_MS = 30_000;

/**
 * The product's live events for one page: one `EventSource`, reconnected with backoff when it fails (the server
 * may have closed it: an instance stopped, the client fell behind, its session ended). Before each retry the
 * session is checked, so that a signed-out console goes to its sign-in page rather than retrying for ever.
 * `reopened` counts the connections after the first: a page reloads what it shows when it changes (events were
 * missed while the stream was down).
 */
export class LiveStream {
  private source: EventSource | null = null;
  private readonly handlers = new Map<LiveEventName, Set<(data: never) => void>>();
  private readonly stateHandlers = new Set<(state: LiveState, reopened: number) => void>();
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  private failures = 0;
  private closed = false;
  state: LiveState = 'connecting';
  reopened = 0;
  private opened = false;

  constructor(private readonly url: string) {}

  /**
   * `/api/orgs/{org}/products/{product}/events`, with one device's console and logs when `device` is given, with
   * the fleet overview's counters (`product.overview`) when `overview` is.
   */
  static forProduct(org: string, product: string, device?: string, overview = false): LiveStream {
    const query = new URLSearchParams();
    if (device !== undefined) query.set('device', device);
    if (overview) query.set('overview', 'true');
    const search = query.toString();
    return new LiveStream(
      `/api/orgs/${seg(org)}/products/${seg(product)}/events${search ? `?${search}` : ''}`,
    );
  }

  on<N extends LiveEventName>(name: N, handler: (data: LiveData<N>) => void): () => void {
    let set = this.handlers.get(name);
    if (!set) this.handlers.set(name, (set = new Set()));
    const stored = handler as (data: never) => void;
    set.add(stored);
    return () => set.delete(stored);
  }

  onState(handler: (state: LiveState, reopened: number) => void): () => void {
    this.stateHandlers.add(handler);
    return () => this.stateHandlers.delete(handler);
  }

  start(): void {
    if (this.closed || this.source) return;
    const source = new EventSource(this.url, { withCredentials: true });
    this.source = source;
    source.onopen = () => {
      this.failures = 0;
      if (this.opened) this.reopened++;
      this.opened = true;
      this.setState('live');
    };
    source.onerror = () => {
      // EventSource would retry on its own, but not after a refusal (401, 429): the one policy is ours.
      source.close();
      if (this.source !== source) return;
      this.source = null;
      this.setState('reconnecting');
      this.retry();
    };
    for (const name of EVENT_NAMES) {
      source.addEventListener(name, (event) => this.dispatch(name, (event as MessageEvent<string>).data));
    }
  }

  close(): void {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.source?.close();
    this.source = null;
  }

  private retry(): void {
    const base = Math.min(MAX_RETRY_MS, FIRST_RETRY_MS * 2 ** this.failures);
    this.failures++;
    this.retryTimer = setTimeout(
      () => {
        this.retryTimer = null;
        if (this.closed) return;
        // A 401 here signs the console out (the API client's rule); otherwise connect again.
        void api.GET('/api/users/me').then(({ response }) => {
          if (!this.closed && response.status !== 401) this.start();
        });
      },
      Math.round(base * (1 + Math.random() * 0.5)),
    );
  }

  private dispatch(name: LiveEventName, text: string): void {
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch {
      return;
    }
    for (const handler of this.handlers.get(name) ?? []) handler(data as never);
  }

  private setState(state: LiveState): void {
    this.state = state;
    for (const handler of this.stateHandlers) handler(state, this.reopened);
  }
}

/**
 * A page's live stream: opened when the page shows (one per page), closed when it goes. Answers the stream (for
 * the page's parts to subscribe to), its state, and how many times it reconnected (a page reloads on a change).
 * `overview`: the stream carries the fleet overview's counters too.
 */
export function useLiveStream(
  org: string,
  product: string,
  device?: string,
  overview = false,
): { live: LiveStream | null; state: LiveState; reopened: number } {
  const [live, setLive] = useState<LiveStream | null>(null);
  const [status, setStatus] = useState<{ state: LiveState; reopened: number }>({
    state: 'connecting',
    reopened: 0,
  });
  useEffect(() => {
    const stream = LiveStream.forProduct(org, product, device, overview);
    stream.onState((state, reopened) => setStatus({ state, reopened }));
    setLive(stream);
    setStatus({ state: 'connecting', reopened: 0 });
    stream.start();
    return () => stream.close();
  }, [org, product, device, overview]);
  return { live, ...status };
}

/** Subscribes `handler` to an event of the stream while the component shows (the latest handler is called). */
export function useLiveEvent<N extends LiveEventName>(
  live: LiveStream | null,
  name: N,
  handler: (data: LiveData<N>) => void,
): void {
  const [current] = useState<{ handler: (data: LiveData<N>) => void }>({ handler });
  current.handler = handler;
  useEffect(() => {
    if (!live) return;
    return live.on(name, (data) => current.handler(data));
  }, [live, name]);
}
