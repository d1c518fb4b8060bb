import type { MigrationInterface, QueryRunner } from 'typeorm';

export class FleetOverview1795926094061 implements MigrationInterface {
  name = 'FleetOverview1795926094061';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "product_connection_counts" ("product_id" bigint NOT NULL, "connection_status" "public"."device_connection_status" NOT NULL, "shard" smallint NOT NULL, "total" bigint NOT NULL DEFAULT '0', CONSTRAINT "PK_f900aa94ad2b73195fb5b0d9359" PRIMARY KEY ("product_id", "connection_status", "shard"))`,
    );
    await queryRunner.query(
      `CREATE TABLE "product_firmware_counts" ("product_id" bigint NOT NULL, "firmware_version" character varying(255) NOT NULL, "shard" smallint NOT NULL, "total" bigint NOT NULL DEFAULT '0', CONSTRAINT "PK_ff735013173bb6a2a7c3c44770e" PRIMARY KEY ("product_id", "firmware_version", "shard"))`,
    );
    await queryRunner.query(
      `CREATE TABLE "product_connection_samples" ("product_id" bigint NOT NULL, "sampled_at" TIMESTAMP WITH TIME ZONE NOT NULL, "connected" integer NOT NULL, "total" integer NOT NULL, CONSTRAINT "PK_2efd1d153560267f3fea1445146" PRIMARY KEY ("product_id", "sampled_at"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "product_connection_samples_sampled_at_idx" ON "product_connection_samples"  ("sampled_at") `,
    );
    await queryRunner.query(
      `ALTER TABLE "product_connection_counts" ADD CONSTRAINT "FK_2e094296d1e6928f5c8e6753396" FOREIGN KEY ("product_id") REFERENCES "products"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "product_firmware_counts" ADD CONSTRAINT "FK_c1603cd9f368c5b29e11538529c" FOREIGN KEY ("product_id") REFERENCES "products"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "product_connection_samples" ADD CONSTRAINT "FK_da6d20f15d0ed16a219f9380f61" FOREIGN KEY ("product_id") REFERENCES "products"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    // Kept exact by statement-level triggers with transition tables (not expressible as entities), as
    // product_device_counts is: one aggregate per statement, so that a batch of presence writes or a bulk load
    // costs one upsert per changed key, not one per row. UPDATE cannot name columns when it has transition
    // tables, so the update trigger sees every UPDATE of devices; keys whose deltas cancel (a device that did not
    // change status or version) are not written. Counter rows are touched in key order (no deadlocks between
    // two statements) and in the shard of the writing backend (pid modulo 16).
    await queryRunner.query(`
      CREATE FUNCTION devices_fleet_counts_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO product_connection_counts (product_id, connection_status, shard, total)
        SELECT product_id, connection_status, (pg_backend_pid() % 16)::smallint, count(*)
          FROM new_devices GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (product_id, connection_status, shard)
          DO UPDATE SET total = product_connection_counts.total + EXCLUDED.total;
        INSERT INTO product_firmware_counts (product_id, firmware_version, shard, total)
        SELECT product_id, firmware_version, (pg_backend_pid() % 16)::smallint, count(*)
          FROM new_devices WHERE firmware_version IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (product_id, firmware_version, shard)
          DO UPDATE SET total = product_firmware_counts.total + EXCLUDED.total;
        RETURN NULL;
      END $$`);
    await queryRunner.query(`
      CREATE FUNCTION devices_fleet_counts_after_delete() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO product_connection_counts (product_id, connection_status, shard, total)
        SELECT product_id, connection_status, (pg_backend_pid() % 16)::smallint, -count(*)
          FROM old_devices GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (product_id, connection_status, shard)
          DO UPDATE SET total = product_connection_counts.total + EXCLUDED.total;
        INSERT INTO product_firmware_counts (product_id, firmware_version, shard, total)
        SELECT product_id, firmware_version, (pg_backend_pid() % 16)::smallint, -count(*)
          FROM old_devices WHERE firmware_version IS NOT NULL GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (product_id, firmware_version, shard)
          DO UPDATE SET total = product_firmware_counts.total + EXCLUDED.total;
        RETURN NULL;
      END $$`);
    await queryRunner.query(`
      CREATE FUNCTION devices_fleet_counts_after_update() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO product_connection_counts (product_id, connection_status, shard, total)
        SELECT product_id, connection_status, (pg_backend_pid() % 16)::smallint, sum(delta)
          FROM (SELECT product_id, connection_status, -1 AS delta FROM old_devices
                UNION ALL SELECT product_id, connection_status, 1 FROM new_devices) c
         GROUP BY 1, 2 HAVING sum(delta) <> 0 ORDER BY 1, 2
        ON CONFLICT (product_id, connection_status, shard)
          DO UPDATE SET total = product_connection_counts.total + EXCLUDED.total;
        INSERT INTO product_firmware_counts (product_id, firmware_version, shard, total)
        SELECT product_id, firmware_version, (pg_backend_pid() % 16)::smallint, sum(delta)
          FROM (SELECT product_id, firmware_version, -1 AS delta FROM old_devices WHERE firmware_version IS NOT NULL
                UNION ALL
                SELECT product_id, firmware_version, 1 FROM new_devices WHERE firmware_version IS NOT NULL) c
         GROUP BY 1, 2 HAVING sum(delta) <> 0 ORDER BY 1, 2
        ON CONFLICT (product_id, firmware_version, shard)
          DO UPDATE SET total = product_firmware_counts.total + EXCLUDED.total;
        RETURN NULL;
      END $$`);
    await queryRunner.query(`CREATE TRIGGER devices_fleet_counts_insert AFTER INSERT ON devices
      REFERENCING NEW TABLE AS new_devices FOR EACH STATEMENT EXECUTE FUNCTION devices_fleet_counts_after_insert()`);
    await queryRunner.query(`CREATE TRIGGER devices_fleet_counts_delete AFTER DELETE ON devices
      REFERENCING OLD TABLE AS old_devices FOR EACH STATEMENT EXECUTE FUNCTION devices_fleet_counts_after_delete()`);
    await queryRunner.query(`CREATE TRIGGER devices_fleet_counts_update AFTER UPDATE ON devices
      REFERENCING OLD TABLE AS old_devices NEW TABLE AS new_devices
      FOR EACH STATEMENT EXECUTE FUNCTION devices_fleet_counts_after_update()`);
    await queryRunner.query(`INSERT INTO product_connection_counts (product_id, connection_status, shard, total)
      SELECT product_id, connection_status, 0, count(*) FROM devices GROUP BY 1, 2`);
    await queryRunner.query(`INSERT INTO product_firmware_counts (product_id, firmware_version, shard, total)
      SELECT product_id, firmware_version, 0, count(*) FROM devices WHERE firmware_version IS NOT NULL GROUP BY 1, 2`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER devices_fleet_counts_update ON devices`);
    await queryRunner.query(`DROP TRIGGER devices_fleet_counts_delete ON devices`);
    await queryRunner.query(`DROP TRIGGER devices_fleet_counts_insert ON devices`);
    await queryRunner.query(`DROP FUNCTION devices_fleet_counts_after_update()`);
    await queryRunner.query(`DROP FUNCTION devices_fleet_counts_after_delete()`);
    await queryRunner.query(`DROP FUNCTION devices_fleet_counts_after_insert()`);
    await queryRunner.query(
      `ALTER TABLE "product_connection_samples" DROP CONSTRAINT "FK_da6d20f15d0ed16a219f9380f61"`,
    );
    await queryRunner.query(
      `ALTER TABLE "product_firmware_counts" DROP CONSTRAINT "FK_c1603cd9f368c5b29e11538529c"`,
    );
    await queryRunner.query(
      `ALTER TABLE "product_connection_counts" DROP CONSTRAINT "FK_2e094296d1e6928f5c8e6753396"`,
    );
    await queryRunner.query(`DROP INDEX "public"."product_connection_samples_sampled_at_idx"`);
    await queryRunner.query(`DROP TABLE "product_connection_samples"`);
    await queryRunner.query(`DROP TABLE "product_firmware_counts"`);
    await queryRunner.query(`DROP TABLE "product_connection_counts"`);
  }
}
