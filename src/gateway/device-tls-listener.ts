import {
  type BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import { constants as cryptoConstants } from 'node:crypto';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import { createSecureContext, type SecureContext, TLSSocket } from 'node:tls';
import {
  CertificateDeviceAuthenticator,
  type CertificateLookup,
  type CertificateRefusal,
} from '../certificates/certificate-authenticator';
import { APP_CONFIG, type AppConfig } from '../config/config';
import type { PresentedCertificate } from '../certificates/x509';
import type { AuthenticatedDevice } from '../device-auth/device-authenticator';
import { ShutdownState } from '../health/shutdown-state';
import { Admission, AdmissionRefused } from './admission';
import { ClientCertificateGate, type GateDecision, TlsAlert } from './client-certificate-gate';
import { DeviceGateway } from './device-gateway';
import { loadDeviceTlsIdentity } from './device-tls-identity';

/** A TLS handshake not done within this is dropped. */
export const TLS_HANDSHAKE_TIMEOUT_MS = 10_000;
/** An authenticated connection must send its upgrade request's headers within this. */
const HEADERS_TIMEOUT_MS = 30_000;
/** As the main listener: thousands of devices reconnecting at once must not overflow the kernel's queue. */
const LISTEN_BACKLOG = 4096;
/** At most this many certificates after the device's own are looked at (its intermediates). */
const MAX_PRESENTED = 8;
/**
 * TLS handshakes in progress at once (each until its certificate is judged); the connections beyond wait, in
 * arrival order, before their handshake (and its timeout) starts. Thousands of handshakes started together share
 * the event loop until many pass the timeout, and the work spent on those is thrown away: 5,000 devices connecting
 * at once took 59 s, 1,529 of their attempts timing out (docs/decisions.md, "mTLS: handshakes in turn").
 */
export const MAX_CONCURRENT_HANDSHAKES = 128;
/** Connections waiting for a handshake slot beyond this are closed (the device retries later). */
export const MAX_WAITING_HANDSHAKES = 20_000;

/**
 * The mTLS device socket (issue #17, part 3): its own port (`FLEETHUB_DEVICE_TLS_PORT`), the same Phoenix channels at
 * `/socket/websocket` (and `/device-socket/websocket`) as the main listener, devices authenticated by their client
 * certificate. A connection goes through a `net` server, a TLS socket and an `http` server that share nothing but the
 * connection:
 *
 * 1. the `net` server accepts it, and closes it at once when its address has failed too often lately (before any TLS
 *    work, as NervesHub's DeviceSSLTransport sheds before the handshake);
 * 2. a TLS socket does the handshake, asking for the client's certificate, through a ClientCertificateGate. OpenSSL
 *    checks the client's proof of possession of its key (CertificateVerify), not the chain: registered CAs are per
 *    organization and change at run time, a registered device certificate may come from any issuer, an OpenSSL trust
 *    store would announce every organization's CA names to every client, and Node refuses what OpenSSL did not
 *    verify without a TLS alert anyway. No session is resumed, so every connection is judged afresh;
 * 3. in TLS 1.2 the gate reads the client's certificate in the handshake, and CertificateDeviceAuthenticator judges
 *    it there by reading only (in memory: dates, chain to a registered CA; then the database, in turn with the other
 *    connections: Admission). Refused: the device gets the TLS alert that says why (`refusalAlert`: unknown CA,
 *    expired...) before the handshake ends, as from NervesHub; the refusal is counted and held against its address.
 *    In TLS 1.3 the certificate is encrypted, so the same judgment runs right after the handshake, and a refused
 *    connection is closed without an alert (one would need the session's keys);
 * 4. after the handshake (the key's possession proven), what the judgment found is admitted: a registered
 *    certificate's device, or the registration through its CA (JITP included). Only then is the socket handed to the
 *    `http` server on which the DeviceGateway serves the upgrade as on the main listener, as the device found.
 */
@Injectable()
export class DeviceTlsListener implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('DeviceTls');
  private netServer: NetServer | null = null;
  private secureContext: SecureContext | null = null;
  private httpServer: HttpServer | null = null;
  private readonly devices = new WeakMap<object, AuthenticatedDevice>();
  /** Sockets accepted and not yet handed to HTTP (closed at shutdown). */
  private readonly pending = new Set<Socket>();
  /** Connections whose handshake is in progress (each until its certificate is judged). */
  private readonly handshakes = new Set<Socket>();
  /** Accepted connections waiting for a handshake slot, oldest first from `waitingHead`. */
  private waiting: Socket[] = [];
  private waitingHead = 0;
  private boundPort: number | null = null;
  /** The generated server CA devices must trust (null: off, or a configured certificate). */
  caFile: string | null = null;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly auth: CertificateDeviceAuthenticator,
    private readonly gateway: DeviceGateway,
    private readonly admission: Admission,
    private readonly shutdown: ShutdownState,
  ) {}

  /** The port it listens on (null: off). */
  get port(): number | null {
    return this.boundPort;
  }

  async onApplicationBootstrap(): Promise<void> {
    const settings = this.config.deviceTls;
    if (!settings) return;
    const identity = await loadDeviceTlsIdentity(this.config);
    this.caFile = identity.caFile;
    if (identity.caFile) {
      const made =
        identity.generated === 'ca'
          ? 'generated a private server CA'
          : identity.generated === 'server'
            ? 'made a new server certificate with the private server CA'
            : 'using the private server CA';
      this.logger.log(
        { caFile: identity.caFile },
        `device mTLS socket: ${made}; devices must trust ${identity.caFile}`,
      );
    }
    this.secureContext = createSecureContext({
      cert: identity.cert,
      key: identity.key,
      minVersion: 'TLSv1.2',
      // No session tickets (and no session cache: OpenSSL's own is off in Node): every connection presents and is
      // judged on its certificate, so that a deleted CA or certificate takes effect on the next connection.
      secureOptions: cryptoConstants.SSL_OP_NO_TICKET,
    });
    const httpServer = createHttpServer((_req, res) => {
      res.writeHead(404, { 'Content-Length': '0', Connection: 'close' }).end();
    });
    httpServer.headersTimeout = HEADERS_TIMEOUT_MS;
    httpServer.requestTimeout = HEADERS_TIMEOUT_MS;
    this.gateway.serve(httpServer, (socket) => this.devices.get(socket) ?? null);
    const netServer = createNetServer((socket) => this.accept(socket));
    this.httpServer = httpServer;
    this.netServer = netServer;
    await new Promise<void>((resolve, reject) => {
      netServer.once('error', reject);
      netServer.listen({ port: settings.port, host: this.config.host, backlog: LISTEN_BACKLOG }, () => {
        netServer.off('error', reject);
        resolve();
      });
    });
    this.boundPort = (netServer.address() as { port: number }).port;
    this.logger.log({ port: this.boundPort }, `device mTLS socket listening on port ${this.boundPort}`);
  }

  async beforeApplicationShutdown(): Promise<void> {
    const netServer = this.netServer;
    if (!netServer) return;
    const closed = new Promise<void>((resolve) => netServer.close(() => resolve()));
    for (const socket of this.pending) socket.destroy();
    this.pending.clear();
    this.waiting = [];
    this.waitingHead = 0;
    // Upgraded sockets are the gateway's (it closes them, 1001); authenticated ones that sent no request yet go.
    this.httpServer?.closeIdleConnections();
    await closed;
  }

  private accept(socket: Socket): void {
    socket.on('error', () => socket.destroy());
    const address = socket.remoteAddress ?? '';
    if (this.shutdown.draining || !this.secureContext) {
      socket.destroy();
      return;
    }
    if (this.auth.limited(address)) {
      this.auth.refuse(address, 'rate_limited');
      socket.destroy();
      return;
    }
    this.pending.add(socket);
    socket.once('close', () => this.pending.delete(socket));
    // A slot is taken once the client's first bytes (its ClientHello) are here, so that connections which send
    // nothing cannot hold the slots; they are closed when the handshake's time is up, as before. The bytes stay
    // buffered on the socket, and the TLS socket made from it reads them first.
    const silent = setTimeout(() => socket.destroy(), TLS_HANDSHAKE_TIMEOUT_MS);
    socket.once('close', () => clearTimeout(silent));
    socket.once('readable', () => {
      clearTimeout(silent);
      if (socket.destroyed || socket.readableLength === 0 || !this.secureContext) {
        socket.destroy();
      } else if (this.handshakes.size < MAX_CONCURRENT_HANDSHAKES) {
        this.startHandshake(socket);
      } else if (this.waiting.length - this.waitingHead < MAX_WAITING_HANDSHAKES) {
        this.waiting.push(socket);
      } else {
        this.auth.refuse(address, 'busy');
        socket.destroy();
      }
    });
  }

  /**
   * The handshake, through the gate (see the class). The slot is held until the certificate is judged: the judgment
   * waits its turn for the database (Admission), and with the slots bounding how many wait there, a device whose TLS
   * handshake the server has paid for is not shed as "busy" behind thousands of others.
   */
  private startHandshake(socket: Socket): void {
    const address = socket.remoteAddress ?? '';
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.handshakes.delete(socket);
      this.startWaiting();
    };
    this.handshakes.add(socket);
    // A connection that goes before its handshake ends (reset, timeout) frees its slot as well.
    socket.once('close', release);
    let outcome: 'handshake' | 'refused' | 'secure' = 'handshake';
    let judged: Judged | null = null;
    const gate = new ClientCertificateGate(socket, async (certificates) => {
      // The device waits for the judgment, not the other way round: its handshake time stops meanwhile.
      clearTimeout(timeout);
      let decision: Judged | GateDecision;
      try {
        decision = await this.judgeInHandshake(address, certificates);
      } catch (err) {
        this.logger.error({ err }, 'device certificate authentication failed');
        decision = 'close';
      }
      if (typeof decision === 'object') {
        judged = decision;
        timeout = setTimeout(() => tlsSocket.destroy(), TLS_HANDSHAKE_TIMEOUT_MS);
        return 'pass';
      }
      outcome = 'refused';
      release();
      return decision;
    });
    const tlsSocket = new TLSSocket(gate, {
      isServer: true,
      secureContext: this.secureContext!,
      requestCert: true,
      rejectUnauthorized: false,
    });
    let timeout = setTimeout(() => tlsSocket.destroy(), TLS_HANDSHAKE_TIMEOUT_MS);
    tlsSocket.on('error', () => tlsSocket.destroy());
    tlsSocket.once('close', () => {
      clearTimeout(timeout);
      if (outcome === 'handshake') this.auth.refuse(address, 'tls_error');
      release();
    });
    // Node's server-side TLSSocket announces its completed handshake with 'secure' (as tls.Server listens for it).
    tlsSocket.once('secure', () => {
      clearTimeout(timeout);
      outcome = 'secure';
      this.authenticate(tlsSocket, socket, address, judged)
        .catch((err: unknown) => {
          this.logger.error({ err }, 'device certificate authentication failed');
          tlsSocket.destroy();
        })
        .finally(release);
    });
  }

  /**
   * The judgment inside the handshake (TLS 1.2): what can be decided by reading, before the device has proven that it
   * holds the key. A refusal is counted here and answered with its alert.
   */
  private async judgeInHandshake(address: string, certificates: Buffer[]): Promise<Judged | GateDecision> {
    if (certificates.length === 0) return this.refusedInHandshake(address, 'no_certificate');
    const [leaf, ...chain] = certificates;
    const inspected = this.auth.inspect(leaf, chain.slice(0, MAX_PRESENTED));
    if (typeof inspected === 'string') return this.refusedInHandshake(address, inspected);
    let found: CertificateLookup | CertificateRefusal;
    try {
      found = await this.admission.handshake(() => this.auth.lookUp(inspected));
    } catch (err) {
      if (!(err instanceof AdmissionRefused)) throw err;
      found = 'busy';
    }
    return typeof found === 'string'
      ? this.refusedInHandshake(address, found, inspected.leaf)
      : { leaf, found };
  }

  private refusedInHandshake(
    address: string,
    reason: CertificateRefusal,
    cert?: PresentedCertificate,
  ): GateDecision {
    this.auth.refuse(address, reason, cert);
    return refusalAlert(reason) ?? 'close';
  }

  /** Starts waiting connections while slots are free; those their devices closed meanwhile are skipped. */
  private startWaiting(): void {
    while (this.handshakes.size < MAX_CONCURRENT_HANDSHAKES && this.waitingHead < this.waiting.length) {
      const next = this.waiting[this.waitingHead++];
      if (!next.destroyed && this.secureContext) this.startHandshake(next);
    }
    if (this.waitingHead === this.waiting.length) {
      this.waiting = [];
      this.waitingHead = 0;
    } else if (this.waitingHead > 1024 && this.waitingHead * 2 > this.waiting.length) {
      this.waiting = this.waiting.slice(this.waitingHead);
      this.waitingHead = 0;
    }
  }

  /**
   * After the handshake: admits what the gate's judgment found (TLS 1.2), or judges the certificate now (TLS 1.3, whose
   * certificate the gate cannot read), and hands an accepted connection to HTTP.
   */
  private async authenticate(
    tlsSocket: TLSSocket,
    socket: Socket,
    address: string,
    judged: Judged | null,
  ): Promise<void> {
    const presented = presentedCertificates(tlsSocket);
    if (!presented) {
      this.auth.refuse(address, 'no_certificate');
      tlsSocket.destroy();
      return;
    }
    let result: AuthenticatedDevice | CertificateRefusal | null;
    let leaf: PresentedCertificate | undefined;
    if (judged?.leaf.equals(presented.leaf) && judged.found.kind === 'registered') {
      result = await this.auth.admit(judged.found);
    } else {
      let work: () => Promise<AuthenticatedDevice | CertificateRefusal>;
      if (judged?.leaf.equals(presented.leaf)) {
        const found = judged.found;
        work = () => this.auth.admit(found);
      } else {
        const inspected = this.auth.inspect(presented.leaf, presented.chain);
        if (typeof inspected === 'string') {
          this.auth.refuse(address, inspected);
          tlsSocket.destroy();
          return;
        }
        leaf = inspected.leaf;
        work = () => this.auth.resolve(inspected);
      }
      try {
        result = await this.admission.handshake(async () => (tlsSocket.destroyed ? null : work()));
      } catch (err) {
        if (!(err instanceof AdmissionRefused)) throw err;
        result = 'busy';
      }
    }
    if (result === null || tlsSocket.destroyed) {
      tlsSocket.destroy();
      return;
    }
    if (typeof result === 'string') {
      this.auth.refuse(address, result, leaf);
      tlsSocket.destroy();
      return;
    }
    this.devices.set(tlsSocket, result);
    this.pending.delete(socket);
    this.httpServer?.emit('connection', tlsSocket);
  }
}

