import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { InstanceBus } from '../database/instance-bus/instance-bus';
import { CaTrustSet, type TrustedCa } from './ca-trust';
import { CA_CHANGES_CHANNEL } from './ca-certificates.repository';
import { CertificateAuthRepository } from './certificate-auth.repository';
import { parseCertificate } from './x509';

/** Reloaded this often whatever the notifications say (a backstop: a notification can be lost with its connection). */
const RELOAD_INTERVAL_MS = 5 * 60_000;

/**
 * The registered CA certificates of every organization, in memory, for the device socket: loaded at start, and
 * reloaded when a CA is registered or deleted on any instance (the `ca_certificates_changed` notification, sent in
 * the registration's or deletion's transaction), when the instance bus reconnects (notifications may have been
 * missed), every five minutes, and on demand when a connection shows that the database knows a CA this set does not.
 * Only loaded when certificate authentication is on (the mTLS listener or the proxy mode).
 */
@Injectable()
export class CaTrustStore implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('DeviceCertificates');
  private current = CaTrustSet.empty();
  private loading: Promise<void> | null = null;
  private again = false;
  private timer: NodeJS.Timeout | null = null;
  readonly enabled: boolean;

  constructor(
    private readonly repository: CertificateAuthRepository,
    bus: InstanceBus,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    this.enabled = config.deviceTls !== null || config.deviceCertProxy !== null;
    if (!this.enabled) return;
    bus.subscribe(CA_CHANGES_CHANNEL, () => this.reloadInBackground());
    bus.onStateChange((listening) => {
      if (listening) this.reloadInBackground();
    });
  }

  async onModuleInit(): Promise<void> {
    if (!this.enabled) return;
    await this.reload();
    this.timer = setInterval(() => this.reloadInBackground(), RELOAD_INTERVAL_MS);
    this.timer.unref();
  }

  onApplicationShutdown(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** The trust set as last loaded. */
  get set(): CaTrustSet {
    return this.current;
  }

  /**
   * Loads the CAs again. Calls during a load are coalesced into one more load after it (which sees every change
   * committed before they were made).
   */
  reload(): Promise<void> {
    if (this.loading) {
      this.again = true;
      return this.loading;
    }
    this.loading = (async () => {
      try {
        do {
          this.again = false;
          this.current = await this.load();
        } while (this.again);
      } finally {
        this.loading = null;
      }
    })();
    return this.loading;
  }

  private reloadInBackground(): void {
    this.reload().catch((err: unknown) => this.logger.warn({ err }, 'loading the CA certificates failed'));
  }

  private async load(): Promise<CaTrustSet> {
    const cas: TrustedCa[] = [];
    for (const row of await this.repository.allCas()) {
      const cert = parseCertificate(row.der);
      if (typeof cert === 'string') {
        this.logger.warn({ ca: row.serial, org: row.org_id }, 'a registered CA certificate cannot be read');
        continue;
      }
      cas.push({
        id: String(row.id),
        orgId: String(row.org_id),
        serial: row.serial,
        cert,
        jitp:
          row.jitp_product_id === null
            ? null
            : {
                productId: String(row.jitp_product_id),
                tags: row.jitp_tags,
                description: row.jitp_description,
              },
      });
    }
    return new CaTrustSet(cas);
  }
}
