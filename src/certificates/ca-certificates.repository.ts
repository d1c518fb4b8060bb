import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { readRows } from '../database/read-rows';
import type { Queryable } from '../database/transactions';

/** A CA certificate as the API answers for it: its columns, with the JITP product's name. */
export interface CaRow {
  serial: string;
  not_before: Date;
  not_after: Date;
  description: string | null;
  jitp_product_name: string | null;
  jitp_tags: string[];
  jitp_description: string | null;
}

export interface NewCaCertificate {
  orgId: string;
  serial: string;
  aki: Buffer | null;
  ski: Buffer;
  notBefore: Date;
  notAfter: Date;
  description: string | null;
  der: Buffer;
  jitp: { productId: string; tags: string[]; description: string | null } | null;
}

/** A CA certificate the expiry scan claimed. */
export interface ExpiringCaCertificate {
  serial: string;
  org_id: string;
  not_after: Date;
  description: string | null;
}

/** PostgreSQL's NOTIFY channel: a CA certificate was registered or deleted (the device sockets' trust sets reload). */
export const CA_CHANGES_CHANNEL = 'ca_certificates_changed';

const RECORD = `c.serial, c.not_before, c.not_after, c.description,
       p.name AS jitp_product_name, c.jitp_tags, c.jitp_description`;

/** The `ca_certificates` table. Reads join the JITP product for its name. */
@Injectable()
export class CaCertificatesRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * Claims up to `limit` CA certificates that expire within `days` and were not announced yet, and marks them
   * announced, in `tx` (as DeviceCertificatesRepository.claimExpiring, by `ca_certificates_expiry_pending_idx`).
   */
  claimExpiring(days: number, limit: number, tx: Queryable): Promise<ExpiringCaCertificate[]> {
    return tx.query<ExpiringCaCertificate[]>(
      `WITH due AS (
         SELECT c.id FROM ca_certificates c
          WHERE c.expiry_notified_at IS NULL
            AND c.not_after > now() AND c.not_after <= now() + $1::float8 * interval '1 day'
          ORDER BY c.not_after LIMIT $2
          FOR UPDATE SKIP LOCKED
       ), marked AS (
         UPDATE ca_certificates c SET expiry_notified_at = now() FROM due WHERE c.id = due.id
         RETURNING c.serial, c.org_id::text AS org_id, c.not_after, c.description
       )
       SELECT * FROM marked ORDER BY not_after, serial`,
      [days, limit],
    );
  }

  /** The organization's CA certificates, in the order they were registered. */
  listForOrg(orgId: string): Promise<CaRow[]> {
    return readRows<CaRow>(
      this.db,
      `SELECT ${RECORD} FROM ca_certificates c LEFT JOIN products p ON p.id = c.jitp_product_id
        WHERE c.org_id = $1 ORDER BY c.id`,
      [orgId],
    );
  }

  async findBySerial(orgId: string, serial: string): Promise<CaRow | null> {
    const rows = await readRows<CaRow>(
      this.db,
      `SELECT ${RECORD} FROM ca_certificates c LEFT JOIN products p ON p.id = c.jitp_product_id
        WHERE c.org_id = $1 AND c.serial = $2`,
      [orgId, serial],
    );
    return rows[0] ?? null;
  }

  /**
   * Serializes registrations of one CA key (by subject key identifier) until the transaction ends, so that the
   * "held by another organization" check and the insert cannot interleave with another registration's.
   */
  async lockKey(ski: Buffer, tx: Queryable): Promise<void> {
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext('ca-key'), hashtext(encode($1::bytea, 'hex')))`, [
      ski,
    ]);
  }

  /** True when another organization has registered a CA certificate with this subject key identifier. */
  async keyHeldElsewhere(ski: Buffer, orgId: string, tx: Queryable): Promise<boolean> {
    const rows: unknown[] = await tx.query(
      `SELECT 1 FROM ca_certificates WHERE ski = $1 AND org_id <> $2 LIMIT 1`,
      [ski, orgId],
    );
    return rows.length > 0;
  }

  /** The organizations holding a CA certificate whose subject key identifier is `ski`. */
  async orgsOfKey(ski: Buffer, tx: Queryable): Promise<string[]> {
    const rows: { org_id: string }[] = await tx.query(
      `SELECT DISTINCT org_id FROM ca_certificates WHERE ski = $1`,
      [ski],
    );
    return rows.map((row) => row.org_id);
  }

  /** Inserts a CA certificate; `(org, serial)` taken is pg's unique violation. */
  async insert(ca: NewCaCertificate, tx: Queryable): Promise<{ serial: string }> {
    const rows: { serial: string }[] = await tx.query(
      `INSERT INTO ca_certificates
         (org_id, serial, aki, ski, not_before, not_after, description, der,
          jitp_product_id, jitp_tags, jitp_description)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
       RETURNING serial`,
      [
        ca.orgId,
        ca.serial,
        ca.aki,
        ca.ski,
        ca.notBefore,
        ca.notAfter,
        ca.description,
        ca.der,
        ca.jitp?.productId ?? null,
        ca.jitp?.tags ?? [],
        ca.jitp?.description ?? null,
      ],
    );
    return rows[0];
  }

  /** Tells every instance's device socket, when `tx` commits, that the registered CAs changed (they reload them). */
  async notifyChanged(tx: Queryable): Promise<void> {
    await tx.query(`SELECT pg_notify($1, '')`, [CA_CHANGES_CHANNEL]);
  }

  /** Deletes the organization's CA certificate by serial; false when there was none. */
  async deleteBySerial(orgId: string, serial: string, tx: Queryable): Promise<boolean> {
    const [, deleted]: [unknown, number] = await tx.query(
      `DELETE FROM ca_certificates WHERE org_id = $1 AND serial = $2`,
      [orgId, serial],
    );
    return deleted > 0;
  }
}
