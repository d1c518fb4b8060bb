import { generateKeyPairSync } from 'node:crypto';
import { ca, leaf } from './cert-builder';

/** The identifiers the generator gives: `SN` and 8 digits (the template's common name has the same length). */
export const tngIdentifier = (n: number) => `SN${String(n).padStart(8, '0')}`;

export interface TngEntry {
  header: { uniqueId: string };
  payload: string;
  protected: string;
  signature: string;
}

/** A Trust&GO entry around one DER certificate, as Microchip's manifests have them. */
export function tngEntry(uniqueId: string, der: Buffer): TngEntry {
  const payload = {
    model: 'ATECC608B',
    partNumber: 'ATECC608B-TNGTLSU-G',
    publicKeySet: { keys: [{ kid: '0', kty: 'EC', crv: 'P-256', x5c: [der.toString('base64')] }] },
  };
  return {
    header: { uniqueId },
    payload: Buffer.from(JSON.stringify(payload)).toString('base64url'),
    protected: Buffer.from('{"alg":"ES256"}').toString('base64url'),
    signature: 'unused',
  };
}

/**
 * `count` device certificates for a Trust&GO manifest, fast: one certificate is made properly (signed by a test
 * CA, common name `SN00000000`), then each device's is that one with its own common name and its own P-256
 * public key written over the template's (same lengths). Their signatures do not verify, which the import does
 * not check (the device proves its key when it connects); everything it reads is the device's own.
 */
export async function generateTngCertificates(
  count: number,
  first = 1,
): Promise<{ identifier: string; der: Buffer }[]> {
  const root = await ca({ cn: 'Test Trust&GO signer' });
  const template = await leaf(root, { cn: tngIdentifier(0) });
  const der = Buffer.from(template.cert.rawData);
  const templateKey = Buffer.from(await crypto.subtle.exportKey('spki', template.keys.publicKey)).subarray(
    -65,
  );
  const cnAt = der.indexOf(Buffer.from(tngIdentifier(0)));
  const keyAt = der.indexOf(templateKey);
  if (cnAt < 0 || keyAt < 0) throw new Error('template certificate without its common name or key');
  const certificates: { identifier: string; der: Buffer }[] = [];
  for (let n = first; n < first + count; n++) {
    const identifier = tngIdentifier(n);
    const { publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const point = publicKey.export({ type: 'spki', format: 'der' }).subarray(-65);
    const cert = Buffer.from(der);
    cert.write(identifier, cnAt, 'latin1');
    point.copy(cert, keyAt);
    certificates.push({ identifier, der: cert });
  }
  return certificates;
}
