import { Injectable } from '@nestjs/common';
import { AuditService } from '../audit/audit.service';
import type { OrgAccess } from '../common/auth/actor';
import {
  extensionChanges,
  extensionSettings,
  type ExtensionSettings,
  PRODUCT_EXTENSION_DEFAULTS,
} from '../common/extensions/extension-settings';
import type { ExtensionSettingsDto } from '../common/extensions/extension-settings.dto';
import { DomainError } from '../common/errors/domain-error';
import { ALREADY_TAKEN } from '../common/errors/messages';
import { isForeignKeyViolation, isUniqueViolation } from '../common/errors/postgres-errors';
import { Created, pathSegment } from '../common/http/created';
import { type Queryable, Transactions } from '../database/transactions';
import { DeploymentRecordsService } from '../deployments/deployment-records.module';
import { FirmwareRecordsService } from '../firmware/firmware-records.service';
import { FirmwareFileRemover } from '../firmware/storage/firmware-file-remover';
import type { CreateProductDto, ProductView, UpdateProductDto } from './dto/product.dto';
import { Product } from './product.entity';
import type { ProductRecord } from './product-record';
import { joinedProductRow, type ProductRow } from './product-row';
import { PRODUCT_HAS_DEVICES } from './products.errors';
import { type ProductChanges, ProductsRepository } from './products.repository';

export function productView(product: Product): ProductView {
  return {
    name: product.name,
    allow_unsigned_atomvm_firmware: product.allowUnsignedAtomvmFirmware,
    allow_unsigned_esp_idf_firmware: product.allowUnsignedEspIdfFirmware,
    allowed_update_tools: product.allowedUpdateTools,
    require_unique_firmware_version: product.requireUniqueFirmwareVersion,
  };
}

export { joinedProductColumns } from './product-row';

/** The product of a row selected with joinedProductColumns (null when the outer join found none). */
export function joinedProduct(row: Record<string, unknown>): Product | null {
  const product = joinedProductRow(row);
  return product && productFromRow(product);
}

function productFromRow(row: ProductRow): Product {
  return Object.assign(new Product(), {
    id: row.id,
    orgId: row.org_id,
    name: row.name,
    allowUnsignedAtomvmFirmware: row.allow_unsigned_atomvm_firmware,
    allowUnsignedEspIdfFirmware: row.allow_unsigned_esp_idf_firmware,
    allowedUpdateTools: row.allowed_update_tools,
    requireUniqueFirmwareVersion: row.require_unique_firmware_version,
    extensions: row.extensions,
    insertedAt: row.inserted_at,
    updatedAt: row.updated_at,
  });
}

@Injectable()
export class ProductsService {
  constructor(
    private readonly products: ProductsRepository,
    private readonly transactions: Transactions,
    private readonly firmware: FirmwareRecordsService,
    private readonly audit: AuditService,
    private readonly files: FirmwareFileRemover,
    private readonly deployments: DeploymentRecordsService,
  ) {}

  /**
   * The product of the caller's organization, or the contract's 404. On routes under a product the AuthGuard has
   * read it already, with the membership (`access.product`); otherwise one read by name.
   */
  async findInOrg(access: OrgAccess, name: string): Promise<ProductRecord> {
    if (access.product?.name === name) {
      const { found } = access.product;
      if (!found) throw DomainError.notFound();
      return Object.assign(new Product(), found);
    }
    const row = await this.products.findByName(access.orgId, name);
    if (!row) throw DomainError.notFound();
    return productFromRow(row);
  }

  /** The organization's product by name, or null (a product named in a body rather than the path). */
  async findByName(orgId: string, name: string): Promise<ProductRecord | null> {
    const row = await this.products.findByName(orgId, name);
    return row && productFromRow(row);
  }

  /** A product's name by id, or null (for records that name their product by id, e.g. a paused group's event). */
  nameById(id: string, tx?: Queryable): Promise<string | null> {
    return this.products.nameById(id, tx);
  }

  async create(access: OrgAccess, dto: CreateProductDto): Promise<Created<{ data: ProductView }>> {
    try {
      const product = await this.transactions.run(async (tx) => {
        const saved = await this.products.insert(access.orgId, dto.name, tx);
        await this.audit.record(tx, {
          orgId: access.orgId,
          actor: access.actor,
          action: 'product.create',
          targetType: 'product',
          targetId: saved.name,
        });
        return saved;
      });
      return new Created(`/api/orgs/${pathSegment(access.orgName)}/products/${pathSegment(product.name)}`, {
        data: productView(product),
      });
    } catch (err) {
      if (isUniqueViolation(err)) throw DomainError.invalidField('name', ALREADY_TAKEN);
      throw err;
    }
  }

