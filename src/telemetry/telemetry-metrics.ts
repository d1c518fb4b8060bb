import { Injectable } from '@nestjs/common';
import { Counter } from 'prom-client';
import { MetricsService } from '../metrics/metrics.service';

/** Why a device's report was not stored. */
export type DropReason = 'malformed' | 'rate_limited' | 'buffer_full' | 'write_failed' | 'refused';

/** Prometheus counters of what devices report through the `extensions` channel. */
@Injectable()
export class TelemetryMetrics {
  private readonly received: Counter<'extension'>;
  private readonly dropped: Counter<'extension' | 'reason'>;

  constructor(metrics: MetricsService) {
    this.received = new Counter({
      name: 'fleethub_device_reports_received_total',
      help: 'Reports received from devices through the extensions channel, by extension',
      labelNames: ['extension'],
      registers: [metrics.registry],
    });
    this.dropped = new Counter({
      name: 'fleethub_device_reports_dropped_total',
      help: 'Reports (or log lines, identity entries) from devices not stored, by extension and reason',
      labelNames: ['extension', 'reason'],
      registers: [metrics.registry],
    });
  }

  receivedReport(extension: string, count = 1): void {
    this.received.inc({ extension }, count);
  }

  droppedReport(extension: string, reason: DropReason, count = 1): void {
    this.dropped.inc({ extension, reason }, count);
  }
}
