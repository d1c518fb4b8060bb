import type { ComponentType } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, errorText } from '../api/client';
import type { components } from '../api/schema';
import { ErrorAlert } from '../components/alert';
import type { ConnectedPoint } from '../components/connected-chart';
import { Link } from '../components/link';
import { LiveBadge } from '../components/live-badge';
import { ProductNav } from '../components/product-nav';
import { useLiveEvent, useLiveStream } from '../live';
import { navigate, seg } from '../router';

type Overview = components['schemas']['FleetOverviewView'];

const RANGES = [
  { hours: 1, label: 'last hour' },
  { hours: 6, label: 'last 6 hours' },
  { hours: 24, label: 'last 24 hours' },
  { hours: 168, label: 'last 7 days' },
];

const number = (n: number) => n.toLocaleString();
const percent = (part: number, whole: number) => (whole === 0 ? 0 : Math.round((part / whole) * 1000) / 10);
const time = (ms: number) => new Date(ms).toLocaleString([], { dateStyle: 'short', timeStyle: 'short' });

/** A bar of `share` percent, drawn through the CSSOM (the console's CSP forbids style attributes). */
function Bar({ share }: { share: number }) {
  return (
    <span class="bar" aria-hidden="true">
      <span
        ref={(element) => {
          if (element) element.style.width = `${Math.min(100, share)}%`;
        }}
      />
    </span>
  );
}

/** The history in words: the range, the latest value, the lowest and the highest (the chart's text alternative). */
function describe(points: ConnectedPoint[], range: string): string {
  if (points.length === 0) {
    return `No samples over the ${range} yet: connected devices are sampled once a minute.`;
  }
  const low = points.reduce((a, b) => (b.connected < a.connected ? b : a));
  const high = points.reduce((a, b) => (b.connected > a.connected ? b : a));
  const last = points[points.length - 1];
  return (
    `Connected devices over the ${range}: ${number(last.connected)} of ${number(last.total)} at ` +
    `${time(last.at)}; lowest ${number(low.connected)} at ${time(low.at)}, highest ` +
    `${number(high.connected)} at ${time(high.at)} (${points.length} point${points.length === 1 ? '' : 's'}).`
  );
}

/**
 * A product's home page (beyond NervesHub): connected now and over time, firmware versions, rollouts in progress
 * and devices with health alarms, every number from the server's aggregates (one request). uPlot, which draws the
 * time series, is loaded with this page only.
 *
 * Live: the page's event stream carries the overview's counters (`product.overview`, computed by the server at
 * most about once a second while the fleet changes, once for every page following the product), which replace
 * the numbers shown; the whole overview is read again only when the stream reopens (events were missed) and when
 * the count of devices with alarms changes (the devices it names come with the overview).
 */
