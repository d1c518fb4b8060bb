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
import { createServer as createTlsServer, type Server as TlsServer, type TLSSocket } from 'node:tls';
import {
  CertificateDeviceAuthenticator,
  type CertificateRefusal,
} from '../certificates/certificate-authenticator';
import { APP_CONFIG, type AppConfig } from '../config/config';
import type { AuthenticatedDevice } from '../device-auth/device-authenticator';
import { ShutdownState } from '../health/shutdown-state';
import { Admission, AdmissionRefused } from './admission';
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
 * certificate. A connection goes through three servers that share nothing but the socket:
 *
 * 1. a `net` server accepts it, and closes it at once when its address has failed too often lately (before any TLS
 *    work, as NervesHub's DeviceSSLTransport sheds before the handshake);
 * 2. a `tls` server (not listening itself) does the handshake, asking for the client's certificate; OpenSSL checks
 *    the client's proof of possession of its key (CertificateVerify) but not the chain (`rejectUnauthorized: false`:
 *    registered CAs are per organization and change at run time, and a trust store in OpenSSL would announce every
 *    organization's CA names to every client), and no session is resumed, so every connection is judged afresh;
 * 3. right after the handshake, before a byte of HTTP is read, CertificateDeviceAuthenticator judges the
 *    certificate: in memory first (dates, chain to a registered CA), then in the database in turn with the other
 *    connections (Admission). Refused (unknown, expired, not yet valid...): the socket is destroyed, counted and held
 *    against its address; the device never reaches HTTP, let alone a channel. Accepted: the socket is handed to an
 *    `http` server on which the DeviceGateway serves the upgrade as on the main listener, as the device found.
 */
@Injectable()
export class DeviceTlsListener implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('DeviceTls');
  private netServer: NetServer | null = null;
  private tlsServer: TlsServer | null = null;
  private httpServer: HttpServer | null = null;
  private readonly devices = new WeakMap<object, AuthenticatedDevice>();
  /** Sockets accepted and not yet handed to HTTP (closed at shutdown). */
  private readonly pending = new Set<Socket>();
  /** Handshakes in progress, by the connection's remote address and port: each one's release of its slot. */
  private readonly handshakes = new Map<string, () => void>();
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
    const tlsServer = createTlsServer({
      cert: identity.cert,
      key: identity.key,
      requestCert: true,
      rejectUnauthorized: false,
      handshakeTimeout: TLS_HANDSHAKE_TIMEOUT_MS,
      minVersion: 'TLSv1.2',
      // No session tickets (and no session cache: no resumeSession listener): every connection presents and is
      // judged on its certificate, so that a deleted CA or certificate takes effect on the next connection.
      secureOptions: cryptoConstants.SSL_OP_NO_TICKET,
    });
    tlsServer.on('secureConnection', (socket: TLSSocket) => {
      // The slot is held until the certificate is judged: the judgment waits its turn for the database
      // (Admission), and with the slots bounding how many wait there, a device whose TLS handshake the server
      // has paid for is not shed as "busy" behind thousands of others.
      const release = this.handshakeRelease(socket);
      this.authenticate(socket)
        .catch((err: unknown) => {
          this.logger.error({ err }, 'device certificate authentication failed');
          socket.destroy();
        })
        .finally(release);
    });
    tlsServer.on('tlsClientError', (_err, socket: TLSSocket) => {
      this.handshakeRelease(socket)();
      this.auth.refuse(socket.remoteAddress ?? '', 'tls_error');
      socket.destroy();
    });
    const httpServer = createHttpServer((_req, res) => {
      res.writeHead(404, { 'Content-Length': '0', Connection: 'close' }).end();
    });
    httpServer.headersTimeout = HEADERS_TIMEOUT_MS;
    httpServer.requestTimeout = HEADERS_TIMEOUT_MS;
    this.gateway.serve(httpServer, (socket) => this.devices.get(socket) ?? null);
    const netServer = createNetServer((socket) => this.accept(socket));
    this.tlsServer = tlsServer;
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
    if (this.shutdown.draining || !this.tlsServer) {
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
      if (socket.destroyed || socket.readableLength === 0 || !this.tlsServer) {
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

  private startHandshake(socket: Socket): void {
    const key = `${socket.remoteAddress}:${socket.remotePort}`;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.handshakes.delete(key);
      this.startWaiting();
    };
    this.handshakes.set(key, release);
    // A connection that goes before its handshake ends (reset, timeout) frees its slot as well.
    socket.once('close', release);
    this.tlsServer!.emit('connection', socket);
  }

  /** Starts waiting connections while slots are free; those their devices closed meanwhile are skipped. */
  private startWaiting(): void {
    while (this.handshakes.size < MAX_CONCURRENT_HANDSHAKES && this.waitingHead < this.waiting.length) {
      const next = this.waiting[this.waitingHead++];
      if (!next.destroyed && this.tlsServer) this.startHandshake(next);
    }
    if (this.waitingHead === this.waiting.length) {
      this.waiting = [];
      this.waitingHead = 0;
    } else if (this.waitingHead > 1024 && this.waitingHead * 2 > this.waiting.length) {
      this.waiting = this.waiting.slice(this.waitingHead);
      this.waitingHead = 0;
    }
  }

  /** What frees this connection's slot for the next waiting connection (a no-op once it is freed). */
  private handshakeRelease(socket: TLSSocket): () => void {
    return this.handshakes.get(`${socket.remoteAddress}:${socket.remotePort}`) ?? (() => undefined);
  }

  private async authenticate(socket: TLSSocket): Promise<void> {
    socket.on('error', () => socket.destroy());
    const address = socket.remoteAddress ?? '';
    const presented = presentedCertificates(socket);
    if (!presented) {
      this.auth.refuse(address, 'no_certificate');
      socket.destroy();
      return;
    }
    const inspected = this.auth.inspect(presented.leaf, presented.chain);
    if (typeof inspected === 'string') {
      this.auth.refuse(address, inspected);
      socket.destroy();
      return;
    }
    let result: AuthenticatedDevice | CertificateRefusal | null;
    try {
      result = await this.admission.handshake(async () =>
        socket.destroyed ? null : this.auth.resolve(inspected),
      );
    } catch (err) {
      if (!(err instanceof AdmissionRefused)) throw err;
      result = 'busy';
    }
    if (result === null || socket.destroyed) {
      socket.destroy();
      return;
    }
    if (typeof result === 'string') {
      this.auth.refuse(address, result, inspected.leaf);
      socket.destroy();
      return;
    }
    this.devices.set(socket, result);
    this.pending.delete(socket);
    this.httpServer?.emit('connection', socket);
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
