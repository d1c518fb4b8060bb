import { type ParsedCertificate, readCertificateField } from '../certificates/x509';
import { DEVICE_IDENTIFIER_PATTERN } from './dto/device.dto';

/** NervesHub's import format, its default: Microchip's Trust&GO manifest (a JSON array of signed entries). */
export const TRUST_AND_GO = 'microchip_trust_and_go';

/** One manifest entry read: the device's identifier and its certificate, or why it cannot be imported. */
export type ManifestEntry =
  { identifier: string; cert: ParsedCertificate } | { identifier: string | null; error: string };

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function base64Json(text: string): unknown {
  try {
    return JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    return undefined;
  }
}

/**
 * One Trust&GO entry: `header.uniqueId` is the device's identifier; `payload` (base64url JSON) holds in
 * `publicKeySet.keys[]` the key with `x5c`, whose first element is the device's certificate (base64 DER). The
 * entry's signature (`protected`, `signature`) is Microchip's, over the manifest: it is not checked, as NervesHub
 * does not; the certificate is what the device will present.
 */
export function readTrustAndGoEntry(entry: unknown): ManifestEntry {
  if (!isObject(entry)) return { identifier: null, error: 'is not an object' };
  const uniqueId = isObject(entry.header) ? entry.header.uniqueId : undefined;
  if (typeof uniqueId !== 'string' || !DEVICE_IDENTIFIER_PATTERN.test(uniqueId)) {
    return { identifier: null, error: 'header.uniqueId must be a device identifier' };
  }
  const payload = typeof entry.payload === 'string' ? base64Json(entry.payload) : undefined;
  if (!isObject(payload)) return { identifier: uniqueId, error: 'payload is not base64url-encoded JSON' };
  const keys: unknown = isObject(payload.publicKeySet) ? payload.publicKeySet.keys : undefined;
  const withChain: unknown = Array.isArray(keys)
    ? keys.find((key) => isObject(key) && Array.isArray(key.x5c))
    : undefined;
  const der: unknown = isObject(withChain) && Array.isArray(withChain.x5c) ? withChain.x5c[0] : undefined;
  if (typeof der !== 'string' || !/^[A-Za-z0-9+/]+={0,2}$/.test(der)) {
    return { identifier: uniqueId, error: 'payload has no certificate (publicKeySet.keys[].x5c)' };
  }
  const pem = `-----BEGIN CERTIFICATE-----\n${der.replace(/(.{64})/g, '$1\n')}\n-----END CERTIFICATE-----\n`;
  const cert = readCertificateField(Buffer.from(pem).toString('base64'));
  if (typeof cert === 'string') return { identifier: uniqueId, error: `certificate ${cert}` };
  return { identifier: uniqueId, cert };
}
