import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AuditService } from '../audit/audit.service';
import type { DeviceAccess, OrgAccess } from '../common/auth/actor';
import { DomainError } from '../common/errors/domain-error';
import { isForeignKeyViolation, isUniqueViolation, pgError } from '../common/errors/postgres-errors';
import { Created, pathSegment } from '../common/http/created';
import { type PaginationView, paginationView, type RawQuery } from '../common/http/pagination';
import { normaliseTags } from '../common/values';
import { readRows } from '../database/read-rows';
import { ProductsService } from '../products/products.service';
import type { Product } from '../products/product.entity';
import { DeviceConsole, UpdateNotifier } from './device-console';
import { deviceCountSql, deviceListSql, devicePageSql, parseDeviceListQuery } from './device-list.query';
import { DEVICE_COLUMNS, DEVICE_FROM, type DeviceRow, deviceView } from './device-view';
import { Device } from './device.entity';
import type {
  ConsoleCodeDto,
  CreateDeviceDto,
  DeviceView,
  UpdateDeviceDto,
  UpgradeDto,
} from './dto/device.dto';

/** pending_updates.firmware_id → firmwares (migrations/1795322356360-Init.ts). */
const PENDING_UPDATE_FIRMWARE_FK = 'FK_59da91b0017916881c7303e3b9b';
const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

