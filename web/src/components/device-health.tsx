import { useEffect, useRef, useState } from 'preact/hooks';
import { api, errorText } from '../api/client';
import type { components } from '../api/schema';
import type { MetricSeries } from '../lazy/metrics-chart';
import { ErrorAlert } from './alert';

type Health = components['schemas']['DeviceHealthView'];
type Metric = components['schemas']['HealthMetricView'];

/** Metrics charted (the first ones by name); the table lists every one. */
const CHARTED = 6;

function seriesOf(metrics: Metric[]): MetricSeries[] {
  const byKey = new Map<string, Metric[]>();
  for (const metric of metrics) {
    const list = byKey.get(metric.key) ?? [];
    list.push(metric);
    byKey.set(metric.key, list);
  }
  return [...byKey.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([key, list]) => {
      const ascending = [...list].sort((a, b) => a.reported_at.localeCompare(b.reported_at));
      return {
        key,
        times: ascending.map((m) => Date.parse(m.reported_at) / 1000),
        values: ascending.map((m) => m.value),
      };
    });
}

/** A chart of one metric, drawn by uPlot (loaded with the device page only). */
function Chart({ series }: { series: MetricSeries }) {
  const host = useRef<HTMLDivElement>(null);
  useEffect(() => {
    let remove: (() => void) | null = null;
    let gone = false;
    void import('../lazy/metrics-chart').then(({ drawMetric }) => {
      if (gone || !host.current) return;
      remove = drawMetric(host.current, series, Math.min(640, host.current.clientWidth || 640));
    });
    return () => {
      gone = true;
      remove?.();
    };
  }, [series]);
  const last = series.values.at(-1);
  return (
    <figure class="chart">
      <figcaption>
        {series.key}: latest {last ?? '—'} (min {Math.min(...series.values)}, max {Math.max(...series.values)}
        , {series.values.length} reports)
      </figcaption>
      <div ref={host} role="img" aria-label={`Chart of ${series.key} over time`} />
    </figure>
  );
}

const when = (timestamp: string | null) =>
  timestamp === null ? 'never' : new Date(timestamp).toLocaleString();

/** The device's health: the latest report's status, alarms and metrics, its metrics over time, its location. */
export function DeviceHealth(props: { org: string; product: string; identifier: string }) {
  const { org, product, identifier } = props;
  const [health, setHealth] = useState<Health | null>(null);
  const [series, setSeries] = useState<MetricSeries[]>([]);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    let newest = true;
    const path = { org_name: org, product_name: product, identifier };
    void Promise.all([
      api.GET('/api/orgs/{org_name}/products/{product_name}/devices/{identifier}/health', {
        params: { path },
      }),
      api.GET('/api/orgs/{org_name}/products/{product_name}/devices/{identifier}/health/metrics', {
        params: { path, query: { limit: 2000 } },
      }),
    ]).then(([shown, history]) => {
      if (!newest) return;
      if (shown.data) setHealth(shown.data.data);
      else setError(errorText(shown.error, shown.response.status));
      if (history.data) setSeries(seriesOf(history.data.data));
    });
    return () => {
      newest = false;
    };
  }, [org, product, identifier]);

  const report = (health?.report ?? {}) as {
    alarms?: Record<string, unknown>;
    metrics?: Record<string, unknown>;
  };
  const alarms = Object.entries(report.alarms ?? {});
  const metrics = Object.entries(report.metrics ?? {});
  const location = health?.location as
    | {
        latitude?: number;
        longitude?: number;
        accuracy?: number;
        source?: string;
        error_description?: string;
      }
    | null
    | undefined;
  return (
    <>
      <section aria-labelledby="health-heading">
        <h2 id="health-heading">Health</h2>
        <ErrorAlert message={error} />
        {health !== null && (
          <>
            <p>
              Status <strong class={`health ${health.status}`}>{health.status}</strong>, reported{' '}
              {when(health.reported_at)}.
            </p>
            <h3>Alarms</h3>
            {alarms.length === 0 ? (
              <p class="hint">No active alarm.</p>
            ) : (
              <ul class="alarms">
                {alarms.map(([name, value]) => (
                  <li key={name}>
                    <strong>{name}</strong> {typeof value === 'string' ? value : JSON.stringify(value)}
                  </li>
                ))}
              </ul>
            )}
            {metrics.length > 0 && (
              <table class="metrics">
                <caption>Latest metrics</caption>
                <thead>
                  <tr>
                    <th scope="col">Metric</th>
                    <th scope="col">Value</th>
                  </tr>
                </thead>
                <tbody>
                  {metrics.map(([key, value]) => (
                    <tr key={key}>
                      <th scope="row">{key}</th>
                      <td>{String(value)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </>
        )}
        {series.length > 0 && (
          <div class="charts">
            {series.slice(0, CHARTED).map((s) => (
              <Chart key={s.key} series={s} />
            ))}
          </div>
        )}
        {health !== null && series.length === 0 && <p class="hint">No metrics reported yet.</p>}
      </section>
      <section aria-labelledby="location-heading">
        <h2 id="location-heading">Location</h2>
        {location && typeof location.latitude === 'number' && typeof location.longitude === 'number' ? (
          <p>
            {location.latitude.toFixed(5)}, {location.longitude.toFixed(5)}
            {typeof location.accuracy === 'number' && ` (±${location.accuracy} m)`}
            {location.source && `, from ${location.source}`}, updated{' '}
            {when(health?.location_updated_at ?? null)}.
          </p>
        ) : (
          <p class="hint">
            {location?.error_description ? `Not resolved: ${location.error_description}` : 'Not reported.'}
          </p>
        )}
      </section>
    </>
  );
}
