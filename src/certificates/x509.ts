// @peculiar/x509 (through tsyringe) needs the Reflect metadata API when it loads, whatever imported this first.
import 'reflect-metadata';
import { createHash, X509Certificate } from 'node:crypto';
import {
  AuthorityKeyIdentifierExtension,
  BasicConstraintsExtension,
  SubjectAlternativeNameExtension,
  SubjectKeyIdentifierExtension,
  X509Certificate as PeculiarCertificate,
} from '@peculiar/x509';

/**
 * X.509 reading for the certificate features, on libraries only: `node:crypto`'s X509Certificate (OpenSSL) parses,
 * verifies signatures and issuance and says whether a certificate is a CA; `@peculiar/x509` reads what Node does
 * not expose (key identifiers, the subject's common name, URIs among the subject alternative names).
 */

/**
 * What the device socket reads of a presented certificate at every connection, with node:crypto alone (about a
 * tenth of a millisecond; a full `parseCertificate` costs milliseconds, most of it @peculiar/x509's ASN.1 reading).
 */
export interface PresentedCertificate {
  der: Buffer;
  notBefore: Date;
  notAfter: Date;
  isCa: boolean;
  /** Null when not read (the light reading): the issuer is then found by name. */
  aki: Buffer | null;
  fingerprint: string;
  x509: X509Certificate;
}

/** The light reading of a certificate (see PresentedCertificate), or null when it cannot be read. */
export function presentedCertificate(certificate: X509Certificate | Buffer): PresentedCertificate | null {
  try {
    const x509 = Buffer.isBuffer(certificate) ? new X509Certificate(certificate) : certificate;
    const notBefore = new Date(x509.validFrom);
    const notAfter = new Date(x509.validTo);
    if (Number.isNaN(notBefore.getTime()) || Number.isNaN(notAfter.getTime())) return null;
    const der = Buffer.from(x509.raw);
    return { der, notBefore, notAfter, isCa: x509.ca, aki: null, fingerprint: sha256(der), x509 };
  } catch {
    return null;
  }
}

/** What the API stores and answers about one certificate. */
export interface ParsedCertificate extends PresentedCertificate {
  /** The certificate itself (DER), kept so that later checks (the device socket) need nothing else. */
  der: Buffer;
  /** The serial number as a decimal string (NervesHub's form). */
  serial: string;
  notBefore: Date;
  notAfter: Date;
  /** basicConstraints with cA true. */
  isCa: boolean;
  /** Authority key identifier (keyIdentifier), or null when absent. */
  aki: Buffer | null;
  /** Subject key identifier, or null when absent. */
  ski: Buffer | null;
  /** The subject's first commonName, or null. */
  commonName: string | null;
  /** URIs among the subject alternative names, in order. */
  sanUris: string[];
  /** Lower-case hex SHA-256 of the DER. */
  fingerprint: string;
  /** Lower-case hex SHA-256 of the DER SubjectPublicKeyInfo. */
  publicKeyFingerprint: string;
  /** For signature and issuance checks. */
  x509: X509Certificate;
  /** basicConstraints pathLenConstraint (CAs): how many intermediates may follow; null when unlimited or absent. */
  pathLength: number | null;
  /** Carries the name constraints extension (the device socket does not evaluate them, so refuses such a CA). */
  nameConstraints: boolean;
}

/** Name constraints (RFC 5280 4.2.1.10). */
const NAME_CONSTRAINTS_OID = '2.5.29.30';

/** Why a field could not be read as a certificate: the 422 message of that field. */
export const CERT_NOT_BASE64 = 'must be a base64-encoded PEM certificate';
export const CERT_NOT_PEM = 'does not hold a PEM certificate (-----BEGIN CERTIFICATE-----)';
export const CERT_SEVERAL = 'must hold exactly one certificate, not a chain';
export const CERT_MALFORMED = 'is not a readable X.509 certificate';
export const CERT_SERIAL_TOO_LONG = 'has a serial number longer than 20 octets (RFC 5280)';

const PEM_BEGIN = '-----BEGIN CERTIFICATE-----';
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
/** RFC 5280 4.1.2.2: at most 20 octets, that is 40 hexadecimal digits. */
const MAX_SERIAL_HEX_DIGITS = 40;

/**
 * The PEM text a request field carries: base64 of the PEM (what NervesHub's clients send), or the PEM itself
 * (convenient with curl). Null when it is neither.
 */
