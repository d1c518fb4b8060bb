import type { Socket } from 'node:net';
import { Duplex } from 'node:stream';

/** TLS alert descriptions (RFC 5246 §7.2, RFC 8446 §6.2) the device socket refuses a certificate with. */
export enum TlsAlert {
  HandshakeFailure = 40,
  BadCertificate = 42,
  UnsupportedCertificate = 43,
  CertificateExpired = 45,
  CertificateUnknown = 46,
  UnknownCa = 48,
}

/** What the judge of a certificate decided: let the handshake go on, refuse with an alert, or close (no alert). */
export type GateDecision = 'pass' | 'close' | TlsAlert;

/** Judges the certificates the device sent (DER, in the order sent: its own first); an empty list: none. */
export type CertificateJudge = (certificates: Buffer[]) => Promise<GateDecision>;

const CONTENT_HANDSHAKE = 22;
const CONTENT_ALERT = 21;
const HANDSHAKE_CERTIFICATE = 11;
const RECORD_HEADER = 5;
/** The largest TLS 1.2 ciphertext record (RFC 5246 §6.2.3); anything larger is not TLS. */
const MAX_RECORD = 16_384 + 2_048;
/** Plaintext handshake bytes read while looking for the certificate; beyond, the gate stops looking. */
const MAX_WATCHED = 64 * 1024;
/** How long a refused device has to read its alert and close before the connection is closed from here. */
const ALERT_LINGER_MS = 2_000;
/** TLS 1.2's record version: the only version before TLS 1.3 the listener accepts. */
const TLS12 = [0x03, 0x03];

/**
 * A fatal alert as a TLS 1.2 plaintext record. Valid where the gate sends it: the server has not sent its
 * ChangeCipherSpec yet, so the device still reads plaintext records (as an Erlang or OpenSSL server sends its alert
 * when the client's certificate fails verification).
 */
export function alertRecord(alert: TlsAlert): Buffer {
  return Buffer.from([CONTENT_ALERT, ...TLS12, 0, 2, 2, alert]);
}

/**
 * The certificate_list of a TLS 1.2 Certificate message's body (RFC 5246 §7.4.2): each DER certificate, or null when
 * the body is not one.
 */
export function certificateList(body: Buffer): Buffer[] | null {
  if (body.length < 3 || body.readUIntBE(0, 3) !== body.length - 3) return null;
  const certificates: Buffer[] = [];
  let at = 3;
  while (at < body.length) {
    if (at + 3 > body.length) return null;
    const length = body.readUIntBE(at, 3);
    at += 3;
    if (length === 0 || at + length > body.length) return null;
    certificates.push(Buffer.from(body.subarray(at, at + length)));
    at += length;
  }
  return certificates;
}

/**
 * The TLS server's side of a device connection, between the TCP socket and Node's TLS socket, so that a refused
 * certificate is refused inside the handshake with a TLS alert. Node's TLS has no verification callback during the
 * handshake (OpenSSL's verify callback always returns "go on"), and Node closes a connection it refuses without an
 * alert; an alert sent after the handshake would need the session's keys.
 *
 * In TLS 1.2 the client's Certificate message travels in plaintext, after the server's first flight and before the
 * client's ChangeCipherSpec. The gate reads the client's plaintext handshake records as they pass to OpenSSL; once a
 * record completes the Certificate message, that record and whatever follows (the client's key exchange, its
 * CertificateVerify, ChangeCipherSpec and Finished) are held back while `judge` looks at the certificates:
 *
 * - `pass`: the held bytes go on to OpenSSL, which checks the client's proof of possession (CertificateVerify) and
 *   ends the handshake; from then on the gate only passes bytes both ways;
 * - an alert: the alert is written as a plaintext record (the server has not sent its ChangeCipherSpec, so the client
 *   still reads plaintext), the TCP connection is ended, and OpenSSL never sees the certificate;
 * - `close`: the connection is closed without an alert.
 *
 * Anything but a plaintext handshake record before the Certificate message (TLS 1.3, whose certificate is encrypted:
 * the client's ChangeCipherSpec or encrypted records; an alert; bytes that are not TLS) ends the watch: the bytes pass
 * unread, and the certificate is judged after the handshake.
 */
export class ClientCertificateGate extends Duplex {
  private state: 'watching' | 'judging' | 'open' | 'refused' = 'watching';
  /** Bytes from the device not passed on yet (while watching, they start at a record boundary). */
  private unsent: Buffer = Buffer.alloc(0);
  /** Plaintext handshake messages read so far, from a message boundary. */
  private handshake: Buffer = Buffer.alloc(0);
  private watched = 0;

