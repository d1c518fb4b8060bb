/** The timings of the event streams (a provider, so that tests can shorten them). */
export interface LiveTiming {
  /** A `: keepalive` comment on an idle stream this often. */
  keepaliveMs: number;
  /** Open streams' tokens, sessions and memberships are checked again this often (revocations end them at once). */
  revalidateMs: number;
  /** A stream whose reader has taken nothing for this long while events wait is closed. */
  stallMs: number;
  /** A group's counts are computed at most this often (and never more often than 5 times the last computation). */
  countsMinMs: number;
  /** Counts are computed again this often even without a sign of change (penalty boxes expire on their own). */
  countsRefreshMs: number;
  /** The fleet overview's counters are computed at most this often (and never more often than 5 times the last). */
  overviewMinMs: number;
  /** …and again this often without a sign of change (health reports and device creations say nothing live). */
  overviewRefreshMs: number;
}

export const LIVE_TIMING = Symbol('LIVE_TIMING');

export const DEFAULT_LIVE_TIMING: LiveTiming = {
  keepaliveMs: 15_000,
  revalidateMs: 30_000,
  stallMs: 60_000,
  countsMinMs: 500,
  countsRefreshMs: 10_000,
  overviewMinMs: 1000,
  overviewRefreshMs: 5000,
};
