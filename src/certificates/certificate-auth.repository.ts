import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { PreparedStatement, readRows } from '../database/read-rows';
import type { Queryable } from '../database/transactions';

/** A registered CA certificate as the device socket loads it. */
export interface TrustedCaRow {
  id: string;
  org_id: string;
  serial: string;
  der: Buffer;
  jitp_product_id: string | null;
  jitp_tags: string[];
  jitp_description: string | null;
}

/** A registered device certificate found by fingerprint, with its device. */
export interface RegisteredCertificateRow {
  certificate_id: string;
  /** The CA the socket registered it through; null: registered through the API. */
  ca_certificate_id: string | null;
  device_id: string;
  identifier: string;
  product_id: string;
  org_id: string;
}

export interface DeviceRow {
  id: string;
  org_id: string;
  product_id: string;
}

/** Who holds certificates of a public key, as the registration through a CA asks. */
export interface KeyHolders {
  otherDevice: boolean;
  deviceHasKey: boolean;
  deviceHasCertificates: boolean;
}

/** What a certificate the socket registers on a CA's authority is stored with. */
export interface SocketCertificate {
  deviceId: string;
  caCertificateId: string;
  serial: string;
  aki: Buffer | null;
  ski: Buffer | null;
  notBefore: Date;
  notAfter: Date;
  der: Buffer;
  fingerprint: string;
  publicKeyFingerprint: string;
}

/** Every connection's statement (prepared once per pool connection). */
const FIND_REGISTERED = new PreparedStatement(
  `SELECT r.*, (SELECT max(id) FROM ca_certificates) AS max_ca_id
     FROM (SELECT 1) AS one
     LEFT JOIN (SELECT dc.id AS certificate_id, dc.ca_certificate_id, d.id AS device_id, d.identifier,
                       d.product_id, d.org_id
                  FROM device_certificates dc JOIN devices d ON d.id = dc.device_id
                 WHERE dc.fingerprint = $1) AS r ON true`,
);

