import { type BeforeApplicationShutdown, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { Transactions } from '../database/transactions';
import type { OutboxEvent } from '../webhooks/webhook-event-types';
import { WebhookOutbox } from '../webhooks/webhook-outbox';
import { BatchWriter } from './batch-writer';
import {
  type AlarmChange,
  DeviceHealthRepository,
  type NewHealthReport,
  type NewLocation,
  type NewMetric,
} from './device-health.repository';
import { DeviceLogsRepository, type NewLogLine } from './device-logs.repository';
import { LogRateLimit } from './log-rate-limit';
import { NetworkIdentitiesService, type ReportingDevice } from './network-identities.service';
import {
  alarmsOf,
  alarmTransitions,
  Malformed,
  parseHealthReport,
  parseLocation,
  parseLogLine,
  type ParsedLogLine,
} from './report-payloads';
import { type DropReason, TelemetryMetrics } from './telemetry-metrics';
import { TelemetryPartitions } from './telemetry-partitions';

/** Writes are batched: at most this long after the first item, or at once for a batch this large. */
export const FLUSH_MS = 100;
export const LOG_BATCH = 2000;
/** Log lines waiting beyond this many are dropped (counted), so that a slow database never exhausts memory. */
export const MAX_PENDING_LOG_LINES = 200_000;
const MAX_PENDING_REPORTS = 50_000;
const PRUNE_INTERVAL_MS = 60_000;

/** The newest item of each device (a batch upsert may touch a row only once). */
function newestPerDevice<T extends { deviceId: string }>(items: readonly T[]): T[] {
  return [...new Map(items.map((item) => [item.deviceId, item])).values()];
}

/**
 * `health.alarm_raised` / `health.alarm_cleared`: one per alarm that appeared in, or left, a device's report
 * (compared with its previous report, as `upsertReports` read it). Reports that repeat the same alarms send none.
 */
function alarmEvents(changes: readonly AlarmChange[], reports: readonly NewHealthReport[]): OutboxEvent[] {
  const byDevice = new Map(reports.map((r) => [String(r.deviceId), r]));
  const events: OutboxEvent[] = [];
  for (const change of changes) {
    const report = byDevice.get(change.device_id);
    const now = alarmsOf(report?.alarmCount ? report.report.alarms : undefined);
    const { raised, cleared } = alarmTransitions(alarmsOf(change.previous), now);
    const event = (type: string, [alarm, description]: [string, string | null]): OutboxEvent => ({
      orgId: change.org_id,
      type,
      product: change.product,
      subject: `device:${change.identifier}`,
      data: {
        identifier: change.identifier,
        product: change.product,
        alarm,
        description,
        active_alarms: now.size,
        actor: { type: 'system' },
      },
    });
    for (const alarm of cleared) events.push(event('health.alarm_cleared', alarm));
    for (const alarm of raised) events.push(event('health.alarm_raised', alarm));
  }
  return events;
}

/**
 * What devices report through `health`, `geo` and `logging` (and the identity entries of `network_identity` that
 * are not iroh's), as the device gateway hands it over: checked (a malformed payload is logged, counted and
 * ignored), rate limited (log lines, per device, as NervesHub) and written in batches, never on the device's turn.
 */
@Injectable()
export class DeviceReportsService implements OnModuleInit, BeforeApplicationShutdown {
  private readonly logger = new Logger('DeviceTelemetry');
  private readonly rateLimit = new LogRateLimit();
  private pruneTimer: NodeJS.Timeout | null = null;
  readonly logLines: BatchWriter<NewLogLine>;
  private readonly reports: BatchWriter<NewHealthReport>;
  private readonly metricValues: BatchWriter<NewMetric>;
  private readonly locations: BatchWriter<NewLocation>;

  constructor(
    logs: DeviceLogsRepository,
    health: DeviceHealthRepository,
    private readonly networkIdentities: NetworkIdentitiesService,
    private readonly partitions: TelemetryPartitions,
    private readonly metrics: TelemetryMetrics,
    transactions: Transactions,
    outbox: WebhookOutbox,
  ) {
    const failed = (extension: string) => (count: number) =>
      this.metrics.droppedReport(extension, 'write_failed', count);
    this.logLines = new BatchWriter({
      name: 'device log lines',
      write: (lines) => logs.insertBatch(lines),
      flushMs: FLUSH_MS,
      maxBatch: LOG_BATCH,
      maxPending: MAX_PENDING_LOG_LINES,
      onFailure: failed('logging'),
    });
    this.reports = new BatchWriter({
      name: 'health reports',
      // A batch and the webhook events of the alarms it raises or clears commit together.
      write: (reports) =>
        transactions.run(async (tx) => {
          const batch = newestPerDevice(reports);
          const changes = await health.upsertReports(batch, tx);
          if (changes.length > 0) await outbox.emitMany(tx, alarmEvents(changes, batch));
        }),
      flushMs: FLUSH_MS,
      maxBatch: 1000,
      maxPending: MAX_PENDING_REPORTS,
      onFailure: failed('health'),
    });
    this.metricValues = new BatchWriter({
      name: 'health metrics',
      write: (values) => health.insertMetrics(values),
      flushMs: FLUSH_MS,
      maxBatch: 5000,
      maxPending: MAX_PENDING_LOG_LINES,
      onFailure: failed('health'),
    });
    this.locations = new BatchWriter({
      name: 'locations',
      write: (locations) => health.upsertLocations(newestPerDevice(locations)),
      flushMs: FLUSH_MS,
      maxBatch: 1000,
      maxPending: MAX_PENDING_REPORTS,
      onFailure: failed('geo'),
    });
  }

  onModuleInit(): void {
    this.pruneTimer = setInterval(() => this.rateLimit.prune(), PRUNE_INTERVAL_MS);
    this.pruneTimer.unref();
  }

  /** Stopping: what is queued is written before the database pool closes. */
  async beforeApplicationShutdown(): Promise<void> {
    if (this.pruneTimer) clearInterval(this.pruneTimer);
    await Promise.all([this.logLines, this.reports, this.metricValues, this.locations].map((w) => w.flush()));
  }

  /** Everything queued so far is written (tests and the benchmark wait on it). */
  async flush(): Promise<void> {
    await Promise.all([this.logLines, this.reports, this.metricValues, this.locations].map((w) => w.flush()));
  }

  /** `logging:send`: one log line. The line as it is stored, or null when it is dropped or malformed. */
  logLine(device: ReportingDevice, payload: unknown): ParsedLogLine | null {
    this.metrics.receivedReport('logging');
    if (!this.rateLimit.hit(device.deviceId)) {
      this.drop('logging', 'rate_limited');
      return null;
    }
    const now = new Date();
    const line = parseLogLine(payload, now, this.partitions.earliest(now));
    if (line instanceof Malformed) {
      this.malformed(device, 'logging', line);
      return null;
    }
    if (!this.logLines.add({ deviceId: device.deviceId, ...line })) {
      this.drop('logging', 'buffer_full');
      return null;
    }
    return line;
  }

  /** `health:report`: the latest report replaces the device's previous one; its metrics join the history. */
  healthReport(device: ReportingDevice, payload: unknown): void {
    this.metrics.receivedReport('health');
    const report = parseHealthReport(payload);
    if (report instanceof Malformed) return this.malformed(device, 'health', report);
    const reportedAt = new Date();
    if (
      !this.reports.add({
        deviceId: device.deviceId,
        reportedAt,
        status: report.status,
        statusReasons: report.statusReasons,
        alarmCount: report.alarmCount,
        report: report.report,
        fleetMetrics: report.fleetMetrics,
      })
    ) {
      return this.drop('health', 'buffer_full');
    }
    for (const [key, value] of Object.entries(report.metrics)) {
      this.metricValues.add({ deviceId: device.deviceId, reportedAt, key, value });
    }
  }

  /** `geo:location:update`: the device's location (or the error it got resolving it). */
  location(device: ReportingDevice, payload: unknown): void {
    this.metrics.receivedReport('geo');
    const location = parseLocation(payload);
    if (location instanceof Malformed) return this.malformed(device, 'geo', location);
    if (!this.locations.add({ deviceId: device.deviceId, location, at: new Date() }))
      this.drop('geo', 'buffer_full');
  }

  /** `network_identity:report`: the entries of services other than iroh (IrohClaimsService has the iroh ones). */
  async identities(device: ReportingDevice, payload: Record<string, unknown>): Promise<void> {
    this.metrics.receivedReport('network_identity');
    if (!Array.isArray(payload.identities)) {
      return this.malformed(device, 'network_identity', new Malformed('identities is not a list'));
    }
    await this.networkIdentities.reportDeviceIdentities(device, payload.identities);
  }

  private malformed(device: ReportingDevice, extension: string, problem: Malformed): void {
    this.logger.warn(
      { device: device.identifier, extension, problem: problem.reason },
      'malformed report ignored',
    );
    this.drop(extension, 'malformed');
  }

  private drop(extension: string, reason: DropReason): void {
    this.metrics.droppedReport(extension, reason);
  }
}
