import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { readRows } from '../database/read-rows';
import type { Tx } from '../database/transactions';
import { SCRIPT_IN_PRODUCT, SELECT_SCRIPT, type ScriptRow } from './script-view';
import { SupportScript } from './support-script.entity';

export type ScriptChanges = Partial<Pick<SupportScript, 'name' | 'text' | 'tags'>>;

/** The `support_scripts` table, read with each script's author. */
@Injectable()
export class ScriptsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** Inserts a script; answers its id. */
  async insert(
    script: { productId: string; name: string; text: string; tags: string; createdById: string | null },
    tx: Tx,
  ): Promise<string> {
    const inserted = await tx.getRepository(SupportScript).insert(script);
    return String((inserted.identifiers[0] as { id: string }).id);
  }

  /** One script of a product with its author (hot read, through the pool). */
  async findInProduct(productId: string, id: string): Promise<ScriptRow | null> {
    const rows = await readRows<ScriptRow>(this.db, SCRIPT_IN_PRODUCT, [productId, id]);
    return rows[0] ?? null;
  }

  /**
   * The script to run for `nameOrId`, as NervesHub finds it: by name first (the oldest of that name: names are not
   * unique), else by id when it is one.
   */
  async findByNameOrId(
    productId: string,
    name: string,
    id: string | null,
  ): Promise<{ id: string; text: string } | null> {
    const rows = await readRows<{ id: string; text: string }>(
      this.db,
      `SELECT id, text FROM support_scripts
        WHERE product_id = $1 AND (name = $2 OR id = $3::bigint)
        ORDER BY name = $2 DESC, id LIMIT 1`,
      [productId, name, id],
    );
    return rows[0] ?? null;
  }

  /** One page of a product's scripts, oldest first. */
  listPage(productId: string, pageSize: number, offset: number): Promise<ScriptRow[]> {
    return this.db.query<ScriptRow[]>(
      `${SELECT_SCRIPT} WHERE s.product_id = $1 ORDER BY s.id LIMIT $2 OFFSET $3`,
      [productId, pageSize, offset],
    );
  }

  /** How many scripts the product has. */
  async countInProduct(productId: string): Promise<number> {
    const [{ count }] = await this.db.query<{ count: number }[]>(
      `SELECT count(*)::int AS count FROM support_scripts WHERE product_id = $1`,
      [productId],
    );
    return count;
  }

  /** Changes a product's script; false when there is none with that id. */
  async update(productId: string, id: string, changes: ScriptChanges, tx: Tx): Promise<boolean> {
    const result = await tx.getRepository(SupportScript).update({ id, productId }, changes);
    return Boolean(result.affected);
  }

  /** Deletes a product's script; false when there is none with that id. */
  async delete(productId: string, id: string, tx: Tx): Promise<boolean> {
    const result = await tx.getRepository(SupportScript).delete({ id, productId });
    return Boolean(result.affected);
  }
}
