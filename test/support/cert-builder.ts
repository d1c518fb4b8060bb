// @peculiar/x509 (through tsyringe) needs the Reflect metadata API when it loads.
import 'reflect-metadata';
import { randomBytes, webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

/**
 * Test certificates built with @peculiar/x509 on Node's WebCrypto: CAs (root and intermediate), device and
 * verification certificates, ECDSA P-256 (what a NervesKey holds) or RSA, with any validity dates.
 */

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

export type KeyKind = 'ec' | 'rsa';

const KEY_ALGORITHMS = {
  ec: { name: 'ECDSA', namedCurve: 'P-256' },
  rsa: {
    name: 'RSASSA-PKCS1-v1_5',
    hash: 'SHA-256',
    publicExponent: new Uint8Array([1, 0, 1]),
    modulusLength: 2048,
  },
};
const SIGNING_ALGORITHMS = {
  ec: { name: 'ECDSA', hash: 'SHA-256' },
  rsa: { name: 'RSASSA-PKCS1-v1_5' },
};

export interface Keys {
  publicKey: webcrypto.CryptoKey;
  privateKey: webcrypto.CryptoKey;
}

export interface Issued {
  cert: x509.X509Certificate;
  keys: Keys;
  kind: KeyKind;
  /** PEM text. */
  pem: string;
  /** Base64 of the PEM: what NervesHub's clients send. */
  b64: string;
  /** The serial as the API writes it (decimal). */
  serial: string;
}

const DAY = 24 * 60 * 60 * 1000;

export interface CertOptions {
  /** Subject common name. */
  cn?: string;
  kind?: KeyKind;
  notBefore?: Date;
  notAfter?: Date;
  /** basicConstraints cA (true for `ca()`, false for `leaf()`); null leaves the extension out. */
  isCa?: boolean | null;
  /** Subject key identifier extension (default true). */
  withSki?: boolean;
  /** URIs for the subject alternative name. */
  uris?: string[];
  /** Reuse a key pair (e.g. a second certificate for the same key). */
  keys?: Keys;
  /** basicConstraints pathLenConstraint of a CA. */
  pathLength?: number;
}

export async function generateKeys(kind: KeyKind = 'ec'): Promise<Keys> {
  return webcrypto.subtle.generateKey(KEY_ALGORITHMS[kind], true, ['sign', 'verify']);
}

/** A random positive serial (hex for the generator, decimal as the API writes it). */
function newSerial(): { hex: string; decimal: string } {
  const bytes = randomBytes(9);
  bytes[0] = (bytes[0] & 0x3f) | 0x10;
  const hex = bytes.toString('hex');
  return { hex, decimal: BigInt(`0x${hex}`).toString(10) };
}

function issued(cert: x509.X509Certificate, keys: Keys, kind: KeyKind, serial: string): Issued {
  const pem = cert.toString('pem');
  return { cert, keys, kind, pem, b64: Buffer.from(pem).toString('base64'), serial };
}

async function extensions(
  options: CertOptions,
  keys: Keys,
  issuer: Issued | null,
  defaultCa: boolean,
): Promise<x509.Extension[]> {
  const isCa = options.isCa === undefined ? defaultCa : options.isCa;
  const list: x509.Extension[] = [];
  if (isCa !== null) list.push(new x509.BasicConstraintsExtension(isCa, options.pathLength, true));
  list.push(
    new x509.KeyUsagesExtension(
      isCa
        ? x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature
        : x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
      true,
    ),
  );
  if (options.withSki !== false) list.push(await x509.SubjectKeyIdentifierExtension.create(keys.publicKey));
  if (issuer) list.push(await x509.AuthorityKeyIdentifierExtension.create(issuer.keys.publicKey));
  if (options.uris?.length) {
    list.push(
      new x509.SubjectAlternativeNameExtension(
        options.uris.map((value) => ({ type: 'url' as const, value })),
      ),
    );
  }
  return list;
}

/**
 * A certificate: self-signed when `issuer` is null, else signed by it. CA by default when self-signed
 * (`ca()`), end-entity when issued (`leaf()`); `isCa` overrides.
 */
async function build(issuer: Issued | null, options: CertOptions, defaultCa: boolean): Promise<Issued> {
  const kind = options.kind ?? 'ec';
  const keys = options.keys ?? (await generateKeys(kind));
  const serial = newSerial();
  const common = {
    serialNumber: serial.hex,
    notBefore: options.notBefore ?? new Date(Date.now() - DAY),
    notAfter: options.notAfter ?? new Date(Date.now() + 3650 * DAY),
    extensions: await extensions(options, keys, issuer, defaultCa),
  };
  const name = `CN=${options.cn ?? `Test ${serial.hex}`}`;
  const cert = issuer
    ? await x509.X509CertificateGenerator.create({
        ...common,
        subject: name,
        issuer: issuer.cert.subject,
        signingAlgorithm: SIGNING_ALGORITHMS[issuer.kind],
        publicKey: keys.publicKey,
        signingKey: issuer.keys.privateKey,
      })
    : await x509.X509CertificateGenerator.createSelfSigned({
        ...common,
        name,
        signingAlgorithm: SIGNING_ALGORITHMS[kind],
        keys,
      });
  return issued(cert, keys, kind, serial.decimal);
}

/** A root CA (self-signed) or, with `issuer`, an intermediate CA. */
export function ca(options: CertOptions = {}, issuer: Issued | null = null): Promise<Issued> {
  return build(issuer, options, true);
}

/** An end-entity certificate signed by `issuer` (a device or a verification certificate). */
export function leaf(issuer: Issued, options: CertOptions = {}): Promise<Issued> {
  return build(issuer, options, false);
}

/** A self-signed end-entity certificate. */
export function selfSigned(options: CertOptions = {}): Promise<Issued> {
  return build(null, { isCa: false, ...options }, false);
}

/** The verification certificate of a CA registration: signed by `issuer`, the token in a URI SAN. */
export function verificationCert(issuer: Issued, token: string, options: CertOptions = {}): Promise<Issued> {
  return leaf(issuer, { cn: 'verification', uris: [`urn:nerveshub:verify:${token}`], ...options });
}

export const days = (n: number) => new Date(Date.now() + n * DAY);

/** The subject key identifier of a test certificate, in lower-case hex. */
export function subjectKeyId(issued: Issued): string {
  return issued.cert.getExtension(x509.SubjectKeyIdentifierExtension)!.keyId;
}

/** The private key of a test certificate, PEM (PKCS #8): what a device or a TLS client is given. */
export async function keyPem(issued: Issued | Keys): Promise<string> {
  const keys = 'keys' in issued ? issued.keys : issued;
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey));
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN PRIVATE KEY-----\n${lines.join('\n')}\n-----END PRIVATE KEY-----\n`;
}
