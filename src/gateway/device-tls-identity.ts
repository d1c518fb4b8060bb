// @peculiar/x509 (through tsyringe) needs the Reflect metadata API when it loads.
import 'reflect-metadata';
import { createPrivateKey, randomBytes, webcrypto, X509Certificate } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { isIP } from 'node:net';
import { join } from 'node:path';
import * as x509 from '@peculiar/x509';
import type { AppConfig } from '../config/config';

/**
 * The mTLS device socket's server certificate: the configured files (`FLEETHUB_DEVICE_TLS_CERT`/`_KEY`), or by
 * default a private server CA and a certificate it signs, generated in `FLEETHUB_DATA_DIR/device-tls` on first start
 * and reused afterwards (the server certificate is made again, by the same CA, when it expires within 30 days or
 * does not name the host names the server is reached at). Devices trust that CA (`ca.pem`), which signs nothing else.
 */

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

export interface DeviceTlsIdentity {
  /** PEM: the server certificate (and its chain, when configured so). */
  cert: string;
  /** PEM private key. */
  key: string;
  /** The generated server CA devices must trust; null with a configured certificate. */
  caFile: string | null;
  /** What was generated at this start: nothing, the server certificate, or the CA and the server certificate. */
  generated: 'nothing' | 'server' | 'ca';
}

const DAY_MS = 24 * 60 * 60 * 1000;
const CA_LIFETIME_MS = 20 * 365 * DAY_MS;
const SERVER_LIFETIME_MS = 825 * DAY_MS;
const RENEW_BEFORE_MS = 30 * DAY_MS;
/** Validity starts this long before now (a device whose clock runs behind still accepts it). */
const BACKDATE_MS = 60 * 60 * 1000;
const KEY_ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256' };
const SIGNING_ALGORITHM = { name: 'ECDSA', hash: 'SHA-256' };

export const DEVICE_TLS_DIR = 'device-tls';

/** The names the generated server certificate carries: loopback, this host, the public URL's and HOST's names. */
export function serverNames(config: AppConfig): string[] {
  const names = ['localhost', '127.0.0.1', '::1', hostname()];
  try {
    names.push(new URL(config.publicUrl).hostname.replace(/^\[|\]$/g, ''));
  } catch {
    // the configuration checked it
  }
  if (config.host !== '0.0.0.0' && config.host !== '::') names.push(config.host);
  return [...new Set(names.filter((name) => name !== '').map((name) => name.toLowerCase()))];
}

async function readIfPresent(path: string): Promise<string | null> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/** Writes a file whole or not at all (a temporary file renamed over it). */
async function writeAtomically(path: string, content: string, mode: number): Promise<void> {
  const temporary = `${path}.${randomBytes(4).toString('hex')}.tmp`;
  await writeFile(temporary, content, { mode });
  await rename(temporary, path);
}

async function pemOfPrivateKey(key: webcrypto.CryptoKey): Promise<string> {
  const pkcs8 = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key));
  return createPrivateKey({ key: pkcs8, format: 'der', type: 'pkcs8' }).export({
    type: 'pkcs8',
    format: 'pem',
  }) as string;
}

async function importPrivateKey(pem: string): Promise<webcrypto.CryptoKey> {
  const der = createPrivateKey(pem).export({ type: 'pkcs8', format: 'der' });
  return webcrypto.subtle.importKey('pkcs8', der, KEY_ALGORITHM, true, ['sign']);
}

function serial(): string {
  const bytes = randomBytes(16);
  bytes[0] &= 0x7f;
  return bytes.toString('hex');
}

async function generateCa(): Promise<{ cert: string; key: string }> {
  const keys = await webcrypto.subtle.generateKey(KEY_ALGORITHM, true, ['sign', 'verify']);
  const now = Date.now();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: `CN=fleethub device socket CA ${randomBytes(4).toString('hex')}`,
    notBefore: new Date(now - BACKDATE_MS),
    notAfter: new Date(now + CA_LIFETIME_MS),
    signingAlgorithm: SIGNING_ALGORITHM,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { cert: cert.toString('pem'), key: await pemOfPrivateKey(keys.privateKey) };
}

