import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { readRows } from '../database/read-rows';
import type { Queryable } from '../database/transactions';
import type { ParsedCertificate } from './x509';

/** A device certificate as the API answers for it. */
export interface DeviceCertificateRow {
  serial: string;
  aki: Buffer | null;
  ski: Buffer | null;
  not_before: Date;
  not_after: Date;
  fingerprint: string;
  public_key_fingerprint: string;
  last_used: Date | null;
  inserted_at: Date;
}

export interface NewDeviceCertificate {
  deviceId: string;
  serial: string;
  aki: Buffer | null;
  ski: Buffer | null;
  notBefore: Date;
  notAfter: Date;
  der: Buffer;
  fingerprint: string;
  publicKeyFingerprint: string;
}

/** What is stored of a parsed certificate registered for `deviceId`. */
export function newDeviceCertificate(deviceId: string, cert: ParsedCertificate): NewDeviceCertificate {
  return {
    deviceId,
    serial: cert.serial,
    aki: cert.aki,
    ski: cert.ski,
    notBefore: cert.notBefore,
    notAfter: cert.notAfter,
    der: cert.der,
    fingerprint: cert.fingerprint,
    publicKeyFingerprint: cert.publicKeyFingerprint,
  };
}

/** A device certificate the expiry scan claimed, with its device. */
export interface ExpiringDeviceCertificate {
  serial: string;
  fingerprint: string;
  not_after: Date;
  identifier: string;
  org_id: string;
  product: string | null;
}

const RECORD = `serial, aki, ski, not_before, not_after, fingerprint, public_key_fingerprint, last_used, inserted_at`;

