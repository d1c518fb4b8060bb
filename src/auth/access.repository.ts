import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { readRows } from '../database/read-rows';
import {
  DEVICE_ACCESS,
  type DeviceAccessRow,
  ORG_ACCESS,
  ORG_AND_PRODUCT_ACCESS,
  type OrgAccessRow,
} from './access.queries';

/**
 * The guard's lookups of a caller's access (the statements of `access.queries.ts`, which the benchmark floor
 * shares), sent through the pg pool (`readRows`): they run on every request.
 */
@Injectable()
export class AccessRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** The caller's membership of the organization named `orgName`, or undefined. */
  async findOrgAccess(
    orgName: string,
    userId: string,
  ): Promise<(OrgAccessRow & Record<string, unknown>) | undefined> {
    return (
      await readRows<OrgAccessRow & Record<string, unknown>>(this.db, ORG_ACCESS, [orgName, userId])
    )[0];
  }

  /** findOrgAccess plus the organization's product named `productName` (joinedProductColumns, null when none). */
  async findOrgAndProductAccess(
    orgName: string,
    userId: string,
    productName: string,
  ): Promise<(OrgAccessRow & Record<string, unknown>) | undefined> {
    const rows = await readRows<OrgAccessRow & Record<string, unknown>>(this.db, ORG_AND_PRODUCT_ACCESS, [
      orgName,
      userId,
      productName,
    ]);
    return rows[0];
  }

  /** The device identified by `identifier` and the caller's membership of its organization, or undefined. */
  async findDeviceAccess(identifier: string, userId: string): Promise<DeviceAccessRow | undefined> {
    return (await readRows<DeviceAccessRow>(this.db, DEVICE_ACCESS, [identifier, userId]))[0];
  }
}
