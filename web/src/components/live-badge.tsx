import type { LiveState } from '../live';

const TEXT: Record<LiveState, string> = {
  connecting: 'Connecting…',
  live: 'Live',
  reconnecting: 'Reconnecting…',
};

/** Whether the page follows the fleet as it changes: live, or (re)connecting to the server's events. */
export function LiveBadge({ state }: { state: LiveState }) {
  return (
    <p class={`live-badge ${state}`} role="status" aria-live="polite">
      <span class="dot" aria-hidden="true" />
      {TEXT[state]}
    </p>
  );
}
