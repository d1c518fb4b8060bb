import { useEffect, useRef, useState } from 'preact/hooks';
import type { components } from './api/schema';
import { seg } from './router';

export type GroupCountsEvent = components['schemas']['DeploymentGroupCountsEventData'];
export type DeviceUpdateEvent = components['schemas']['DeviceUpdateEventData'];
export type DeviceConnectionEvent = components['schemas']['DeviceConnectionEventData'];

/** What a page wants from the product's live events (`GET .../products/{product}/events`, Server-Sent Events). */
export interface ProductEventHandlers {
  counts?: (event: GroupCountsEvent) => void;
  update?: (event: DeviceUpdateEvent) => void;
  connection?: (event: DeviceConnectionEvent) => void;
  /** The stream (re)opened: what the page shows may have missed events; reload what it needs. */
  opened?: () => void;
}

/** `live`: events arrive; `connecting`; `off`: the server refused the stream (its limit, or no such endpoint). */
export type LiveState = 'connecting' | 'live' | 'off';

/**
 * Follows the product's live events while the page is shown: one EventSource (the browser reconnects it when the
 * server ends it, and the page reloads what it shows then); nothing is polled. Handlers may change between renders.
 */
export function useProductEvents(org: string, product: string, handlers: ProductEventHandlers): LiveState {
  const current = useRef(handlers);
  current.current = handlers;
  const [state, setState] = useState<LiveState>('connecting');
  useEffect(() => {
    setState('connecting');
    const source = new EventSource(`/api/orgs/${seg(org)}/products/${seg(product)}/events`);
    const on = <T>(name: string, handle: (data: T) => void) =>
      source.addEventListener(name, (message: MessageEvent<string>) => {
        try {
          handle(JSON.parse(message.data) as T);
        } catch {
          // A malformed event is skipped; the next one carries the latest state anyway.
        }
      });
    on<GroupCountsEvent>('deployment_group.counts', (data) => current.current.counts?.(data));
    on<DeviceUpdateEvent>('device.update', (data) => current.current.update?.(data));
    on<DeviceConnectionEvent>('device.connection', (data) => current.current.connection?.(data));
    let opens = 0;
    source.onopen = () => {
      setState('live');
      if (opens++ > 0) current.current.opened?.();
    };
    source.onerror = () => setState(source.readyState === EventSource.CLOSED ? 'off' : 'connecting');
    return () => source.close();
  }, [org, product]);
  return state;
}

/** A few words on the live state, for a `role="status"` line. */
export function liveText(state: LiveState): string {
  if (state === 'live') return 'Live: counts and devices change as they happen.';
  if (state === 'connecting') return 'Connecting to live updates…';
  return 'Live updates are unavailable: reload the page to see changes.';
}
