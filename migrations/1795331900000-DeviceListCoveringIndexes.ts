import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The device list's sort indexes carry the row id (`INCLUDE (id)`), so that a page is found by an index-only
 * scan and only its rows are read from the table (docs/queries.md, "Deep pages"). Not expressible as entity
 * indexes; the entity declares them with `synchronize: false`.
 */
const SORT_INDEXES: [name: string, columns: string][] = [
  ['devices_product_id_identifier_idx', '"product_id", "identifier"'],
  ['devices_product_id_inserted_at_idx', '"product_id", "inserted_at", "identifier"'],
  [
    'devices_product_id_last_communication_idx',
    '"product_id", "last_communication" ASC NULLS FIRST, "identifier"',
  ],
  [
    'devices_product_id_firmware_version_idx',
    '"product_id", "firmware_version" ASC NULLS FIRST, "identifier"',
  ],
  ['devices_product_id_connection_status_idx', '"product_id", "connection_status", "identifier"'],
];

export class DeviceListCoveringIndexes1795331900000 implements MigrationInterface {
  name = 'DeviceListCoveringIndexes1795331900000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    for (const [name, columns] of SORT_INDEXES) {
      await queryRunner.query(`DROP INDEX "public"."${name}"`);
      await queryRunner.query(`CREATE INDEX "${name}" ON "devices" (${columns}) INCLUDE ("id")`);
    }
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    for (const [name, columns] of SORT_INDEXES) {
      await queryRunner.query(`DROP INDEX "public"."${name}"`);
      await queryRunner.query(`CREATE INDEX "${name}" ON "devices" (${columns})`);
    }
  }
}
