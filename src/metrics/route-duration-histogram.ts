import type { Request } from 'express';
import type { Metric, Registry } from 'prom-client';

/** Route label for requests that matched no route (404s), so that raw paths never become labels. */
export const UNMATCHED_ROUTE = '<unmatched>';

interface Series {
  labels: { route: string; method: string; status: string };
  /** Observations per bucket (not cumulative); the last slot is above the largest bound. */
  counts: number[];
  sum: number;
  count: number;
}

interface Sample {
  labels: Record<string, string | number>;
  sharedLabels?: Record<string, string>;
  value: number;
  metricName: string;
}

/**
 * A Prometheus histogram of request durations by route template, method and status, written as prom-client's
 * Histogram writes it (`_bucket` with `le`, `_sum`, `_count`), but observed without building and hashing a label
 * object per request: the series are found by route (the object Express matched), then method, then status code,
 * in maps. prom-client's `observe(labels, value)` validated and hashed the labels on
 * every request, a part of what fleethub adds per request (bench/README.md §1). Registered in a prom-client
 * registry, which renders it with the others.
 */
export class RouteDurationHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  /** By route (Express's route object; the map itself for requests that matched none), method, status. */
  private readonly series = new Map<object, Map<string, Map<number, Series>>>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly buckets: readonly number[],
    registry: Registry,
  ) {
    registry.registerMetric(this as unknown as Metric);
  }

  /**
   * One request's duration, labelled by the route template Express matched (`/api/orgs/:org_name/products`),
   * never by the raw path, so that the number of label values stays bounded.
   */
  observe(req: Request, status: number, seconds: number): void {
    const route = req.route as { path?: unknown } | undefined;
    // Nest answers unknown paths from a catch-all route (`/{*path}`): no route of the API has a wildcard.
    const matched = route !== undefined && typeof route.path === 'string' && !route.path.includes('*');
    const routeKey: object = matched ? route : this.series;
    const method = req.method;
    let byMethod = this.series.get(routeKey);
    if (byMethod === undefined)
      this.series.set(routeKey, (byMethod = new Map<string, Map<number, Series>>()));
    let byStatus = byMethod.get(method);
    if (byStatus === undefined) byMethod.set(method, (byStatus = new Map<number, Series>()));
    let series = byStatus.get(status);
    if (series === undefined) {
      series = {
        labels: {
          route: matched ? `${req.baseUrl}${route.path as string}` : UNMATCHED_ROUTE,
          method,
          status: String(status),
        },
        counts: new Array<number>(this.buckets.length + 1).fill(0),
        sum: 0,
        count: 0,
      };
      byStatus.set(status, series);
    }
    let bucket = 0;
    while (bucket < this.buckets.length && seconds > this.buckets[bucket]) bucket++;
    series.counts[bucket]++;
    series.sum += seconds;
    series.count++;
  }

  /** prom-client's rendering (Registry.metrics) reads this. */
  getForPromString(): { name: string; help: string; type: string; values: Sample[]; aggregator: string } {
    const values: Sample[] = [];
    const bucketName = `${this.name}_bucket`;
    for (const byMethod of this.series.values()) {
      for (const byStatus of byMethod.values()) {
        for (const series of byStatus.values()) {
          let cumulative = 0;
          for (let i = 0; i < this.buckets.length; i++) {
            cumulative += series.counts[i];
            values.push({
              labels: { le: this.buckets[i] },
              sharedLabels: series.labels,
              value: cumulative,
              metricName: bucketName,
            });
          }
          values.push(
            {
              labels: { le: '+Inf' },
              sharedLabels: series.labels,
              value: series.count,
              metricName: bucketName,
            },
            { labels: {}, sharedLabels: series.labels, value: series.sum, metricName: `${this.name}_sum` },
            {
              labels: {},
              sharedLabels: series.labels,
              value: series.count,
              metricName: `${this.name}_count`,
            },
          );
        }
      }
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  /** prom-client's JSON (Registry.getMetricsAsJSON): the series' labels merged into each sample's. */
  get(): ReturnType<RouteDurationHistogram['getForPromString']> {
    const metric = this.getForPromString();
    metric.values = metric.values.map(({ labels, sharedLabels, ...sample }) => ({
      ...sample,
      labels: { ...labels, ...sharedLabels },
    }));
    return metric;
  }

  reset(): void {
    this.series.clear();
  }
}
