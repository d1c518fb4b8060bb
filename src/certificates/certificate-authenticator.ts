import { createHash, timingSafeEqual, type X509Certificate } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import {
  type BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import { Counter } from 'prom-client';
import { AuditService } from '../audit/audit.service';
import { LocalWindows } from '../common/http/rate-limiter';
import { APP_CONFIG, type AppConfig, type DeviceCertProxyConfig } from '../config/config';
import { Transactions } from '../database/transactions';
import { type AuthenticatedDevice, DeviceAuthenticator } from '../device-auth/device-authenticator';
import { DeviceRecordsService } from '../devices/device-records.service';
import { DEVICE_IDENTIFIER_PATTERN } from '../devices/dto/device.dto';
import { MetricsService } from '../metrics/metrics.service';
import {
  type CaTrustSet,
  type ChainFailure,
  type ChainResult,
  parsePresented,
  type TrustedCa,
} from './ca-trust';
import { CaTrustStore } from './ca-trust.store';
import { CertificateAuthRepository, type DeviceRow, type KeyHolders } from './certificate-auth.repository';
import { DeviceCertificatesRepository, newDeviceCertificate } from './device-certificates.repository';
import {
  parseCertificate,
  type ParsedCertificate,
  presentedCertificate,
  type PresentedCertificate,
} from './x509';

/** Why a device's certificate was refused (the label of `fleethub_device_certificate_refusals_total`). */
export type CertificateRefusal =
  | 'rate_limited'
  | 'busy'
  | 'tls_error'
  | 'no_certificate'
  | 'unreadable'
  | 'expired'
  | 'not_yet_valid'
  | ChainFailure
  | 'leaf_is_ca'
  | 'missing_common_name'
  | 'invalid_identifier'
  | 'device_not_registered'
  | 'device_in_other_org'
  | 'key_of_another_device'
  | 'unexpected_public_key'
  | 'registration_conflict'
  | 'proxy_secret';

/** A presented certificate read and judged in memory, before any database work. */
export interface InspectedCertificate {
  /** Read lightly: the full reading happens only when the certificate is registered. */
  leaf: PresentedCertificate;
  presented: ParsedCertificate[];
  chain: ChainResult;
  /** The trust set the chain was judged against. */
  trust: CaTrustSet;
}

/**
 * At most this many refused certificate authentications per minute per source address (as NH1's failures); over
 * it, the address's connections are closed before their TLS handshake until the window ends. Refusals because the
 * server is busy are not counted.
 */
export const CERTIFICATE_FAILURE_LIMIT = 20;
export const CERTIFICATE_FAILURE_WINDOW_MS = 60_000;
const MAX_COUNTED_ADDRESSES = 50_000;
/** `last_used` of certificates and CAs is written at most this often, in one statement for all of them. */
export const LAST_USED_FLUSH_MS = 10_000;
/** The header a TLS terminator proves itself with (proxy mode). */
export const PROXY_SECRET_HEADER = 'x-fleethub-proxy-secret';
/** Longest certificate header accepted (a device certificate and a few intermediates in PEM, URL-encoded). */
const MAX_PROXIED_HEADER_CHARS = 32 * 1024;
/** At most this many certificates in the header (the device's and its intermediates). */
const MAX_PROXIED_CERTIFICATES = 6;

/**
 * What `lookUp` found by reading: the device of a registered certificate, or a certificate to register through a CA
 * once the device has proven it holds the key.
 */
export type CertificateLookup =
  | { kind: 'registered'; device: AuthenticatedDevice; certificateId: string; caId: string | null }
  | { kind: 'register'; cert: ParsedCertificate; ca: TrustedCa; identifier: string };

/** The device rules of a registration through a CA: the device exists in the CA's organization, or JITP creates it. */
function registrationRefusal(device: DeviceRow | null, ca: TrustedCa): CertificateRefusal | null {
  if (!device) return ca.jitp ? null : 'device_not_registered';
  return String(device.org_id) === ca.orgId ? null : 'device_in_other_org';
}

/**
 * NervesHub's key rules of a registration through a CA: no other device holds the key, and a device that has
 * certificates gets one only for a key it holds (a renewal). `created`: the device is new (JITP).
 */
function keyRefusal(keys: KeyHolders, created: boolean): CertificateRefusal | null {
  if (keys.otherDevice) return 'key_of_another_device';
  if (!created && keys.deviceHasCertificates && !keys.deviceHasKey) return 'unexpected_public_key';
  return null;
}

/** Thrown inside the registration transaction to roll it back with a refusal. */
class Refused extends Error {
  constructor(readonly reason: CertificateRefusal) {
    super(reason);
  }
}

const digest = (value: string) => createHash('sha256').update(value).digest();

/**
 * The DER certificates of a proxy's header: URL-encoded PEM (nginx `$ssl_client_escaped_cert`, AWS ALB), PEM with its
 * line breaks turned into spaces or tabs (as some proxies pass it), or base64 of the DER (HAProxy
 * `%[ssl_c_der,base64]`). The device's certificate first, then any intermediates. Null when it is none of these.
 */
export function readProxiedCertificates(value: string): Buffer[] | null {
  if (value.length === 0 || value.length > MAX_PROXIED_HEADER_CHARS) return null;
  let text = value.trim();
  if (text.includes('%')) {
    try {
      text = decodeURIComponent(text);
    } catch {
      return null;
    }
  }
  const ders: Buffer[] = [];
  if (text.includes('-----BEGIN')) {
    const blocks = text.matchAll(/-----BEGIN CERTIFICATE-----([A-Za-z0-9+/=\s]*?)-----END CERTIFICATE-----/g);
    for (const [, body] of blocks) ders.push(Buffer.from(body.replace(/\s+/g, ''), 'base64'));
  } else if (/^[A-Za-z0-9+/]+={0,2}$/.test(text)) {
    ders.push(Buffer.from(text, 'base64'));
  }
  return ders.length === 0 || ders.length > MAX_PROXIED_CERTIFICATES ? null : ders;
}

/**
 * Authenticates devices by their client certificate (issue #17, part 3), for the mTLS listener (which calls
 * `inspect` and `resolve` right after the TLS handshake, before the connection carries any HTTP) and, as a
 * DeviceAuthenticator, for a TLS terminator's header (proxy mode). A device is:
 *
 * - the device a **registered certificate** belongs to (found by its SHA-256 fingerprint, that exact
 *   certificate), when the certificate is within its validity dates. Registered through the API, the registration
 *   is the trust (any issuer, self-signed included); registered by this socket on a CA's authority, it is trusted
 *   only while that CA vouches for it (chain valid, CA registered and unexpired);
 * - else, a certificate a **registered CA** issued (see CaTrustSet.verify), the device being the one whose
 *   identifier is the certificate subject's first common name, in the CA's organization. A device without a
 *   certificate yet gets this one registered (on the CA's authority); one that has certificates gets it only if it
 *   holds its public key already (a renewal), as NervesHub. With a JITP template, a device that does not exist is
 *   created in the template's product with its tags and description. Both happen exactly once however many
 *   connections race: `ON CONFLICT DO NOTHING` on the identifier and on the certificate, under the public key's
 *   advisory lock that the API's registration takes too.
 *
 * Every refusal is counted (`fleethub_device_certificate_refusals_total{reason}`) and counts against its source
 * address; `last_used` of the certificate and of its CA is written in batches.
 */
@Injectable()
export class CertificateDeviceAuthenticator
  extends DeviceAuthenticator
  implements OnApplicationBootstrap, BeforeApplicationShutdown
{
  private readonly logger = new Logger('DeviceCertificates');
  private readonly failures = new LocalWindows(MAX_COUNTED_ADDRESSES);
  private readonly refusals: Counter<'reason'>;
  private readonly accepted: Counter<'via'>;
  private readonly proxy: DeviceCertProxyConfig | null;
  private readonly proxySecret: Buffer | null;
  private readonly usedCertificates = new Map<string, number>();
  private readonly usedCas = new Map<string, number>();
  private flushTimer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly trust: CaTrustStore,
    private readonly repository: CertificateAuthRepository,
    private readonly certificates: DeviceCertificatesRepository,
    private readonly devices: DeviceRecordsService,
    private readonly transactions: Transactions,
    private readonly audit: AuditService,
    metrics: MetricsService,
    @Inject(APP_CONFIG) config: AppConfig,
  ) {
    super();
    this.proxy = config.deviceCertProxy;
    this.proxySecret = this.proxy ? digest(this.proxy.secret) : null;
    this.refusals = new Counter({
      name: 'fleethub_device_certificate_refusals_total',
      help: 'Device connections refused by certificate authentication (mTLS socket and proxy mode), by reason',
      labelNames: ['reason'],
      registers: [metrics.registry],
    });
    this.accepted = new Counter({
      name: 'fleethub_device_certificate_authentications_total',
      help: "Devices authenticated by certificate: 'registered' certificate, signed by a registered 'ca' (certificate registered now), 'jitp' (device created now)",
      labelNames: ['via'],
      registers: [metrics.registry],
    });
  }

  onApplicationBootstrap(): void {
    if (!this.trust.enabled) return;
    this.flushTimer = setInterval(() => void this.flushUsage(), LAST_USED_FLUSH_MS);
    this.flushTimer.unref();
  }

  async beforeApplicationShutdown(): Promise<void> {
    if (this.flushTimer) clearInterval(this.flushTimer);
    await this.flushUsage();
  }

  /** True when the address has failed too often lately: its connections are refused without any work. */
  limited(address: string, now = Date.now()): boolean {
    return (this.failures.get(address, now)?.hits ?? 0) >= CERTIFICATE_FAILURE_LIMIT;
  }

  /** Counts a refusal (against the address: see below) and logs it at debug level. */
  refuse(address: string, reason: CertificateRefusal, cert?: PresentedCertificate): null {
    this.refusals.inc({ reason });
    // Not against the address: the server's load, the limit itself, and failed handshakes (a TCP health check or
    // port scan behind a load balancer would otherwise lock out every device sharing its address).
    if (reason !== 'busy' && reason !== 'rate_limited' && reason !== 'tls_error') {
      this.failures.hit(address, CERTIFICATE_FAILURE_WINDOW_MS, Date.now());
    }
    this.logger.debug(
      {
        address,
        reason,
        subject: cert?.x509.subject,
        serial: cert?.x509.serialNumber,
        fingerprint: cert?.fingerprint,
      },
      'device certificate refused',
    );
    return null;
  }

  /**
   * What can be decided in memory: the certificate is readable and within its validity dates, and whether a
   * registered CA vouches for it (the chain). `presented`: what the device sent after its certificate.
   */
  inspect(
    leaf: X509Certificate | Buffer,
    presented: readonly Buffer[],
    now = Date.now(),
  ): InspectedCertificate | CertificateRefusal {
    const cert = presentedCertificate(leaf);
    if (!cert) return 'unreadable';
    if (cert.notAfter.getTime() < now) return 'expired';
    if (cert.notBefore.getTime() > now) return 'not_yet_valid';
    const chain = parsePresented(presented.filter((der) => !der.equals(cert.der)));
    const trust = this.trust.set;
    return { leaf: cert, presented: chain, chain: trust.verify(cert, chain, now), trust };
  }

  /**
   * The device an inspected certificate authenticates, or why not (see the class): `lookUp`, then `admit`. Throws only
   * when the database fails.
   */
  async resolve(
    inspected: InspectedCertificate,
    now = Date.now(),
  ): Promise<AuthenticatedDevice | CertificateRefusal> {
    const found = await this.lookUp(inspected, now);
    return typeof found === 'string' ? found : this.admit(found, now);
  }

  /**
   * Everything that can be decided by reading the database: the certificate's registration, the chain against the
   * set loaded now, and for a certificate to register through a CA, the rules the registration will check again
   * (see `registrationRefusal`). Writes nothing and counts nothing, so the mTLS listener calls it inside the TLS
   * handshake, before the device has proven that it holds the certificate's key.
   */
  async lookUp(
    inspected: InspectedCertificate,
    now = Date.now(),
  ): Promise<CertificateLookup | CertificateRefusal> {
    const { leaf, presented } = inspected;
    let { chain } = inspected;
    const { registered, maxCaId } = await this.repository.findRegistered(leaf.fingerprint);
    if (!chain.ok && chain.reason === 'unknown_ca') {
      // The database has a CA this process has not loaded yet (registered a moment ago): load. Judged again when
      // the set is not the one the chain was judged against (a load may also have ended meanwhile).
      if (maxCaId > this.trust.set.maxId) await this.trust.reload();
      if (this.trust.set !== inspected.trust) chain = this.trust.set.verify(leaf, presented, now);
    }
    if (registered) {
      let caId: string | null = null;
      if (registered.ca_certificate_id !== null) {
        if (!chain.ok) return chain.reason;
        if (chain.ca.orgId !== String(registered.org_id)) return 'device_in_other_org';
        caId = chain.ca.id;
      }
      return {
        kind: 'registered',
        certificateId: registered.certificate_id,
        caId,
        device: {
          deviceId: String(registered.device_id),
          identifier: registered.identifier,
          productId: String(registered.product_id),
          orgId: String(registered.org_id),
          registered: false,
        },
      };
    }
    if (!chain.ok) return chain.reason;
    if (leaf.isCa) return 'leaf_is_ca';
    // Registration: the full reading (serial, key identifiers, common name, public key).
    const cert = parseCertificate(leaf.x509);
    if (typeof cert === 'string') return 'unreadable';
    const identifier = cert.commonName;
    if (!identifier) return 'missing_common_name';
    if (!DEVICE_IDENTIFIER_PATTERN.test(identifier)) return 'invalid_identifier';
    const state = await this.repository.registrationState(identifier, cert.publicKeyFingerprint);
    const refusal =
      registrationRefusal(state.device, chain.ca) ?? keyRefusal(state.keys, state.device === null);
    if (refusal) return refusal;
    return { kind: 'register', cert, ca: chain.ca, identifier };
  }

  /**
   * Accepts what `lookUp` found, once the device has proven that it holds the key: a registered certificate's
   * device, or the registration through the CA (JITP included), whose rules are checked again in its transaction.
   * Counts the acceptance and keeps `last_used`.
   */
  async admit(found: CertificateLookup, now = Date.now()): Promise<AuthenticatedDevice | CertificateRefusal> {
    if (found.kind === 'registered') {
      if (found.caId !== null) this.used(this.usedCas, found.caId, now);
      this.used(this.usedCertificates, found.certificateId, now);
      this.accepted.inc({ via: 'registered' });
      return found.device;
    }
    try {
      const device = await this.registerThroughCa(found.cert, found.ca, found.identifier);
      this.used(this.usedCas, found.ca.id, now);
      this.accepted.inc({ via: device.registered ? 'jitp' : 'ca' });
      return device;
    } catch (err) {
      if (err instanceof Refused) return err.reason;
      throw err;
    }
  }

  /** `inspect` and `resolve` with the refusal counted: the device, or null. */
  async authenticateCertificate(
    leaf: X509Certificate | Buffer,
    presented: readonly Buffer[],
    address: string,
    now = Date.now(),
  ): Promise<AuthenticatedDevice | null> {
    if (this.limited(address, now)) return this.refuse(address, 'rate_limited');
    const inspected = this.inspect(leaf, presented, now);
    if (typeof inspected === 'string') return this.refuse(address, inspected);
    const result = await this.resolve(inspected, now);
    return typeof result === 'string' ? this.refuse(address, result, inspected.leaf) : result;
  }

  /**
   * Proxy mode: the device certificate a TLS terminator verified and passed in its header, with the shared secret.
   * A request without either header is not this authenticator's (null; see `claims`).
   */
  async authenticate(
    headers: IncomingHttpHeaders,
    sourceAddress: string,
    receivedAt?: number,
  ): Promise<AuthenticatedDevice | null> {
    const now = receivedAt ?? Date.now();
    if (!this.proxy || !this.proxySecret) return null;
    if (this.limited(sourceAddress, now)) return this.refuse(sourceAddress, 'rate_limited');
    const secret = headers[PROXY_SECRET_HEADER];
    if (typeof secret !== 'string' || !timingSafeEqual(digest(secret), this.proxySecret)) {
      return this.refuse(sourceAddress, 'proxy_secret');
    }
    // Behind the proxy, the device's address is the one the proxy appended last.
    const forwarded = headers['x-forwarded-for'];
    const address =
      (typeof forwarded === 'string' ? forwarded.split(',').pop()?.trim() : undefined) || sourceAddress;
    const value = headers[this.proxy.header];
    const ders = typeof value === 'string' ? readProxiedCertificates(value) : null;
    if (!ders) return this.refuse(address, value === undefined ? 'no_certificate' : 'unreadable');
    return this.authenticateCertificate(ders[0], ders.slice(1), address, now);
  }

  /** True when the proxy mode is on and the request carries the proxy's secret or certificate header. */
  claims(headers: IncomingHttpHeaders): boolean {
    return (
      this.proxy !== null &&
      (headers[PROXY_SECRET_HEADER] !== undefined || headers[this.proxy.header] !== undefined)
    );
  }

  /**
   * Registers the certificate for the device its subject names, in the CA's organization, creating the device
   * from the CA's JITP template when it does not exist; in one transaction, rolled back on any refusal.
   */
  private async registerThroughCa(
    cert: ParsedCertificate,
    ca: TrustedCa,
    identifier: string,
  ): Promise<AuthenticatedDevice> {
    return this.transactions.run(async (tx) => {
      let device: DeviceRow | null = await this.repository.deviceByIdentifier(identifier, tx);
      let created = false;
      const refusal = registrationRefusal(device, ca);
      if (refusal) throw new Refused(refusal);
      if (!device) {
        const jitp = ca.jitp!;
        const inserted = await this.devices.registerIfAbsent(ca.orgId, jitp.productId, identifier, tx, {
          tags: jitp.tags,
          description: jitp.description,
        });
        if (inserted[0]) {
          created = true;
          device = { id: String(inserted[0].id), org_id: ca.orgId, product_id: jitp.productId };
          await this.audit.record(tx, {
            orgId: ca.orgId,
            actor: null,
            action: 'device.register',
            targetType: 'device',
            targetId: identifier,
            details: { jitp: true, ca_certificate: ca.serial, product_id: jitp.productId },
          });
        } else {
          // A concurrent first connection created it (it waited for that one to commit): use that row.
          device = await this.repository.deviceByIdentifier(identifier, tx);
          if (!device) throw new Refused('registration_conflict');
        }
      }
      const deviceId = String(device.id);
      if (String(device.org_id) !== ca.orgId) throw new Refused('device_in_other_org');
      await this.certificates.lockPublicKey(cert.publicKeyFingerprint, tx);
      const keyRule = keyRefusal(
        await this.repository.keyHolders(cert.publicKeyFingerprint, deviceId, tx),
        created,
      );
      if (keyRule) throw new Refused(keyRule);
      const inserted = await this.repository.insertThroughCa(
        { ...newDeviceCertificate(deviceId, cert), caCertificateId: ca.id },
        tx,
      );
      if (inserted) {
        await this.audit.record(tx, {
          orgId: ca.orgId,
          actor: null,
          action: 'device_certificate.create',
          targetType: 'device',
          targetId: identifier,
          details: { serial: cert.serial, fingerprint: cert.fingerprint, ca_certificate: ca.serial },
        });
      } else if ((await this.repository.deviceOfFingerprint(cert.fingerprint, tx)) !== deviceId) {
        // Not a concurrent registration of this very certificate: the CA was deleted meanwhile, or the device
        // holds another certificate with this serial.
        throw new Refused('registration_conflict');
      }
      return {
        deviceId,
        identifier,
        productId: String(device.product_id),
        orgId: ca.orgId,
        registered: created,
      };
    });
  }

  private used(map: Map<string, number>, id: string, at: number): void {
    map.set(id, at);
  }

  /** Writes the `last_used` times collected since the last flush (one statement per table). */
  flushUsage(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      if (this.usedCertificates.size === 0 && this.usedCas.size === 0) return;
      const take = (map: Map<string, number>) => {
        const entries = [...map];
        map.clear();
        return { ids: entries.map(([id]) => id), ats: entries.map(([, at]) => new Date(at)) };
      };
      const certificates = take(this.usedCertificates);
      const cas = take(this.usedCas);
      try {
        await this.repository.touch(certificates, cas);
      } catch (err) {
        this.logger.warn({ err }, 'recording when device certificates were last used failed');
      }
    });
    return this.flushing;
  }
}

/**
 * The main listener's device authentication with the proxy mode on: requests carrying the proxy's headers are
 * authenticated by certificate, every other one by `sharedSecrets` (NH1) as before.
 */
export class ProxiedCertificateOrSharedSecret extends DeviceAuthenticator {
  constructor(
    private readonly certificates: CertificateDeviceAuthenticator,
    private readonly sharedSecrets: DeviceAuthenticator,
  ) {
    super();
  }

  authenticate(
    headers: IncomingHttpHeaders,
    sourceAddress: string,
    receivedAt?: number,
  ): Promise<AuthenticatedDevice | null> {
    return this.certificates.claims(headers)
      ? this.certificates.authenticate(headers, sourceAddress, receivedAt)
      : this.sharedSecrets.authenticate(headers, sourceAddress, receivedAt);
  }
}
