import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { Transactions, type Tx } from '../database/transactions';
import type { OutboxEvent } from '../webhooks/webhook-event-types';
import { WebhookOutbox } from '../webhooks/webhook-outbox';
import { CaCertificatesRepository } from './ca-certificates.repository';
import { DeviceCertificatesRepository } from './device-certificates.repository';

/** How often each instance scans (and once when it starts). */
export const EXPIRY_SCAN_INTERVAL_MS = 3_600_000;
/** Certificates claimed and announced per transaction. */
export const EXPIRY_SCAN_BATCH = 1000;

const DAY_MS = 86_400_000;
const SYSTEM = { type: 'system' };

/**
 * `certificate.expiring`: every hour (and at start) each instance claims the device and CA certificates that expire
 * within FLEETHUB_WEBHOOK_CERT_EXPIRY_DAYS and were not announced yet, marks them announced and writes their events,
 * in batches of EXPIRY_SCAN_BATCH (one transaction each: a claim statement and one outbox statement). Claims use
 * SKIP LOCKED and the mark, so instances scanning at once, or a scan run twice, announce each certificate once.
 * Certificates already expired when first seen are not announced (the event says "soon").
 */
@Injectable()
export class CertificateExpiryScanner implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger(CertificateExpiryScanner.name);
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<number> | null = null;

  constructor(
    private readonly deviceCertificates: DeviceCertificatesRepository,
    private readonly caCertificates: CaCertificatesRepository,
    private readonly transactions: Transactions,
    private readonly outbox: WebhookOutbox,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.scanLogged(), EXPIRY_SCAN_INTERVAL_MS);
    this.timer.unref();
    void this.scanLogged();
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.running?.catch(() => undefined);
  }

  /** One scan (a scan already running on this instance is joined). The number of certificates announced. */
  scan(): Promise<number> {
    this.running ??= this.scanAll().finally(() => (this.running = null));
    return this.running;
  }

  private async scanLogged(): Promise<void> {
    try {
      const announced = await this.scan();
      if (announced > 0) this.logger.log(`certificate.expiring written for ${announced} certificate(s)`);
    } catch (err) {
      this.logger.warn({ err }, 'certificate expiry scan failed');
    }
  }

  private async scanAll(): Promise<number> {
    const days = this.config.webhooks.certExpiryDays;
    let announced = 0;
    const batches = [(tx: Tx) => this.deviceBatch(days, tx), (tx: Tx) => this.caBatch(days, tx)];
    for (const batch of batches) {
      for (;;) {
        const count = await this.transactions.run(batch);
        announced += count;
        if (count < EXPIRY_SCAN_BATCH) break;
      }
    }
    return announced;
  }

  private async deviceBatch(days: number, tx: Tx): Promise<number> {
    const rows = await this.deviceCertificates.claimExpiring(days, EXPIRY_SCAN_BATCH, tx);
    const events = rows.map((row): OutboxEvent => ({
      orgId: row.org_id,
      type: 'certificate.expiring',
      product: row.product,
      subject: `device:${row.identifier}`,
      data: {
        kind: 'device',
        identifier: row.identifier,
        product: row.product,
        serial: row.serial,
        fingerprint: row.fingerprint,
        not_after: row.not_after.toISOString(),
        days_left: daysLeft(row.not_after),
        description: null,
        actor: SYSTEM,
      },
    }));
    await this.outbox.emitMany(tx, events);
    return rows.length;
  }

  private async caBatch(days: number, tx: Tx): Promise<number> {
    const rows = await this.caCertificates.claimExpiring(days, EXPIRY_SCAN_BATCH, tx);
    const events = rows.map((row): OutboxEvent => ({
      orgId: row.org_id,
      type: 'certificate.expiring',
      product: null,
      subject: `ca_certificate:${row.serial}`,
      data: {
        kind: 'ca',
        identifier: null,
        product: null,
        serial: row.serial,
        fingerprint: null,
        not_after: row.not_after.toISOString(),
        days_left: daysLeft(row.not_after),
        description: row.description,
        actor: SYSTEM,
      },
    }));
    await this.outbox.emitMany(tx, events);
    return rows.length;
  }
}

function daysLeft(notAfter: Date): number {
  return Math.max(0, Math.floor((notAfter.getTime() - Date.now()) / DAY_MS));
}