async function generateServer(
  ca: { cert: string; key: string },
  names: string[],
): Promise<{ cert: string; key: string }> {
  const keys = await webcrypto.subtle.generateKey(KEY_ALGORITHM, true, ['sign', 'verify']);
  const issuer = new x509.X509Certificate(ca.cert);
  const now = Date.now();
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: `CN=${names[0]}`,
    issuer: issuer.subject,
    notBefore: new Date(now - BACKDATE_MS),
    notAfter: new Date(now + SERVER_LIFETIME_MS),
    signingAlgorithm: SIGNING_ALGORITHM,
    publicKey: keys.publicKey,
    signingKey: await importPrivateKey(ca.key),
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension(
        names.map((name) =>
          isIP(name) ? { type: 'ip' as const, value: name } : { type: 'dns' as const, value: name },
        ),
      ),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      await x509.AuthorityKeyIdentifierExtension.create(issuer),
    ],
  });
  return { cert: cert.toString('pem'), key: await pemOfPrivateKey(keys.privateKey) };
}

/** True when the stored server certificate can be kept: issued by this CA, not expiring soon, naming every name. */
function serverUsable(certPem: string, keyPem: string, caPem: string, names: string[]): boolean {
  try {
    const cert = new X509Certificate(certPem);
    const ca = new X509Certificate(caPem);
    if (!cert.checkIssued(ca) || !cert.verify(ca.publicKey)) return false;
    if (!cert.checkPrivateKey(createPrivateKey(keyPem))) return false;
    if (Date.parse(cert.validTo) - Date.now() < RENEW_BEFORE_MS) return false;
    return names.every((name) =>
      isIP(name) ? cert.checkIP(name) : cert.checkHost(name, { wildcards: false }),
    );
  } catch {
    return false;
  }
}

/** The configured server certificate and key, or the generated ones (made or renewed as needed). */
export async function loadDeviceTlsIdentity(config: AppConfig): Promise<DeviceTlsIdentity> {
  const tls = config.deviceTls;
  if (!tls) throw new Error('the mTLS device socket is not configured');
  if (tls.certFile && tls.keyFile) {
    return {
      cert: await readFile(tls.certFile, 'utf8'),
      key: await readFile(tls.keyFile, 'utf8'),
      caFile: null,
      generated: 'nothing',
    };
  }
  const dir = join(config.dataDir, DEVICE_TLS_DIR);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const files = {
    ca: join(dir, 'ca.pem'),
    caKey: join(dir, 'ca-key.pem'),
    server: join(dir, 'server.pem'),
    serverKey: join(dir, 'server-key.pem'),
  };
  let generated: DeviceTlsIdentity['generated'] = 'nothing';
  const storedCa = { cert: await readIfPresent(files.ca), key: await readIfPresent(files.caKey) };
  let ca: { cert: string; key: string };
  if (storedCa.cert === null || storedCa.key === null) {
    ca = await generateCa();
    await writeAtomically(files.caKey, ca.key, 0o600);
    await writeAtomically(files.ca, ca.cert, 0o644);
    generated = 'ca';
  } else {
    ca = { cert: storedCa.cert, key: storedCa.key };
  }
  const names = serverNames(config);
  const stored = { cert: await readIfPresent(files.server), key: await readIfPresent(files.serverKey) };
  let server: { cert: string; key: string };
  if (stored.cert === null || stored.key === null || !serverUsable(stored.cert, stored.key, ca.cert, names)) {
    server = await generateServer(ca, names);
    await writeAtomically(files.serverKey, server.key, 0o600);
    await writeAtomically(files.server, server.cert, 0o644);
    if (generated === 'nothing') generated = 'server';
  } else {
    server = { cert: stored.cert, key: stored.key };
  }
  return { cert: server.cert, key: server.key, caFile: files.ca, generated };
}