/** The device socket's reads and writes of `ca_certificates` and `device_certificates`. */
@Injectable()
export class CertificateAuthRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** Every registered CA certificate (of every organization). */
  allCas(): Promise<TrustedCaRow[]> {
    return readRows<TrustedCaRow>(
      this.db,
      `SELECT id, org_id, serial, der, jitp_product_id, jitp_tags, jitp_description FROM ca_certificates ORDER BY id`,
      [],
    );
  }

  /**
   * The registered certificate with this fingerprint and its device (or null), and the highest id of a registered
   * CA (a trust set that knows less is behind): one round trip for what every connection asks.
   */
  async findRegistered(
    fingerprint: string,
  ): Promise<{ registered: RegisteredCertificateRow | null; maxCaId: bigint }> {
    const rows = await readRows<RegisteredCertificateRow & { max_ca_id: string | null }>(
      this.db,
      FIND_REGISTERED,
      [fingerprint],
    );
    const { max_ca_id: maxCaId, ...registered } = rows[0];
    return {
      registered:
        registered.certificate_id === null
          ? null
          : { ...registered, certificate_id: String(registered.certificate_id) },
      maxCaId: BigInt(maxCaId ?? 0),
    };
  }

  /** The device holding an identifier (unique across the server), or null. */
  async deviceByIdentifier(identifier: string, tx: Queryable): Promise<DeviceRow | null> {
    const rows: DeviceRow[] = await tx.query(
      `SELECT id, org_id, product_id FROM devices WHERE identifier = $1`,
      [identifier],
    );
    return rows[0] ?? null;
  }

  /**
   * Outside a transaction, in one round trip: the device holding an identifier (or null) and who holds certificates
   * of the public key (`deviceHas...` false when there is no such device).
   */
  async registrationState(
    identifier: string,
    publicKeyFingerprint: string,
  ): Promise<{ device: DeviceRow | null; keys: KeyHolders }> {
    const rows = await readRows<{
      id: string | null;
      org_id: string;
      product_id: string;
      other_device: boolean;
      device_has_key: boolean;
      device_has_certificates: boolean;
    }>(
      this.db,
      `SELECT d.id, d.org_id, d.product_id,
              EXISTS (SELECT 1 FROM device_certificates
                       WHERE public_key_fingerprint = $2 AND device_id IS DISTINCT FROM d.id) AS other_device,
              EXISTS (SELECT 1 FROM device_certificates
                       WHERE public_key_fingerprint = $2 AND device_id = d.id) AS device_has_key,
              EXISTS (SELECT 1 FROM device_certificates WHERE device_id = d.id) AS device_has_certificates
         FROM (SELECT 1) AS one LEFT JOIN devices d ON d.identifier = $1`,
      [identifier, publicKeyFingerprint],
    );
    const row = rows[0];
    return {
      device: row.id === null ? null : { id: String(row.id), org_id: row.org_id, product_id: row.product_id },
      keys: {
        otherDevice: row.other_device,
        deviceHasKey: row.device_has_key,
        deviceHasCertificates: row.device_has_certificates,
      },
    };
  }

  /** The devices holding a certificate of this public key, and whether `deviceId` holds any certificate. */
  async keyHolders(publicKeyFingerprint: string, deviceId: string, tx: Queryable): Promise<KeyHolders> {
    const rows: { other_device: boolean; device_has_key: boolean; device_has_certificates: boolean }[] =
      await tx.query(
        `SELECT EXISTS (SELECT 1 FROM device_certificates
                         WHERE public_key_fingerprint = $1 AND device_id <> $2) AS other_device,
                EXISTS (SELECT 1 FROM device_certificates
                         WHERE public_key_fingerprint = $1 AND device_id = $2) AS device_has_key,
                EXISTS (SELECT 1 FROM device_certificates WHERE device_id = $2) AS device_has_certificates`,
        [publicKeyFingerprint, deviceId],
      );
    return {
      otherDevice: rows[0].other_device,
      deviceHasKey: rows[0].device_has_key,
      deviceHasCertificates: rows[0].device_has_certificates,
    };
  }

  /**
   * Registers a certificate on the authority of a CA, if that CA is still registered: none inserted when the CA
   * is gone or the certificate (fingerprint, or the device's serial) is taken, never an error for those.
   */
  async insertThroughCa(cert: SocketCertificate, tx: Queryable): Promise<boolean> {
    const rows: unknown[] = await tx.query(
      `INSERT INTO device_certificates
         (device_id, ca_certificate_id, serial, aki, ski, not_before, not_after, der, fingerprint,
          public_key_fingerprint, last_used)
       SELECT $1, id, $3, $4, $5, $6, $7, $8, $9, $10, now() FROM ca_certificates WHERE id = $2
       ON CONFLICT DO NOTHING
       RETURNING id`,
      [
        cert.deviceId,
        cert.caCertificateId,
        cert.serial,
        cert.aki,
        cert.ski,
        cert.notBefore,
        cert.notAfter,
        cert.der,
        cert.fingerprint,
        cert.publicKeyFingerprint,
      ],
    );
    return rows.length > 0;
  }

  /** The device holding the certificate with this fingerprint now, or null. */
  async deviceOfFingerprint(fingerprint: string, tx: Queryable): Promise<string | null> {
    const rows: { device_id: string }[] = await tx.query(
      `SELECT device_id FROM device_certificates WHERE fingerprint = $1`,
      [fingerprint],
    );
    return rows[0] ? String(rows[0].device_id) : null;
  }

  /** Records when certificates and CAs were last used (one statement each, however many). */
  async touch(
    certificates: { ids: string[]; ats: Date[] },
    cas: { ids: string[]; ats: Date[] },
  ): Promise<void> {
    if (certificates.ids.length > 0) {
      await this.db.query(
        `UPDATE device_certificates AS dc SET last_used = v.at
           FROM unnest($1::bigint[], $2::timestamptz[]) AS v(id, at)
          WHERE dc.id = v.id AND (dc.last_used IS NULL OR dc.last_used < v.at)`,
        [certificates.ids, certificates.ats],
      );
    }
    if (cas.ids.length > 0) {
      await this.db.query(
        `UPDATE ca_certificates AS c SET last_used = v.at
           FROM unnest($1::bigint[], $2::timestamptz[]) AS v(id, at)
          WHERE c.id = v.id AND (c.last_used IS NULL OR c.last_used < v.at)`,
        [cas.ids, cas.ats],
      );
    }
  }
}
