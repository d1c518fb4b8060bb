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
}