export function Overview(props: { org: string; product: string; search: URLSearchParams }) {
  const { org, product, search } = props;
  const base = `/orgs/${seg(org)}/products/${seg(product)}`;
  const devices = `${base}/devices`;
  const hours = RANGES.find((r) => String(r.hours) === search.get('hours'))?.hours ?? 24;
  const range = RANGES.find((r) => r.hours === hours)!.label;
  const [overview, setOverview] = useState<Overview | null>(null);
  const [asOf, setAsOf] = useState<Date | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [reloads, setReloads] = useState(0);
  const { live, state, reopened } = useLiveStream(org, product, undefined, true);
  const [Chart, setChart] = useState<ComponentType<{
    points: ConnectedPoint[];
    from: number;
    to: number;
  }> | null>(null);

  useEffect(() => {
    let newest = true;
    void api
      .GET('/api/orgs/{org_name}/products/{product_name}/overview', {
        params: { path: { org_name: org, product_name: product }, query: { hours } },
      })
      .then(({ data, error: failure, response }) => {
        if (!newest) return;
        if (data) {
          setOverview(data.data);
          setAsOf(new Date());
          setError(null);
        } else setError(errorText(failure, response.status));
      });
    return () => {
      newest = false;
    };
  }, [org, product, hours, reloads, reopened]);

  useLiveEvent(live, 'product.overview', (counters) => {
    if (overview === null) return;
    if (counters.health_alarms.devices !== overview.health_alarms.devices) setReloads((n) => n + 1);
    setOverview({
      ...overview,
      devices: counters.devices,
      firmware: counters.firmware,
      rollouts: counters.rollouts,
      manual_updates: counters.manual_updates,
      health_alarms: { ...overview.health_alarms, devices: counters.health_alarms.devices },
    });
    setAsOf(new Date());
  });
  useEffect(() => {
    void import('../components/connected-chart').then((module) => setChart(() => module.ConnectedChart));
  }, []);

  const points: ConnectedPoint[] = (overview?.connected_history.points ?? []).map((p) => ({
    at: Date.parse(p.at),
    connected: p.connected,
    total: p.total,
  }));
  const counts = overview?.devices;
  const inFlight = overview
    ? overview.rollouts.reduce((sum, r) => sum + r.updating, 0) + overview.manual_updates
    : 0;
  return (
    <>
      <h1>{product}</h1>
      <ProductNav org={org} product={product} current="overview" />
      <ErrorAlert message={error} />
      {overview === null && error === null && <p>Loading…</p>}
      {overview !== null && counts && (
        <>
          <div class="as-of">
            <LiveBadge state={state} />
            <p>As of {asOf?.toLocaleTimeString()}.</p>
            <button type="button" class="secondary" onClick={() => setReloads((n) => n + 1)}>
              Refresh
            </button>
          </div>
          <section aria-labelledby="overview-devices">
            <h2 id="overview-devices">Devices</h2>
            <dl class="tiles">
              <div>
                <dt>Connected now</dt>
                <dd>
                  <Link href={`${devices}?connection=connected`}>{number(counts.connected)}</Link>{' '}
                  <span class="hint">
                    of {number(counts.total)} ({percent(counts.connected, counts.total)} %)
                  </span>
                </dd>
              </div>
              <div>
                <dt>Disconnected</dt>
                <dd>
                  <Link href={`${devices}?connection=disconnected`}>{number(counts.disconnected)}</Link>
                </dd>
              </div>
              <div>
                <dt>Never connected</dt>
                <dd>
                  <Link href={`${devices}?connection=not_seen`}>{number(counts.not_seen)}</Link>
                </dd>
              </div>
              <div>
                <dt>With health alarms</dt>
                <dd>
                  <Link href={`${devices}?alarm_status=with`}>{number(overview.health_alarms.devices)}</Link>
                </dd>
              </div>
              <div>
                <dt>Updates in flight</dt>
                <dd>{number(inFlight)}</dd>
              </div>
            </dl>
          </section>

          <section aria-labelledby="overview-history">
            <h2 id="overview-history">Connected over time</h2>
            <div class="range">
              <label for="overview-range">Range</label>
              <select
                id="overview-range"
                value={String(hours)}
                onChange={(event) => {
                  const next = event.currentTarget.value;
                  navigate(next === '24' ? base : `${base}?hours=${next}`);
                }}
              >
                {RANGES.map((r) => (
                  <option key={r.hours} value={String(r.hours)}>
                    {r.label}
                  </option>
                ))}
              </select>
            </div>
            <figure>
              {Chart !== null && points.length > 0 && (
                <Chart
                  points={points}
                  from={Date.parse(overview.connected_history.from)}
                  to={asOf?.getTime() ?? Date.now()}
                />
              )}
              <figcaption id="overview-history-text">{describe(points, range)}</figcaption>
            </figure>
            {points.length > 0 && (
              <details>
                <summary>
                  The numbers ({points.length} point{points.length === 1 ? '' : 's'})
                </summary>
                <table>
                  <caption class="visually-hidden">Connected devices over the {range}</caption>
                  <thead>
                    <tr>
                      <th scope="col">From</th>
                      <th scope="col">Connected</th>
                      <th scope="col">Devices</th>
                    </tr>
                  </thead>
                  <tbody>
                    {points.map((p) => (
                      <tr key={p.at}>
                        <th scope="row">{time(p.at)}</th>
                        <td>{number(p.connected)}</td>
                        <td>{number(p.total)}</td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              </details>
            )}
          </section>

          <section aria-labelledby="overview-firmware">
            <h2 id="overview-firmware">Firmware versions</h2>
            {overview.firmware.versions.length === 0 ? (
              <p>No device has reported a firmware version yet.</p>
            ) : (
              <table class="bars">
                <caption class="visually-hidden">Devices per firmware version</caption>
                <thead>
                  <tr>
                    <th scope="col">Version</th>
                    <th scope="col">Devices</th>
                    <th scope="col">Share</th>
                  </tr>
                </thead>
                <tbody>
                  {overview.firmware.versions.map((v) => (
                    <tr key={v.version}>
                      <th scope="row">
                        <Link href={`${devices}?firmware_version=${encodeURIComponent(v.version)}`}>
                          {v.version}
                        </Link>
                      </th>
                      <td>{number(v.devices)}</td>
                      <td>
                        <Bar share={percent(v.devices, counts.total)} />
                        {percent(v.devices, counts.total)} %
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
            {overview.firmware.other_versions > 0 && (
              <p>
                Other versions: {number(overview.firmware.other_devices)} devices on{' '}
                {number(overview.firmware.other_versions)} more versions.
              </p>
            )}
            {overview.firmware.unknown > 0 && (
              <p>No version reported yet: {number(overview.firmware.unknown)} devices.</p>
            )}
          </section>

          <section aria-labelledby="overview-rollouts">
            <h2 id="overview-rollouts">Rollouts in progress</h2>
            {overview.rollouts.length === 0 ? (
              <p>No deployment group has an update in flight.</p>
            ) : (
              <table>
                <caption class="visually-hidden">Deployment groups with updates in flight</caption>
                <thead>
                  <tr>
                    <th scope="col">Deployment group</th>
                    <th scope="col">Firmware</th>
                    <th scope="col">Updating now</th>
                    <th scope="col">State</th>
                  </tr>
                </thead>
                <tbody>
                  {overview.rollouts.map((r) => (
                    <tr key={r.deployment_group}>
                      <th scope="row">{r.deployment_group}</th>
                      <td>
                        {r.firmware_version ?? '—'}
                        {r.release_number !== null && ` (release ${r.release_number})`}
                      </td>
                      <td>
                        {number(r.updating)} of at most {number(r.concurrent_updates)}
                      </td>
                      <td>
                        {r.paused_reason !== null
                          ? `paused: ${r.paused_reason}`
                          : r.is_active
                            ? 'rolling out'
                            : 'off (finishing updates in flight)'}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
            {overview.manual_updates > 0 && (
              <p>Manual upgrades in flight: {number(overview.manual_updates)}.</p>
            )}
          </section>

          <section aria-labelledby="overview-alarms">
            <h2 id="overview-alarms">Devices with health alarms</h2>
            {overview.health_alarms.devices === 0 ? (
              <p>No device reports an active alarm.</p>
            ) : (
              <>
                <ul class="alarmed">
                  {overview.health_alarms.first.map((a) => (
                    <li key={a.identifier}>
                      <Link href={`${devices}/${seg(a.identifier)}`}>{a.identifier}</Link>: {a.alarm_count}{' '}
                      alarm{a.alarm_count === 1 ? '' : 's'} ({a.status})
                    </li>
                  ))}
                </ul>
                {overview.health_alarms.devices > overview.health_alarms.first.length && (
                  <p>
                    <Link href={`${devices}?alarm_status=with`}>
                      All {number(overview.health_alarms.devices)} devices with alarms
                    </Link>
                  </p>
                )}
              </>
            )}
          </section>
        </>
      )}
    </>
  );
}
