import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { readRows } from '../database/read-rows';
import type { Queryable, Tx } from '../database/transactions';
import { deviceCountSql, type DeviceListQuery, deviceListSql, devicePageSql } from './device-list.query';
import { DEVICE_COLUMNS, DEVICE_FROM, type DeviceRow } from './device-view';
import { Device } from './device.entity';

export type DeviceChanges = Partial<Pick<Device, 'description' | 'tags' | 'updatesEnabled'>>;

/** The `devices` table and the device counters its triggers keep (`product_device_counts`, `product_tag_counts`). */
@Injectable()
export class DevicesRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** Registers a device; an identifier already taken (anywhere) is pg's unique violation. */
  async insert(
    device: {
      orgId: string;
      productId: string;
      identifier: string;
      description: string | null;
      tags: string[];
    },
    tx: Tx,
  ): Promise<void> {
    await tx.getRepository(Device).insert(device);
  }

  /**
   * One page of a product's device list and the list's total, read at once through the pool: the page's ids first
   * (index-only scan of the sort index), the total from the counter rows when the filters allow (device-list.query.ts).
   */
  async listForProduct(productId: string, q: DeviceListQuery): Promise<{ rows: DeviceRow[]; total: number }> {
    const { where, orderBy, params } = deviceListSql(productId, q);
    const countQuery = deviceCountSql(productId, q, where, params);
    const [rows, [{ count }]] = await Promise.all([
      readRows<DeviceRow>(this.db, devicePageSql(where, orderBy, params), [
        ...params,
        q.page.pageSize,
        q.page.offset,
      ]),
      readRows<{ count: number }>(this.db, countQuery.sql, countQuery.params),
    ]);
    return { rows, total: count };
  }

  /** A device with its organization and product names, by id. */
  async findRowById(id: string): Promise<DeviceRow | null> {
    const rows = await this.db.query<DeviceRow[]>(
      `SELECT ${DEVICE_COLUMNS} FROM ${DEVICE_FROM} WHERE d.id = $1`,
      [id],
    );
    return rows[0] ?? null;
  }

  /** A product's device with its organization and product names, by identifier. */
  async findRowByIdentifier(productId: string, identifier: string): Promise<DeviceRow | null> {
    const rows = await this.db.query<DeviceRow[]>(
      `SELECT ${DEVICE_COLUMNS} FROM ${DEVICE_FROM} WHERE d.product_id = $1 AND d.identifier = $2`,
      [productId, identifier],
    );
    return rows[0] ?? null;
  }

  /** A product's device entity by identifier. */
  findByIdentifier(productId: string, identifier: string): Promise<Device | null> {
    return this.db.getRepository(Device).findOneBy({ productId, identifier });
  }

  /** A device's identifier by id. */
  async findIdentifierById(id: string, tx: Queryable = this.db): Promise<string | undefined> {
    const rows = await tx.query<{ identifier: string }[]>(`SELECT identifier FROM devices WHERE id = $1`, [
      id,
    ]);
    return rows[0]?.identifier;
  }

  /** Changes a product's device; false when there is none with that identifier. */
  async update(productId: string, identifier: string, changes: DeviceChanges, tx: Tx): Promise<boolean> {
    const result = await tx.getRepository(Device).update({ productId, identifier }, changes);
    return Boolean(result.affected);
  }

  /** Deletes a product's device; false when there is none with that identifier. */
  async delete(productId: string, identifier: string, tx: Tx): Promise<boolean> {
    const result = await tx.getRepository(Device).delete({ productId, identifier });
    return Boolean(result.affected);
  }

  /**
   * `fleethub demo`: devices `from`..`to` of a made-up fleet in one statement, spread over the org's products
   * (three gateways to one sensor) with tags from `tags`, a firmware version of their product and its metadata,
   * backdated registration and a connection history: about a third connected now, most seen within the last
   * week, one in twenty never. Numbering and spread come from `hashtext`, so the fleet is the same every time.
   */
  async insertDemoFleet(orgId: string, from: number, to: number, tags: readonly string[], tx: Queryable) {
    await tx.query(
      `WITH firmware AS (
         SELECT f.product_id, p.name AS product, f.uuid::text AS uuid, f.version, f.platform, f.architecture,
                f.author, f.description,
                row_number() OVER (PARTITION BY f.product_id ORDER BY f.version_sort_key) - 1 AS nth,
                count(*) OVER (PARTITION BY f.product_id) AS versions
           FROM firmwares f JOIN products p ON p.id = f.product_id WHERE p.org_id = $1
       ), numbered AS (
         SELECT i, CASE WHEN i % 4 = 0 THEN 'sensor' ELSE 'gateway' END AS product_name,
                (hashtext('demo' || i) & 2147483647) AS h
           FROM generate_series($2::int, $3::int) AS i
       )
       INSERT INTO devices (org_id, product_id, identifier, description, tags, connection_status,
                            last_communication, firmware_metadata, firmware_version, firmware_platform,
                            inserted_at)
       SELECT $1, p.id, 'demo-' || n.product_name || '-' || lpad(n.i::text, 5, '0'),
              'Demo ' || n.product_name || ' #' || n.i,
              ARRAY[($4::text[])[1 + n.h % 3], ($4::text[])[4 + (n.h / 3) % 2]]
                || CASE WHEN n.h % 5 = 0 THEN ARRAY[($4::text[])[6 + (n.h / 7) % 2]] ELSE '{}'::text[] END,
              CASE WHEN n.h % 20 = 0 THEN 'not_seen'
                   WHEN n.h % 3 = 0 THEN 'connected' ELSE 'disconnected' END::device_connection_status,
              CASE WHEN n.h % 20 = 0 THEN NULL
                   WHEN n.h % 3 = 0 THEN now() - make_interval(secs => n.h % 60)
                   ELSE now() - make_interval(mins => n.h % 10080) END,
              CASE WHEN n.h % 20 = 0 THEN NULL ELSE jsonb_build_object(
                'uuid', f.uuid, 'product', f.product, 'version', f.version, 'platform', f.platform,
                'architecture', f.architecture, 'author', f.author, 'description', f.description) END,
              CASE WHEN n.h % 20 = 0 THEN NULL ELSE f.version END,
              CASE WHEN n.h % 20 = 0 THEN NULL ELSE f.platform END,
              now() - make_interval(days => 30 + n.h % 60)
         FROM numbered n
         JOIN products p ON p.org_id = $1 AND p.name = n.product_name
         JOIN firmware f ON f.product_id = p.id AND f.nth = (n.h / 11) % f.versions`,
      [orgId, from, to, tags],
    );
  }

  /** How many devices the organization has, and how many of them are shown as connected. */
  async countConnectedInOrg(orgId: string, tx: Queryable = this.db) {
    const [counts] = await tx.query<{ devices: string; connected: string }[]>(
      `SELECT count(*) AS devices, count(*) FILTER (WHERE connection_status = 'connected') AS connected
         FROM devices WHERE org_id = $1`,
      [orgId],
    );
    return { devices: Number(counts.devices), connected: Number(counts.connected) };
  }
}
