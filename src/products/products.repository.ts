import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { ExtensionSettings } from '../common/extensions/extension-settings';
import type { Queryable, Tx } from '../database/transactions';
import { Product } from './product.entity';
import { PRODUCT_COLUMNS, type ProductRow } from './product-row';

export type ProductChanges = Partial<
  Pick<
    Product,
    | 'allowUnsignedAtomvmFirmware'
    | 'allowUnsignedEspIdfFirmware'
    | 'allowedUpdateTools'
    | 'requireUniqueFirmwareVersion'
  >
>;

/** The `products` table. */
@Injectable()
export class ProductsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** The organization's product by name (plain SQL: the repository would build the same query anew each time). */
  async findByName(orgId: string, name: string): Promise<ProductRow | null> {
    const rows = await this.db.query<ProductRow[]>(
      `SELECT ${PRODUCT_COLUMNS} FROM products WHERE org_id = $1 AND name = $2`,
      [orgId, name],
    );
    return rows[0] ?? null;
  }

  /** A product's name by id (null when it is gone), in `tx` when given. */
  async nameById(id: string, tx: Queryable = this.db): Promise<string | null> {
    const rows = await tx.query<{ name: string }[]>(`SELECT name FROM products WHERE id = $1`, [id]);
    return rows[0]?.name ?? null;
  }

  /** The organization's products by name. */
  listForOrg(orgId: string): Promise<Product[]> {
    return this.db.getRepository(Product).find({ where: { orgId }, order: { name: 'ASC' } });
  }

  /** Inserts a product with the default settings; a name the organization holds already is pg's unique violation. */
  insert(orgId: string, name: string, tx: Tx): Promise<Product> {
    const repo = tx.getRepository(Product);
    return repo.save(repo.create({ orgId, name }));
  }

  /** Changes a product's settings; false when it was gone. */
  async update(id: string, changes: ProductChanges, tx: Tx): Promise<boolean> {
    const result = await tx.getRepository(Product).update({ id }, changes);
    return Boolean(result.affected);
  }

  /** Merges changed extension settings into the stored ones; the stored settings after, or null when it was gone. */
  async mergeExtensions(id: string, changes: Partial<ExtensionSettings>, tx: Tx): Promise<unknown> {
    const [rows] = await tx.query<[{ extensions: unknown }[], number]>(
      `UPDATE products SET extensions = extensions || $2::jsonb, updated_at = now() WHERE id = $1 RETURNING extensions`,
      [id, JSON.stringify(changes)],
    );
    return rows.length === 0 ? null : rows[0].extensions;
  }

  /** Deletes a product; false when it was gone. Remaining devices are pg's foreign key violation. */
  async delete(id: string, tx: Tx): Promise<boolean> {
    const result = await tx.getRepository(Product).delete({ id });
    return Boolean(result.affected);
  }
}