  async list(access: OrgAccess): Promise<{ data: ProductView[] }> {
    const products = await this.products.listForOrg(access.orgId);
    return { data: products.map(productView) };
  }

  async show(access: OrgAccess, name: string): Promise<{ data: ProductView }> {
    return { data: productView(await this.findInOrg(access, name)) };
  }

  async update(access: OrgAccess, name: string, dto: UpdateProductDto): Promise<{ data: ProductView }> {
    const product = await this.findInOrg(access, name);
    const changes: ProductChanges = {};
    if (dto.allow_unsigned_atomvm_firmware !== undefined) {
      changes.allowUnsignedAtomvmFirmware = dto.allow_unsigned_atomvm_firmware;
    }
    if (dto.allow_unsigned_esp_idf_firmware !== undefined) {
      changes.allowUnsignedEspIdfFirmware = dto.allow_unsigned_esp_idf_firmware;
    }
    if (dto.allowed_update_tools !== undefined) changes.allowedUpdateTools = dto.allowed_update_tools;
    if (dto.require_unique_firmware_version !== undefined) {
      changes.requireUniqueFirmwareVersion = dto.require_unique_firmware_version;
    }
    if (Object.keys(changes).length === 0) return { data: productView(product) };
    await this.transactions.run(async (tx) => {
      if (!(await this.products.update(product.id, changes, tx))) throw DomainError.notFound();
      await this.audit.record(tx, {
        orgId: access.orgId,
        actor: access.actor,
        action: 'product.update',
        targetType: 'product',
        targetId: product.name,
        details: { ...dto },
      });
    });
    return { data: productView({ ...product, ...changes }) };
  }

  /** The extensions the product enables (not part of the Product record: contract 5). */
  async showExtensions(access: OrgAccess, name: string): Promise<{ data: ExtensionSettings }> {
    const product = await this.findInOrg(access, name);
    return { data: extensionSettings(product.extensions, PRODUCT_EXTENSION_DEFAULTS) };
  }

  /**
   * Changes the extensions named in the body, merged into the stored settings in the statement itself, so that two
   * callers changing different extensions at once both keep their change. Applies from each device's next
   * connection. An empty body changes nothing.
   */
  async updateExtensions(
    access: OrgAccess,
    name: string,
    dto: ExtensionSettingsDto,
  ): Promise<{ data: ExtensionSettings }> {
    const product = await this.findInOrg(access, name);
    const changes = extensionChanges(dto);
    if (Object.keys(changes).length === 0) return this.showExtensions(access, name);
    const stored = await this.transactions.run(async (tx) => {
      const merged = await this.products.mergeExtensions(product.id, changes, tx);
      if (merged === null) throw DomainError.notFound();
      await this.audit.record(tx, {
        orgId: access.orgId,
        actor: access.actor,
        action: 'product.extensions.update',
        targetType: 'product',
        targetId: product.name,
        details: changes,
      });
      return merged;
    });
    return { data: extensionSettings(stored, PRODUCT_EXTENSION_DEFAULTS) };
  }

  /**
   * Deletes a product with no devices (409 otherwise); its firmware and scripts go with it: the rows in the
   * transaction, which records their files for removal; then the files (one that cannot be removed now is
   * retried by FirmwareFileRemover, never a failed request).
   */
  async remove(access: OrgAccess, name: string): Promise<void> {
    const product = await this.findInOrg(access, name);
    let firmwareFiles: string[];
    try {
      firmwareFiles = await this.transactions.run(async (tx) => {
        // Groups first: their releases hold the firmware. Devices still in the product roll all of it back (409).
        await this.deployments.deleteAllOfProduct(product.id, tx);
        const storageKeys = await this.firmware.deleteAllOfProduct(product.id, tx);
        await this.files.schedule(storageKeys, tx);
        if (!(await this.products.delete(product.id, tx))) throw DomainError.notFound();
        await this.audit.record(tx, {
          orgId: access.orgId,
          actor: access.actor,
          action: 'product.delete',
          targetType: 'product',
          targetId: product.name,
        });
        return storageKeys;
      });
    } catch (err) {
      if (isForeignKeyViolation(err)) {
        throw DomainError.conflict(PRODUCT_HAS_DEVICES);
      }
      throw err;
    }
    await this.files.removeNow(firmwareFiles);
  }
}