function pemOf(field: string): string | null {
  const text = field.trim();
  if (text.startsWith('-----BEGIN')) return text;
  const compact = text.replace(/\s+/g, '');
  if (compact === '' || compact.length % 4 !== 0 || !BASE64.test(compact)) return null;
  return Buffer.from(compact, 'base64').toString('latin1');
}

function hexToBuffer(hex: string | undefined | null): Buffer | null {
  return hex ? Buffer.from(hex, 'hex') : null;
}

function sha256(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

/**
 * Reads one certificate from a request field (base64 of PEM, or PEM). Returns the certificate, or the 422
 * message naming what is wrong with the field. Never throws for any input.
 */
export function readCertificateField(field: string): ParsedCertificate | string {
  const pem = pemOf(field);
  if (pem === null) return CERT_NOT_BASE64;
  const blocks = pem.split(PEM_BEGIN).length - 1;
  if (blocks === 0) return CERT_NOT_PEM;
  if (blocks > 1) return CERT_SEVERAL;
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(pem);
  } catch {
    return CERT_MALFORMED;
  }
  return parseCertificate(x509);
}

/**
 * Reads one certificate (DER, or as node:crypto parsed it): what the API and the device socket need of it, or the
 * message saying why it cannot be read. Never throws.
 */
export function parseCertificate(certificate: X509Certificate | Buffer): ParsedCertificate | string {
  let x509: X509Certificate;
  let peculiar: PeculiarCertificate;
  let publicKeyDer: Buffer;
  try {
    x509 = Buffer.isBuffer(certificate) ? new X509Certificate(certificate) : certificate;
    peculiar = new PeculiarCertificate(x509.raw);
    publicKeyDer = x509.publicKey.export({ type: 'spki', format: 'der' });
  } catch {
    return CERT_MALFORMED;
  }
  const serialHex = x509.serialNumber;
  if (!/^[0-9A-Fa-f]+$/.test(serialHex)) return CERT_MALFORMED;
  if (serialHex.replace(/^0+(?=.)/, '').length > MAX_SERIAL_HEX_DIGITS) return CERT_SERIAL_TOO_LONG;
  let extensions: {
    aki: Buffer | null;
    ski: Buffer | null;
    commonName: string | null;
    pathLength: number | null;
    nameConstraints: boolean;
  };
  try {
    extensions = {
      aki: hexToBuffer(peculiar.getExtension(AuthorityKeyIdentifierExtension)?.keyId),
      ski: hexToBuffer(peculiar.getExtension(SubjectKeyIdentifierExtension)?.keyId),
      commonName: peculiar.subjectName.getField('CN')[0] ?? null,
      pathLength: peculiar.getExtension(BasicConstraintsExtension)?.pathLength ?? null,
      nameConstraints: peculiar.getExtension(NAME_CONSTRAINTS_OID) !== null,
    };
  } catch {
    return CERT_MALFORMED;
  }
  return {
    der: Buffer.from(x509.raw),
    serial: BigInt(`0x${serialHex}`).toString(10),
    notBefore: peculiar.notBefore,
    notAfter: peculiar.notAfter,
    isCa: x509.ca,
    ...extensions,
    sanUris: sanUris(peculiar),
    fingerprint: sha256(x509.raw),
    publicKeyFingerprint: sha256(publicKeyDer),
    x509,
  };
}

/**
 * The URIs among the subject alternative names. A name form the library cannot read (an X.400 address, say) makes
 * the list empty rather than the certificate unreadable: only verification certificates need these.
 */
function sanUris(certificate: PeculiarCertificate): string[] {
  try {
    const san = certificate.getExtension(SubjectAlternativeNameExtension);
    return (san?.names.items ?? []).filter((name) => name.type === 'url').map((name) => name.value);
  } catch {
    return [];
  }
}

/**
 * True when `issuer` issued `child`: the names (and key identifiers, key usage) match as OpenSSL checks them, and
 * `child`'s signature verifies with `issuer`'s public key.
 */
export function isIssuedBy(child: ParsedCertificate, issuer: ParsedCertificate): boolean {
  try {
    return child.x509.checkIssued(issuer.x509) && child.x509.verify(issuer.x509.publicKey);
  } catch {
    return false;
  }
}

/** True when a path segment can be a serial number as the API writes them (decimal, no leading zeros). */
export function isSerial(value: string): boolean {
  return /^(0|[1-9]\d{0,59})$/.test(value);
}

export const hex = (value: Buffer | null): string | null => (value ? value.toString('hex') : null);