/** What the judgment in the handshake found for the device's certificate (DER), to admit after the handshake. */
interface Judged {
  leaf: Buffer;
  found: CertificateLookup;
}

/**
 * The TLS alert a refusal inside the handshake is answered with, as OpenSSL and Erlang's ssl would answer the
 * certificate problem; null: closed without one (the server's load, and what the handshake cannot decide).
 */
export function refusalAlert(reason: CertificateRefusal): TlsAlert | null {
  switch (reason) {
    case 'no_certificate':
      return TlsAlert.HandshakeFailure;
    case 'unknown_ca':
      return TlsAlert.UnknownCa;
    case 'expired':
    case 'ca_expired':
    case 'intermediate_expired':
      return TlsAlert.CertificateExpired;
    case 'unreadable':
    case 'not_yet_valid':
    case 'ca_not_yet_valid':
    case 'intermediate_not_yet_valid':
    case 'bad_chain':
    case 'missing_common_name':
    case 'invalid_identifier':
      return TlsAlert.BadCertificate;
    case 'leaf_is_ca':
      return TlsAlert.UnsupportedCertificate;
    case 'device_not_registered':
    case 'device_in_other_org':
    case 'key_of_another_device':
    case 'unexpected_public_key':
      return TlsAlert.CertificateUnknown;
    case 'rate_limited':
    case 'busy':
    case 'tls_error':
    case 'registration_conflict':
    case 'proxy_secret':
      return null;
  }
}

/**
 * The device's certificate and those it sent after it (its intermediates), DER, as Node's TLS linked them (each one
 * the issuer of the one before), or null when it sent none. Read with `getPeerCertificate(true)` only: in Node 20,
 * calling `getPeerX509Certificate()` first leaves the detailed certificate without its issuers.
 */
function presentedCertificates(socket: TLSSocket): { leaf: Buffer; chain: Buffer[] } | null {
  const peer = socket.getPeerCertificate(true);
  if (!peer || !peer.raw) return null;
  const chain: Buffer[] = [];
  const seen = new Set<string>([peer.fingerprint256]);
  let current = peer;
  while (chain.length < MAX_PRESENTED) {
    const issuer = current.issuerCertificate;
    if (!issuer || !issuer.raw || seen.has(issuer.fingerprint256)) break;
    seen.add(issuer.fingerprint256);
    chain.push(issuer.raw);
    current = issuer;
  }
  return { leaf: peer.raw, chain };
}
