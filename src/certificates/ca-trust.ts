import type { X509Certificate } from 'node:crypto';
import { parseCertificate, type ParsedCertificate, type PresentedCertificate } from './x509';

/**
 * What the device socket trusts, in memory: every organization's registered CA certificates, and the path
 * validation of a presented certificate against them. No database here (see CaTrustStore for the loading and
 * CertificateDeviceAuthenticator for what needs the database).
 */

/** A registered CA certificate as the device socket uses it. */
export interface TrustedCa {
  id: string;
  orgId: string;
  serial: string;
  cert: ParsedCertificate;
  /** JITP: devices this CA signed are created in this product on their first connection. */
  jitp: { productId: string; tags: string[]; description: string | null } | null;
}

/** Why a presented certificate chain is not one a registered CA vouches for. */
export type ChainFailure =
  | 'unknown_ca'
  | 'ca_expired'
  | 'ca_not_yet_valid'
  | 'intermediate_expired'
  | 'intermediate_not_yet_valid'
  | 'bad_chain';

export type ChainResult =
  { ok: true; ca: TrustedCa; intermediates: ParsedCertificate[] } | { ok: false; reason: ChainFailure };

/** At most this many intermediate CAs between a device certificate and the registered CA. */
export const MAX_INTERMEDIATES = 4;

/** True when `issuer` issued `child`: names, key identifiers and key usage as OpenSSL checks them, and the signature. */
function issued(issuer: X509Certificate, child: X509Certificate): boolean {
  try {
    return child.checkIssued(issuer) && child.verify(issuer.publicKey);
  } catch {
    return false;
  }
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

/** The registered CA certificates, indexed by subject key identifier and by subject name. */
export class CaTrustSet {
  private readonly bySki = new Map<string, TrustedCa[]>();
  private readonly bySubject = new Map<string, TrustedCa[]>();
  /** The highest id of a registered CA in this set (a larger one in the database: the set is behind). */
  readonly maxId: bigint;

  constructor(readonly cas: readonly TrustedCa[]) {
    let maxId = 0n;
    for (const ca of cas) {
      if (ca.cert.ski) push(this.bySki, ca.cert.ski.toString('hex'), ca);
      push(this.bySubject, ca.cert.x509.subject, ca);
      if (BigInt(ca.id) > maxId) maxId = BigInt(ca.id);
    }
    this.maxId = maxId;
  }

  static empty(): CaTrustSet {
    return new CaTrustSet([]);
  }

  get size(): number {
    return this.cas.length;
  }

  /**
   * Registered CAs that may have issued `cert`: by its authority key identifier (when read), and by its issuer's
   * name (node:crypto's text of it, as for the CA's subject).
   */
  private candidates(cert: PresentedCertificate): TrustedCa[] {
    const byKey = cert.aki ? (this.bySki.get(cert.aki.toString('hex')) ?? []) : [];
    const byName = this.bySubject.get(cert.x509.issuer) ?? [];
    if (byName.length === 0) return byKey;
    if (byKey.length === 0) return byName;
    return [...new Set([...byKey, ...byName])];
  }

  /**
   * Path validation of a device certificate (`leaf`) with the certificates the device sent after it (`presented`,
   * any order): a registered CA must have issued it, directly or through up to MAX_INTERMEDIATES intermediate CAs
   * the device sent. Checked: every signature and issuance (names, key identifiers, key usage: node:crypto's
   * `checkIssued` and `verify`), that every issuer is a CA (basicConstraints), the path length constraints, the
   * validity dates of the intermediates and of the registered CA at `now` (the leaf's own dates are the caller's).
   * A CA or intermediate with name constraints is refused (they are not evaluated here). The registered CA nearest
   * to the device certificate decides (its organization, its JITP template), as NervesHub finds the CA by the
   * certificate's authority key identifier.
   */
  verify(leaf: PresentedCertificate, presented: readonly ParsedCertificate[], now: number): ChainResult {
    let current: PresentedCertificate = leaf;
    const path: ParsedCertificate[] = [];
    const used = new Set<ParsedCertificate>();
    let failure: ChainFailure = 'unknown_ca';
    for (;;) {
      for (const ca of this.candidates(current)) {
        if (!issued(ca.cert.x509, current.x509)) continue;
        if (ca.cert.notAfter.getTime() < now) {
          failure = 'ca_expired';
          continue;
        }
        if (ca.cert.notBefore.getTime() > now) {
          failure = 'ca_not_yet_valid';
          continue;
        }
        if (!withinPathLength(ca.cert, path.length) || ca.cert.nameConstraints) {
          failure = 'bad_chain';
          continue;
        }
        return { ok: true, ca, intermediates: path };
      }
      if (path.length >= MAX_INTERMEDIATES) return { ok: false, reason: failure };
      const next = presented.find(
        (candidate) => !used.has(candidate) && candidate.isCa && issued(candidate.x509, current.x509),
      );
      if (!next) return { ok: false, reason: failure };
      if (next.notAfter.getTime() < now) return { ok: false, reason: 'intermediate_expired' };
      if (next.notBefore.getTime() > now) return { ok: false, reason: 'intermediate_not_yet_valid' };
      if (!withinPathLength(next, path.length) || next.nameConstraints)
        return { ok: false, reason: 'bad_chain' };
      used.add(next);
      path.push(next);
      current = next;
    }
  }
}

/** A CA may be followed by at most its pathLenConstraint intermediates before the end-entity certificate. */
function withinPathLength(ca: ParsedCertificate, intermediatesBelow: number): boolean {
  return ca.pathLength === null || intermediatesBelow <= ca.pathLength;
}

/** Reads DER certificates the device presented after its own; unreadable ones are left out. */
export function parsePresented(ders: readonly Buffer[]): ParsedCertificate[] {
  const out: ParsedCertificate[] = [];
  for (const der of ders) {
    const parsed = parseCertificate(der);
    if (typeof parsed !== 'string') out.push(parsed);
  }
  return out;
}
