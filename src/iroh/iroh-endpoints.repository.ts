import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { PageRequest } from '../common/http/page-request';
import { readRows } from '../database/read-rows';
import type { Queryable } from '../database/transactions';
import { type EndpointRow, OWNER_JOINS, RECORD_COLUMNS } from './endpoint-view';
import { type IrohListQuery, irohListStatements } from './iroh-list.query';

/** The row currently holding a key, locked while a device's report is decided. */
export interface HolderRow {
  id: string;
  org_id: string;
  service: string;
  instance: string;
  device_id: string | null;
  user_id: string | null;
}

/** A page of the list: its rows, and the total of all matches with the page asked (when paginated). */
export interface EndpointListing {
  rows: EndpointRow[];
  paging?: { page: PageRequest; total: number };
}

/**
 * The `iroh_endpoints` table (and its counter rows). Reads that answer for endpoints join their holders (the
 * device's identifier, the member's email and name). The list's statements (`iroh-list.query.ts`, shared with
 * the benchmark floor) go through the pg pool (`readRows`).
 */
@Injectable()
export class IrohEndpointsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** The org's endpoints as `query` narrows and pages them (see irohListStatements). */
  async list(orgId: string, query: IrohListQuery): Promise<EndpointListing> {
    const statements = irohListStatements(orgId, query);
    switch (statements.kind) {
      case 'all':
        return { rows: await readRows<EndpointRow>(this.db, statements.all.sql, statements.all.params) };
      case 'searchPage': {
        const { sql, params } = statements.searchPage;
        const rows = await readRows<EndpointRow & { total: number }>(this.db, sql, params);
        const hits = rows.filter((row) => row.identifier !== null);
        return { rows: hits, paging: { page: statements.page, total: rows[0].total } };
      }
      case 'page': {
        const [rows, [{ total }]] = await Promise.all([
          readRows<EndpointRow>(this.db, statements.rows.sql, statements.rows.params),
          readRows<{ total: number }>(this.db, statements.count.sql, statements.count.params),
        ]);
        return { rows, paging: { page: statements.page, total } };
      }
    }
  }

  /** Inserts an endpoint registered by hand (source `operator`); a unique violation when the key is taken. */
  async insertOperator(
    endpoint: {
      orgId: string;
      identifier: string;
      service: string;
      instance: string;
      details: Record<string, unknown>;
      userId: string | null;
    },
    tx: Queryable,
  ): Promise<EndpointRow> {
    const inserted: EndpointRow[] = await tx.query(
      `WITH e AS (
         INSERT INTO iroh_endpoints (org_id, identifier, service, instance, details, source, user_id)
         VALUES ($1, $2, $3, $4, $5, 'operator', $6)
         RETURNING *
       )
       SELECT ${RECORD_COLUMNS} FROM e ${OWNER_JOINS}`,
      [
        endpoint.orgId,
        endpoint.identifier,
        endpoint.service,
        endpoint.instance,
        endpoint.details,
        endpoint.userId,
      ],
    );
    return inserted[0];
  }

  async findInOrg(orgId: string, service: string, identifier: string): Promise<EndpointRow | undefined> {
    const rows: EndpointRow[] = await this.db.query(
      `SELECT ${RECORD_COLUMNS} FROM iroh_endpoints e ${OWNER_JOINS}
        WHERE e.org_id = $1 AND e.service = $2 AND e.identifier = $3`,
      [orgId, service, identifier],
    );
    return rows[0];
  }

  /** How many rows were deleted (0 or 1). */
  async deleteInOrg(orgId: string, service: string, identifier: string, tx: Queryable): Promise<number> {
    const [, deleted]: [unknown, number] = await tx.query(
      `DELETE FROM iroh_endpoints WHERE org_id = $1 AND service = $2 AND identifier = $3`,
      [orgId, service, identifier],
    );
    return deleted;
  }

  /** The endpoints the device holds, optionally of one instance, by instance. */
  async listForDevice(deviceId: string, instance: string | null): Promise<EndpointRow[]> {
    return this.db.query<EndpointRow[]>(
      `SELECT ${RECORD_COLUMNS} FROM iroh_endpoints e ${OWNER_JOINS}
        WHERE e.device_id = $1 AND ($2::text IS NULL OR e.instance = $2)
        ORDER BY e.instance`,
      [deviceId, instance],
    );
  }

  /** A device's endpoints follow it to another organization (NervesHub: they name the device's organization). */
  async moveDeviceEndpoints(deviceId: string, orgId: string, tx: Queryable): Promise<void> {
    await tx.query(`UPDATE iroh_endpoints SET org_id = $2 WHERE device_id = $1 AND org_id <> $2`, [
      deviceId,
      orgId,
    ]);
  }

  /** The same for many devices moving to one organization (a bulk move), in one statement. */
  async moveDevicesEndpoints(deviceIds: readonly string[], orgId: string, tx: Queryable): Promise<void> {
    await tx.query(
      `UPDATE iroh_endpoints SET org_id = $2 WHERE device_id = ANY($1::bigint[]) AND org_id <> $2`,
      [deviceIds, orgId],
    );
  }

  /** The row holding the key, locked until the transaction ends. */
  async lockHolder(identifier: string, tx: Queryable): Promise<HolderRow | undefined> {
    const [holder]: HolderRow[] = await tx.query(
      `SELECT id, org_id, service, instance, device_id, user_id FROM iroh_endpoints
        WHERE identifier = $1 FOR UPDATE`,
      [identifier],
    );
    return holder;
  }

  async insertDeviceReported(
    endpoint: {
      orgId: string;
      identifier: string;
      service: string;
      instance: string;
      details: Record<string, unknown>;
      deviceId: string;
    },
    tx: Queryable,
  ): Promise<void> {
    await tx.query(
      `INSERT INTO iroh_endpoints
         (org_id, identifier, service, instance, details, source, device_id, last_reported_at)
       VALUES ($1, $2, $3, $4, $5, 'device_reported', $6, now())`,
      [
        endpoint.orgId,
        endpoint.identifier,
        endpoint.service,
        endpoint.instance,
        endpoint.details,
        endpoint.deviceId,
      ],
    );
  }

  /** A device's report of a key it already holds: new details, reported now. */
  async refreshReported(id: string, details: Record<string, unknown>, tx: Queryable): Promise<void> {
    await tx.query(
      `UPDATE iroh_endpoints SET details = $2, last_reported_at = now(), updated_at = now() WHERE id = $1`,
      [id, details],
    );
  }

  /** The device takes over the row: it becomes device-reported, under `instance`. */
  async claimForDevice(
    id: string,
    deviceId: string,
    instance: string,
    details: Record<string, unknown>,
    tx: Queryable,
  ): Promise<void> {
    await tx.query(
      `UPDATE iroh_endpoints
          SET device_id = $2, source = 'device_reported', instance = $3, details = $4,
              last_reported_at = now(), updated_at = now()
        WHERE id = $1`,
      [id, deviceId, instance, details],
    );
  }

  /** Removes the key the device holds for `service` and `instance`, other than `identifier`. */
  async deleteDeviceInstanceExcept(
    deviceId: string,
    service: string,
    instance: string,
    identifier: string,
    tx: Queryable,
  ): Promise<void> {
    await tx.query(
      `DELETE FROM iroh_endpoints WHERE device_id = $1 AND service = $2 AND instance = $3 AND identifier <> $4`,
      [deviceId, service, instance, identifier],
    );
  }

  /**
   * `fleethub demo`: every tenth device of the organization that has communicated (by id) reported an endpoint
   * when it last communicated. The ids are made up from `salt` and the device's identifier.
   */
  async insertDemoDeviceReported(orgId: string, salt: string, tx: Queryable): Promise<void> {
    await tx.query(
      `INSERT INTO iroh_endpoints (org_id, identifier, source, device_id, last_reported_at)
       SELECT $1, encode(sha256(convert_to('demo-iroh-' || $2 || '-' || d.identifier, 'UTF8')), 'hex'),
              'device_reported', d.id, d.last_communication
         FROM devices d
        WHERE d.org_id = $1 AND d.last_communication IS NOT NULL AND d.id % 10 = 0`,
      [orgId, salt],
    );
  }

  /** How many endpoints the organization has. */
  async countInOrg(orgId: string, tx: Queryable = this.db): Promise<number> {
    const [row] = await tx.query<{ n: string }[]>(
      `SELECT count(*) AS n FROM iroh_endpoints WHERE org_id = $1`,
      [orgId],
    );
    return Number(row.n);
  }
}
