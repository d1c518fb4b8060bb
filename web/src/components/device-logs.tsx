import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api/client';
import type { operations } from '../api/schema';
import { type LiveStream, useLiveEvent } from '../live';
import { ErrorAlert } from './alert';

type Level = NonNullable<NonNullable<operations['DeviceLogs_list']['parameters']['query']>['level']>;
interface Line {
  timestamp: string;
  level: string;
  message: string;
}

/** Syslog's levels, most severe first: a filter shows its level and the ones before it. */
const LEVELS: readonly Level[] = [
  'emergency',
  'alert',
  'critical',
  'error',
  'warning',
  'notice',
  'info',
  'debug',
];
/** Lines kept on the page (the API has the rest, by day). */
const KEPT = 500;

function passes(line: Line, level: Level | '', search: string): boolean {
  if (level !== '') {
    const rank = LEVELS.indexOf(line.level as Level);
    if (rank === -1 || rank > LEVELS.indexOf(level)) return false;
  }
  return search === '' || line.message.toLowerCase().includes(search.toLowerCase());
}

/**
 * The device's log lines, newest first: the latest page from the API, then each line as the device sends it
 * (`device.log` events), filtered by level and text as the API filters them.
 */
export function DeviceLogs(props: {
  org: string;
  product: string;
  identifier: string;
  live: LiveStream | null;
  reopened: number;
}) {
  const { org, product, identifier } = props;
  const [lines, setLines] = useState<Line[] | null>(null);
  const [level, setLevel] = useState<Level | ''>('');
  const [search, setSearch] = useState('');
  const [applied, setApplied] = useState<{ level: Level | ''; search: string }>({ level: '', search: '' });
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    let newest = true;
    setError(null);
    void api
      .GET('/api/orgs/{org_name}/products/{product_name}/devices/{identifier}/logs', {
        params: {
          path: { org_name: org, product_name: product, identifier },
          query: {
            limit: 100,
            ...(applied.level !== '' && { level: applied.level }),
            ...(applied.search !== '' && { search: applied.search }),
          },
        },
      })
      .then(({ data, error: failure, response }) => {
        if (!newest) return;
        if (data) setLines(data.data);
        else setError(errorText(failure, response.status));
      });
    return () => {
      newest = false;
    };
  }, [org, product, identifier, applied, props.reopened]);

  useLiveEvent(props.live, 'device.log', (line) => {
    if (line.identifier !== identifier || !passes(line, applied.level, applied.search)) return;
    setLines((shown) => [line, ...(shown ?? [])].slice(0, KEPT));
  });

  return (
    <section aria-labelledby="logs-heading">
      <h2 id="logs-heading">Logs</h2>
      <form
        class="filters"
        aria-label="Filter log lines"
        onSubmit={(event) => {
          event.preventDefault();
          setApplied({ level, search: search.trim() });
        }}
      >
        <div>
          <label for="log-level">Level (and more severe)</label>
          <select
            id="log-level"
            value={level}
            onChange={(e) => setLevel(e.currentTarget.value as Level | '')}
          >
            <option value="">all</option>
            {LEVELS.map((l) => (
              <option key={l} value={l}>
                {l}
              </option>
            ))}
          </select>
        </div>
        <div>
          <label for="log-search">Message contains</label>
          <input
            id="log-search"
            maxLength={255}
            value={search}
            onInput={(e) => setSearch(e.currentTarget.value)}
          />
        </div>
        <div class="actions">
          <button type="submit">Filter logs</button>
        </div>
      </form>
      <ErrorAlert message={error} />
      {lines !== null && lines.length === 0 && (
        <p class="hint">No log lines{applied.search || applied.level ? ' match' : ' yet'}.</p>
      )}
      {lines !== null && lines.length > 0 && (
        <table class="logs">
          <caption class="visually-hidden">Log lines of {identifier}, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Time</th>
              <th scope="col">Level</th>
              <th scope="col">Message</th>
            </tr>
          </thead>
          <tbody>
            {lines.map((line, i) => (
              <tr key={`${line.timestamp}-${i}`} class={`level-${line.level}`}>
                <td class="mono">{new Date(line.timestamp).toLocaleTimeString()}</td>
                <td>{line.level}</td>
                <td class="mono message">{line.message}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
