// @peculiar/x509 (through tsyringe) needs the Reflect metadata API when it loads.
import 'reflect-metadata';
import { createPrivateKey, randomBytes, webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';

/**
 * Certificates for trying certificate authentication (`fleethub certs`, `fleethub simulate --issuer-cert`): a test
 * CA, the verification certificate that proves its key to the server, and device certificates, made with
 * @peculiar/x509 on Node's WebCrypto. ECDSA P-256 by default (what a NervesKey holds), RSA 2048 on request.
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
const SIGNING_ALGORITHMS = { ec: { name: 'ECDSA', hash: 'SHA-256' }, rsa: { name: 'RSASSA-PKCS1-v1_5' } };

const DAY_MS = 24 * 60 * 60 * 1000;
/** Validity starts an hour ago: a device or server whose clock runs a little behind still accepts it. */
const BACKDATE_MS = 60 * 60 * 1000;

/** A certificate and its private key, both PEM. */
export interface CertificateAndKey {
  cert: string;
  key: string;
}

function serial(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0] & 0x7f) | 0x01;
  return bytes.toString('hex');
}

function kindOf(key: webcrypto.CryptoKey): KeyKind {
  return key.algorithm.name === 'ECDSA' ? 'ec' : 'rsa';
}

async function keyPairOf(kind: KeyKind): Promise<webcrypto.CryptoKeyPair> {
  return webcrypto.subtle.generateKey(KEY_ALGORITHMS[kind], true, ['sign', 'verify']);
}

async function pemOfPrivateKey(key: webcrypto.CryptoKey): Promise<string> {
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key));
  return createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' }).export({
    type: 'pkcs8',
    format: 'pem',
  }) as string;
}

/** A PEM private key (PKCS #8, or SEC1/PKCS #1 as OpenSSL writes them) for signing. */
export async function importSigningKey(pem: string): Promise<webcrypto.CryptoKey> {
  const key = createPrivateKey(pem);
  const der = key.export({ type: 'pkcs8', format: 'der' });
  const algorithm = key.asymmetricKeyType === 'ec' ? KEY_ALGORITHMS.ec : KEY_ALGORITHMS.rsa;
  return webcrypto.subtle.importKey('pkcs8', der, algorithm, true, ['sign']);
}

/** A self-signed root CA, valid for `days` days. */
export async function makeCa(cn: string, kind: KeyKind = 'ec', days = 3650): Promise<CertificateAndKey> {
  const keys = await keyPairOf(kind);
  const now = Date.now();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: [{ CN: [cn] }],
    notBefore: new Date(now - BACKDATE_MS),
    notAfter: new Date(now + days * DAY_MS),
    signingAlgorithm: SIGNING_ALGORITHMS[kind],
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { cert: cert.toString('pem'), key: await pemOfPrivateKey(keys.privateKey) };
}

/** The issuer of `issue`: a CA certificate (PEM) and its key, read once. */
export interface Issuer {
  cert: x509.X509Certificate;
  key: webcrypto.CryptoKey;
}

export async function loadIssuer(caPem: string, keyPem: string): Promise<Issuer> {
  return { cert: new x509.X509Certificate(caPem), key: await importSigningKey(keyPem) };
}

export interface IssueOptions {
  /** Subject common name: a device's identifier. */
  cn: string;
  /** URIs among the subject alternative names (the verification token of a CA registration). */
  uris?: string[];
  kind?: KeyKind;
  days?: number;
}

/** An end-entity certificate `issuer` signs, with a new key. */
export async function issue(issuer: Issuer, options: IssueOptions): Promise<CertificateAndKey> {
  const keys = await keyPairOf(options.kind ?? 'ec');
  const now = Date.now();
  const extensions: x509.Extension[] = [
    new x509.BasicConstraintsExtension(false, undefined, true),
    new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
    new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.clientAuth]),
    await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    await x509.AuthorityKeyIdentifierExtension.create(issuer.cert),
  ];
  if (options.uris?.length) {
    extensions.push(
      new x509.SubjectAlternativeNameExtension(
        options.uris.map((value) => ({ type: 'url' as const, value })),
      ),
    );
  }
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: [{ CN: [options.cn] }],
    issuer: issuer.cert.subject,
    notBefore: new Date(now - BACKDATE_MS),
    notAfter: new Date(now + (options.days ?? 3650) * DAY_MS),
    signingAlgorithm: SIGNING_ALGORITHMS[kindOf(issuer.key)],
    publicKey: keys.publicKey,
    signingKey: issuer.key,
    extensions,
  });
  return { cert: cert.toString('pem'), key: await pemOfPrivateKey(keys.privateKey) };
}

/** The first common name of a certificate's subject (PEM), or null. */
export function commonNameOf(certPem: string): string | null {
  return new x509.X509Certificate(certPem).subjectName.getField('CN')[0] ?? null;
}

/** The serial number of a certificate (PEM) as the API writes it (decimal). */
export function serialOf(certPem: string): string {
  return BigInt(`0x${new x509.X509Certificate(certPem).serialNumber}`).toString(10);
}