@Injectable()
export class DevicesService {
  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly products: ProductsService,
    private readonly console: DeviceConsole,
    private readonly updates: UpdateNotifier,
    private readonly audit: AuditService,
  ) {}

  async create(
    access: OrgAccess,
    productName: string,
    dto: CreateDeviceDto,
  ): Promise<Created<{ data: DeviceView }>> {
    const product = await this.products.findInOrg(access, productName);
    try {
      await this.db.transaction(async (tx) => {
        await tx.getRepository(Device).insert({
          orgId: access.orgId,
          productId: product.id,
          identifier: dto.identifier,
          description: dto.description ?? null,
          tags: normaliseTags(dto.tags),
        });
        await this.audit.record(tx, {
          orgId: access.orgId,
          actor: access.actor,
          action: 'device.create',
          targetType: 'device',
          targetId: dto.identifier,
          details: { product: product.name },
        });
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw DomainError.invalidField('identifier', 'has already been taken');
      throw err;
    }
    const device = await this.load(product, dto.identifier);
    return new Created(this.location(access, product, dto.identifier), { data: device! });
  }

  async list(
    access: OrgAccess,
    productName: string,
    query: RawQuery,
  ): Promise<{ data: DeviceView[]; pagination: PaginationView }> {
    const listQuery = parseDeviceListQuery(query);
    const product = await this.products.findInOrg(access, productName);
    const { where, orderBy, params } = deviceListSql(product.id, listQuery);
    const countQuery = deviceCountSql(product.id, listQuery, where, params);
    const [rows, [{ count }]] = await Promise.all([
      readRows<DeviceRow>(this.db, devicePageSql(where, orderBy, params), [
        ...params,
        listQuery.page.pageSize,
        listQuery.page.offset,
      ]),
      readRows<{ count: number }>(this.db, countQuery.sql, countQuery.params),
    ]);
    return { data: rows.map(deviceView), pagination: paginationView(listQuery.page, count) };
  }

  async show(access: OrgAccess, productName: string, identifier: string): Promise<{ data: DeviceView }> {
    const product = await this.products.findInOrg(access, productName);
    const device = await this.load(product, identifier);
    if (!device) throw DomainError.notFound();
    return { data: device };
  }

  /** `GET /api/devices/{identifier}`: the guard found the device among the caller's organizations. */
  async showById(access: DeviceAccess): Promise<{ data: DeviceView }> {
    const rows = await this.db.query<DeviceRow[]>(
      `SELECT ${DEVICE_COLUMNS} FROM ${DEVICE_FROM} WHERE d.id = $1`,
      [access.deviceId],
    );
    if (!rows[0]) throw DomainError.notFound();
    return { data: deviceView(rows[0]) };
  }

  async update(
    access: OrgAccess,
    productName: string,
    identifier: string,
    dto: UpdateDeviceDto,
  ): Promise<{ data: DeviceView }> {
    const product = await this.products.findInOrg(access, productName);
    const changes: Partial<Device> = {};
    if (dto.description !== undefined) changes.description = dto.description;
    if (dto.tags !== undefined) changes.tags = normaliseTags(dto.tags);
    if (dto.updates_enabled !== undefined) changes.updatesEnabled = dto.updates_enabled;
    if (Object.keys(changes).length > 0) {
      await this.db.transaction(async (tx) => {
        const result = await tx.getRepository(Device).update({ productId: product.id, identifier }, changes);
        if (!result.affected) throw DomainError.notFound();
        await this.audit.record(tx, {
          orgId: access.orgId,
          actor: access.actor,
          action: 'device.update',
          targetType: 'device',
          targetId: identifier,
          details: { product: product.name, ...dto },
        });
      });
    }
    const device = await this.load(product, identifier);
    if (!device) throw DomainError.notFound();
    return { data: device };
  }

  async remove(access: OrgAccess, productName: string, identifier: string): Promise<void> {
    const product = await this.products.findInOrg(access, productName);
    await this.db.transaction(async (tx) => {
      const result = await tx.getRepository(Device).delete({ productId: product.id, identifier });
      if (!result.affected) throw DomainError.notFound();
      await this.audit.record(tx, {
        orgId: access.orgId,
        actor: access.actor,
        action: 'device.delete',
        targetType: 'device',
        targetId: identifier,
        details: { product: product.name },
      });
    });
  }

  /** Records the manual upgrade (one per device; a newer one replaces one not yet delivered). */
  async upgrade(access: OrgAccess, productName: string, identifier: string, dto: UpgradeDto): Promise<void> {
    const product = await this.products.findInOrg(access, productName);
    const device = await this.db.getRepository(Device).findOneBy({ productId: product.id, identifier });
    if (!device) throw DomainError.notFound();
    await this.recordUpgrade(access, device.id, identifier, product.id, dto.uuid);
  }

  async upgradeById(access: DeviceAccess, dto: UpgradeDto): Promise<void> {
    await this.recordUpgrade(access, access.deviceId, null, access.productId, dto.uuid);
  }

  async sendConsoleCode(access: DeviceAccess, dto: ConsoleCodeDto): Promise<void> {
    const code = dto.code ?? dto.body;
    if (code === undefined || code === '') throw DomainError.invalidField('code', "can't be blank");
    const delivered = await this.console.send(access.deviceId, code);
    if (!delivered) throw DomainError.conflict('device is not connected');
  }

  private async recordUpgrade(
    access: OrgAccess,
    deviceId: string,
    identifier: string | null,
    productId: string,
    uuid: string,
  ): Promise<void> {
    const firmwareId = UUID_PATTERN.test(uuid)
      ? (
          await this.db.query<{ id: string }[]>(
            `SELECT id FROM firmwares WHERE product_id = $1 AND uuid = $2`,
            [productId, uuid.toLowerCase()],
          )
        )[0]?.id
      : undefined;
    if (!firmwareId) throw DomainError.invalidField('uuid', 'does not match a firmware of this product');
    try {
      await this.recordPendingUpdate(access, deviceId, identifier, firmwareId, uuid);
    } catch (err) {
      // The firmware, the device or the caller's user was deleted since they were read.
      if (!isForeignKeyViolation(err)) throw err;
      if (pgError(err)?.constraint === PENDING_UPDATE_FIRMWARE_FK) {
        throw DomainError.invalidField('uuid', 'does not match a firmware of this product');
      }
      throw DomainError.notFound();
    }
    await this.updates.pendingUpdateChanged(deviceId);
  }

  private async recordPendingUpdate(
    access: OrgAccess,
    deviceId: string,
    identifier: string | null,
    firmwareId: string,
    uuid: string,
  ): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.query(
        `INSERT INTO pending_updates (device_id, firmware_id, requested_by_id) VALUES ($1, $2, $3)
         ON CONFLICT (device_id) DO UPDATE
           SET firmware_id = EXCLUDED.firmware_id, requested_by_id = EXCLUDED.requested_by_id,
               inserted_at = now(), delivered_at = NULL`,
        [deviceId, firmwareId, access.actor.userId],
      );
      await this.audit.record(tx, {
        orgId: access.orgId,
        actor: access.actor,
        action: 'device.upgrade',
        targetType: 'device',
        targetId:
          identifier ??
          (
            await tx.query<{ identifier: string }[]>(`SELECT identifier FROM devices WHERE id = $1`, [
              deviceId,
            ])
          )[0]?.identifier ??
          deviceId,
        details: { firmware_uuid: uuid.toLowerCase() },
      });
    });
  }

  private async load(product: Product, identifier: string) {
    const rows = await this.db.query<DeviceRow[]>(
      `SELECT ${DEVICE_COLUMNS} FROM ${DEVICE_FROM} WHERE d.product_id = $1 AND d.identifier = $2`,
      [product.id, identifier],
    );
    return rows[0] ? deviceView(rows[0]) : null;
  }

  private location(access: OrgAccess, product: Product, identifier: string): string {
    return `/api/orgs/${pathSegment(access.orgName)}/products/${pathSegment(product.name)}/devices/${pathSegment(identifier)}`;
  }
}