/** The `device_certificates` table. */
@Injectable()
export class DeviceCertificatesRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * Claims up to `limit` certificates that expire within `days` and were not announced yet, and marks them
   * announced, in `tx` (their events are written in the same transaction: both commit or neither). By
   * `device_certificates_expiry_pending_idx` (the partial index of those not announced, by expiry); SKIP LOCKED:
   * instances scanning at once claim different rows, and a row another claimed is skipped or, once that commits,
   * no longer qualifies, so each certificate is announced once.
   */
  claimExpiring(days: number, limit: number, tx: Queryable): Promise<ExpiringDeviceCertificate[]> {
    return tx.query<ExpiringDeviceCertificate[]>(
      `WITH due AS (
         SELECT c.id FROM device_certificates c
          WHERE c.expiry_notified_at IS NULL
            AND c.not_after > now() AND c.not_after <= now() + $1::float8 * interval '1 day'
          ORDER BY c.not_after LIMIT $2
          FOR UPDATE SKIP LOCKED
       ), marked AS (
         UPDATE device_certificates c SET expiry_notified_at = now() FROM due WHERE c.id = due.id
         RETURNING c.device_id, c.serial, c.fingerprint, c.not_after
       )
       SELECT m.serial, m.fingerprint, m.not_after, d.identifier, d.org_id::text AS org_id, p.name AS product
         FROM marked m JOIN devices d ON d.id = m.device_id LEFT JOIN products p ON p.id = d.product_id
        ORDER BY m.not_after, d.identifier`,
      [days, limit],
    );
  }

  /** The device's certificates, in the order they were registered. */
  listForDevice(deviceId: string): Promise<DeviceCertificateRow[]> {
    return readRows<DeviceCertificateRow>(
      this.db,
      `SELECT ${RECORD} FROM device_certificates WHERE device_id = $1 ORDER BY id`,
      [deviceId],
    );
  }

  async findBySerial(deviceId: string, serial: string): Promise<DeviceCertificateRow | null> {
    const rows = await readRows<DeviceCertificateRow>(
      this.db,
      `SELECT ${RECORD} FROM device_certificates WHERE device_id = $1 AND serial = $2`,
      [deviceId, serial],
    );
    return rows[0] ?? null;
  }

  /** The id of the device holding the certificate with this fingerprint (unique across the server), or null. */
  async findDeviceIdByFingerprint(fingerprint: string): Promise<string | null> {
    const rows = await readRows<{ device_id: string }>(
      this.db,
      `SELECT device_id FROM device_certificates WHERE fingerprint = $1`,
      [fingerprint],
    );
    return rows[0]?.device_id ?? null;
  }

  /** Serializes registrations of one public key until the transaction ends (see keyHeldByAnotherDevice). */
  async lockPublicKey(publicKeyFingerprint: string, tx: Queryable): Promise<void> {
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext('device-key'), hashtext($1))`, [
      publicKeyFingerprint,
    ]);
  }

  /** True when a certificate of another device holds this public key. */
  async keyHeldByAnotherDevice(
    publicKeyFingerprint: string,
    deviceId: string,
    tx: Queryable,
  ): Promise<boolean> {
    const rows: unknown[] = await tx.query(
      `SELECT 1 FROM device_certificates WHERE public_key_fingerprint = $1 AND device_id <> $2 LIMIT 1`,
      [publicKeyFingerprint, deviceId],
    );
    return rows.length > 0;
  }

  /** Inserts a certificate; a serial the device holds, or a certificate registered already, is a unique violation. */
  async insert(cert: NewDeviceCertificate, tx: Queryable): Promise<DeviceCertificateRow> {
    const rows: DeviceCertificateRow[] = await tx.query(
      `INSERT INTO device_certificates
         (device_id, serial, aki, ski, not_before, not_after, der, fingerprint, public_key_fingerprint)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
       RETURNING ${RECORD}`,
      [
        cert.deviceId,
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
    return rows[0];
  }

  /** Which devices hold certificates with these public keys (for a bulk import). */
  holdersOfKeys(
    publicKeyFingerprints: string[],
    tx: Queryable,
  ): Promise<{ key: string; device_id: string }[]> {
    return tx.query(
      `SELECT DISTINCT public_key_fingerprint AS key, device_id FROM device_certificates
        WHERE public_key_fingerprint = ANY($1::varchar[])`,
      [publicKeyFingerprints],
    );
  }

  /** Which of these certificates are registered already (by fingerprint), and for which device. */
  registered(fingerprints: string[], tx: Queryable): Promise<{ fingerprint: string; device_id: string }[]> {
    return tx.query(
      `SELECT fingerprint, device_id FROM device_certificates WHERE fingerprint = ANY($1::varchar[])`,
      [fingerprints],
    );
  }

  /** Inserts many certificates in one statement; those a unique key refuses are skipped. Answers the inserted. */
  async insertMany(certs: NewDeviceCertificate[], tx: Queryable): Promise<Set<string>> {
    if (certs.length === 0) return new Set();
    const rows: { fingerprint: string }[] = await tx.query(
      `INSERT INTO device_certificates
         (device_id, serial, aki, ski, not_before, not_after, der, fingerprint, public_key_fingerprint)
       SELECT * FROM unnest($1::bigint[], $2::varchar[], $3::bytea[], $4::bytea[], $5::timestamptz[],
                            $6::timestamptz[], $7::bytea[], $8::varchar[], $9::varchar[])
       ON CONFLICT DO NOTHING RETURNING fingerprint`,
      [
        certs.map((c) => c.deviceId),
        certs.map((c) => c.serial),
        certs.map((c) => c.aki),
        certs.map((c) => c.ski),
        certs.map((c) => c.notBefore),
        certs.map((c) => c.notAfter),
        certs.map((c) => c.der),
        certs.map((c) => c.fingerprint),
        certs.map((c) => c.publicKeyFingerprint),
      ],
    );
    return new Set(rows.map((row) => row.fingerprint));
  }

  /** Deletes the device's certificate by serial; false when there was none. */
  async deleteBySerial(deviceId: string, serial: string, tx: Queryable): Promise<boolean> {
    const [, deleted]: [unknown, number] = await tx.query(
      `DELETE FROM device_certificates WHERE device_id = $1 AND serial = $2`,
      [deviceId, serial],
    );
    return deleted > 0;
  }
}
