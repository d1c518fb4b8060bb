import { Injectable, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { AuditService } from '../audit/audit.service';
import type { OrgAccess } from '../common/auth/actor';
import { DomainError } from '../common/errors/domain-error';
import { isForeignKeyViolation, isUniqueViolation } from '../common/errors/postgres-errors';
import { Created, pathSegment } from '../common/http/created';
import { FirmwareStorage } from '../firmware/storage/firmware-storage';
import type { CreateProductDto, ProductView, UpdateProductDto } from './dto/product.dto';
import { Product } from './product.entity';
import { joinedProductRow, PRODUCT_COLUMNS, type ProductRow } from './product-row';

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
    insertedAt: row.inserted_at,
    updatedAt: row.updated_at,
  });
}

@Injectable()
export class ProductsService {
  private readonly logger = new Logger(ProductsService.name);

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly audit: AuditService,
    private readonly storage: FirmwareStorage,
  ) {}

  /**
   * The product of the caller's organization, or the contract's 404. On routes under a product the AuthGuard has
   * read it already, with the membership (`access.product`); otherwise plain SQL: the repository would build the
   * same query anew each time.
   */
  async findInOrg(access: OrgAccess, name: string): Promise<Product> {
    if (access.product?.name === name) {
      const { found } = access.product;
      if (!found) throw DomainError.notFound();
      return Object.assign(new Product(), found);
    }
    const rows = await this.db.query<ProductRow[]>(
      `SELECT ${PRODUCT_COLUMNS} FROM products WHERE org_id = $1 AND name = $2`,
      [access.orgId, name],
    );
    if (!rows[0]) throw DomainError.notFound();
    return productFromRow(rows[0]);
  }

  async create(access: OrgAccess, dto: CreateProductDto): Promise<Created<{ data: ProductView }>> {
    try {
      const product = await this.db.transaction(async (tx) => {
        const repo = tx.getRepository(Product);
        const saved = await repo.save(repo.create({ orgId: access.orgId, name: dto.name }));
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
      if (isUniqueViolation(err)) throw DomainError.invalidField('name', 'has already been taken');
      throw err;
    }
  }

  async list(access: OrgAccess): Promise<{ data: ProductView[] }> {
    const products = await this.db
      .getRepository(Product)
      .find({ where: { orgId: access.orgId }, order: { name: 'ASC' } });
    return { data: products.map(productView) };
  }

  async show(access: OrgAccess, name: string): Promise<{ data: ProductView }> {
    return { data: productView(await this.findInOrg(access, name)) };
  }

  async update(access: OrgAccess, name: string, dto: UpdateProductDto): Promise<{ data: ProductView }> {
    const product = await this.findInOrg(access, name);
    const changes: Partial<Product> = {};
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
    await this.db.transaction(async (tx) => {
      const result = await tx.getRepository(Product).update({ id: product.id }, changes);
      if (!result.affected) throw DomainError.notFound();
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

  /** Deletes a product with no devices; its firmware and scripts go with it. */
  /** Deletes the product with its firmware (rows in the transaction, then their files). */
  async remove(access: OrgAccess, name: string): Promise<void> {
    const product = await this.findInOrg(access, name);
    let firmwareFiles: string[];
    try {
      firmwareFiles = await this.db.transaction(async (tx) => {
        // TypeORM answers a DELETE ... RETURNING with [rows, affected].
        const [firmware]: [{ storage_key: string }[], number] = await tx.query(
          `DELETE FROM firmwares WHERE product_id = $1 RETURNING storage_key`,
          [product.id],
        );
        const result = await tx.getRepository(Product).delete({ id: product.id });
        if (!result.affected) throw DomainError.notFound();
        await this.audit.record(tx, {
          orgId: access.orgId,
          actor: access.actor,
          action: 'product.delete',
          targetType: 'product',
          targetId: product.name,
        });
        return firmware.map((row) => row.storage_key);
      });
    } catch (err) {
      if (isForeignKeyViolation(err)) {
        throw DomainError.conflict('the product still has devices: delete or move them first');
      }
      throw err;
    }
    // The rows are gone; a file that cannot be removed now is only disk space, never a failed request.
    for (const key of firmwareFiles) {
      await this.storage.remove(key).catch((err: unknown) => {
        this.logger.warn(
          { err, key, productId: product.id },
          'firmware file of a deleted product not removed',
        );
      });
    }
  }
}