  constructor(
    private readonly socket: Socket,
    private readonly judge: CertificateJudge,
  ) {
    super();
    socket.on('data', (chunk: Buffer) => this.received(chunk));
    socket.on('end', () => {
      if (this.state === 'watching') this.open();
      if (this.state === 'open') this.push(null);
      else this.destroy();
    });
    socket.on('close', () => this.destroy());
  }

  override _read(): void {
    if (this.state === 'open' || this.state === 'watching') this.socket.resume();
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: (error?: Error | null) => void): void {
    if (this.state === 'refused') callback();
    else this.socket.write(chunk, callback);
  }

  override _final(callback: (error?: Error | null) => void): void {
    if (this.state !== 'refused') this.socket.end();
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    // A refused connection's socket ends on its own, after the alert.
    if (this.state !== 'refused') this.socket.destroy();
    callback(error);
  }

  private received(chunk: Buffer): void {
    if (this.state === 'open') {
      this.pass(chunk);
      return;
    }
    if (this.state === 'refused') return;
    this.unsent = this.unsent.length === 0 ? chunk : Buffer.concat([this.unsent, chunk]);
    if (this.state === 'watching') this.watch();
  }

  /** Reads the whole records received, passing them on, until one completes the Certificate message. */
  private watch(): void {
    let offset = 0;
    while (this.unsent.length - offset >= RECORD_HEADER) {
      const length = this.unsent.readUInt16BE(offset + 3);
      if (this.unsent[offset] !== CONTENT_HANDSHAKE || length > MAX_RECORD) {
        this.open();
        return;
      }
      const end = offset + RECORD_HEADER + length;
      if (end > this.unsent.length) break;
      this.watched += length;
      if (this.watched > MAX_WATCHED) {
        this.open();
        return;
      }
      this.handshake = Buffer.concat([this.handshake, this.unsent.subarray(offset + RECORD_HEADER, end)]);
      const certificates = this.certificateMessage();
      if (certificates === 'malformed') {
        this.open();
        return;
      }
      if (certificates) {
        this.pass(this.unsent.subarray(0, offset));
        this.unsent = this.unsent.subarray(offset);
        this.decide(certificates);
        return;
      }
      offset = end;
    }
    if (offset > 0) {
      this.pass(this.unsent.subarray(0, offset));
      this.unsent = this.unsent.subarray(offset);
    }
  }

  /** The Certificate message's certificates once it is complete; null until then. */
  private certificateMessage(): Buffer[] | 'malformed' | null {
    while (this.handshake.length >= 4) {
      const length = this.handshake.readUIntBE(1, 3);
      if (this.handshake.length < 4 + length) return null;
      const type = this.handshake[0];
      const body = this.handshake.subarray(4, 4 + length);
      this.handshake = this.handshake.subarray(4 + length);
      if (type === HANDSHAKE_CERTIFICATE) return certificateList(body) ?? 'malformed';
    }
    return null;
  }

  private decide(certificates: Buffer[]): void {
    this.state = 'judging';
    this.handshake = Buffer.alloc(0);
    this.socket.pause();
    this.judge(certificates).then(
      (decision) => {
        if (this.destroyed) return;
        if (decision === 'pass') this.open();
        else if (decision === 'close') this.destroy();
        else this.refuse(decision);
      },
      (err: unknown) => this.destroy(err instanceof Error ? err : new Error(String(err))),
    );
  }

  /** From now on, every byte passes. */
  private open(): void {
    this.state = 'open';
    this.handshake = Buffer.alloc(0);
    const unsent = this.unsent;
    this.unsent = Buffer.alloc(0);
    if (unsent.length > 0) this.pass(unsent);
    if (!this.destroyed) this.socket.resume();
  }

  private refuse(alert: TlsAlert): void {
    this.state = 'refused';
    this.unsent = Buffer.alloc(0);
    const socket = this.socket;
    // Whatever else the device sends is read and dropped: closing a socket with unread bytes resets the
    // connection, and the device could lose the alert with it.
    socket.resume();
    socket.end(alertRecord(alert));
    const linger = setTimeout(() => socket.destroy(), ALERT_LINGER_MS);
    linger.unref();
    socket.once('close', () => clearTimeout(linger));
    this.destroy();
  }

  private pass(chunk: Buffer): void {
    if (chunk.length > 0 && !this.push(chunk)) this.socket.pause();
  }
}
