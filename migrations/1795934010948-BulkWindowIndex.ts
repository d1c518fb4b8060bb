import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A product's devices in id order, for the windows of a bulk change over a filter (`id > last ORDER BY id LIMIT
 * n` within the product: device-bulk.query.ts). Without it the ordered read goes through the primary key and
 * passes over every other product's devices between two of this one's. Declared on the entity with
 * `synchronize: false`, as the other hand-made device indexes.
 */
export class BulkWindowIndex1795934010948 implements MigrationInterface {
  name = 'BulkWindowIndex1795934010948';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE INDEX "devices_product_id_id_idx" ON "devices" ("product_id", "id")`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."devices_product_id_id_idx"`);
  }
}
