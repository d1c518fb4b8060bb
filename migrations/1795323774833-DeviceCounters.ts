import type { MigrationInterface, QueryRunner } from 'typeorm';

export class DeviceCounters1795323774833 implements MigrationInterface {
  name = 'DeviceCounters1795323774833';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "product_device_counts" ("product_id" bigint NOT NULL, "total" bigint NOT NULL DEFAULT '0', CONSTRAINT "PK_e1ac9dc502f94cc410dd5f464a0" PRIMARY KEY ("product_id"))`,
    );
    await queryRunner.query(
      `CREATE TABLE "product_tag_counts" ("product_id" bigint NOT NULL, "tag" text NOT NULL, "total" bigint NOT NULL DEFAULT '0', CONSTRAINT "PK_c0134713fb911524dd124dbbaf2" PRIMARY KEY ("product_id", "tag"))`,
    );
    await queryRunner.query(
      `ALTER TABLE "product_device_counts" ADD CONSTRAINT "FK_e1ac9dc502f94cc410dd5f464a0" FOREIGN KEY ("product_id") REFERENCES "products"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "product_tag_counts" ADD CONSTRAINT "FK_1875dec4184267c30101623c1db" FOREIGN KEY ("product_id") REFERENCES "products"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );

    // Kept exact by triggers (not expressible as entities): statement-level with transition tables for inserts
    // and deletes (one aggregate per statement, so bulk loads stay fast), row-level for the rare update that
    // changes tags or product. Counter rows are touched in (product_id, tag) order to avoid deadlocks.
    await queryRunner.query(`
      CREATE FUNCTION devices_counts_apply(changes jsonb) RETURNS void LANGUAGE sql AS $$
        INSERT INTO product_device_counts (product_id, total)
        SELECT (c->>'product_id')::bigint, sum((c->>'delta')::bigint) FROM jsonb_array_elements(changes) c
         GROUP BY 1 HAVING sum((c->>'delta')::bigint) <> 0 ORDER BY 1
        ON CONFLICT (product_id) DO UPDATE SET total = product_device_counts.total + EXCLUDED.total;
        INSERT INTO product_tag_counts (product_id, tag, total)
        SELECT (c->>'product_id')::bigint, t.tag, sum((c->>'delta')::bigint)
          FROM jsonb_array_elements(changes) c,
               LATERAL (SELECT DISTINCT jsonb_array_elements_text(c->'tags') AS tag) t
         GROUP BY 1, 2 HAVING sum((c->>'delta')::bigint) <> 0 ORDER BY 1, 2
        ON CONFLICT (product_id, tag) DO UPDATE SET total = product_tag_counts.total + EXCLUDED.total;
      $$`);
    await queryRunner.query(`
      CREATE FUNCTION devices_counts_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO product_device_counts (product_id, total)
        SELECT product_id, count(*) FROM new_devices GROUP BY 1 ORDER BY 1
        ON CONFLICT (product_id) DO UPDATE SET total = product_device_counts.total + EXCLUDED.total;
        INSERT INTO product_tag_counts (product_id, tag, total)
        SELECT d.product_id, t.tag, count(*) FROM new_devices d, LATERAL (SELECT DISTINCT unnest(d.tags) AS tag) t
         GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (product_id, tag) DO UPDATE SET total = product_tag_counts.total + EXCLUDED.total;
        RETURN NULL;
      END $$`);
    await queryRunner.query(`
      CREATE FUNCTION devices_counts_after_delete() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        UPDATE product_device_counts c SET total = c.total - o.n
          FROM (SELECT product_id, count(*) AS n FROM old_devices GROUP BY 1 ORDER BY 1) o
         WHERE c.product_id = o.product_id;
        UPDATE product_tag_counts c SET total = c.total - o.n
          FROM (SELECT d.product_id, t.tag, count(*) AS n
                  FROM old_devices d, LATERAL (SELECT DISTINCT unnest(d.tags) AS tag) t
                 GROUP BY 1, 2 ORDER BY 1, 2) o
         WHERE c.product_id = o.product_id AND c.tag = o.tag;
        RETURN NULL;
      END $$`);
    await queryRunner.query(`
      CREATE FUNCTION devices_counts_after_update() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM devices_counts_apply(jsonb_build_array(
          jsonb_build_object('product_id', OLD.product_id, 'delta', -1, 'tags', to_jsonb(OLD.tags)),
          jsonb_build_object('product_id', NEW.product_id, 'delta', 1, 'tags', to_jsonb(NEW.tags))));
        RETURN NULL;
      END $$`);
    await queryRunner.query(`CREATE TRIGGER devices_counts_insert AFTER INSERT ON devices
      REFERENCING NEW TABLE AS new_devices FOR EACH STATEMENT EXECUTE FUNCTION devices_counts_after_insert()`);
    await queryRunner.query(`CREATE TRIGGER devices_counts_delete AFTER DELETE ON devices
      REFERENCING OLD TABLE AS old_devices FOR EACH STATEMENT EXECUTE FUNCTION devices_counts_after_delete()`);
    await queryRunner.query(`CREATE TRIGGER devices_counts_update AFTER UPDATE OF tags, product_id ON devices
      FOR EACH ROW WHEN (OLD.tags IS DISTINCT FROM NEW.tags OR OLD.product_id IS DISTINCT FROM NEW.product_id)
      EXECUTE FUNCTION devices_counts_after_update()`);
    await queryRunner.query(`INSERT INTO product_device_counts (product_id, total)
      SELECT product_id, count(*) FROM devices GROUP BY 1`);
    await queryRunner.query(`INSERT INTO product_tag_counts (product_id, tag, total)
      SELECT d.product_id, t.tag, count(*) FROM devices d, LATERAL (SELECT DISTINCT unnest(d.tags) AS tag) t GROUP BY 1, 2`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER devices_counts_update ON devices`);
    await queryRunner.query(`DROP TRIGGER devices_counts_delete ON devices`);
    await queryRunner.query(`DROP TRIGGER devices_counts_insert ON devices`);
    await queryRunner.query(`DROP FUNCTION devices_counts_after_update()`);
    await queryRunner.query(`DROP FUNCTION devices_counts_after_delete()`);
    await queryRunner.query(`DROP FUNCTION devices_counts_after_insert()`);
    await queryRunner.query(`DROP FUNCTION devices_counts_apply(jsonb)`);
    await queryRunner.query(
      `ALTER TABLE "product_tag_counts" DROP CONSTRAINT "FK_1875dec4184267c30101623c1db"`,
    );
    await queryRunner.query(
      `ALTER TABLE "product_device_counts" DROP CONSTRAINT "FK_e1ac9dc502f94cc410dd5f464a0"`,
    );
    await queryRunner.query(`DROP TABLE "product_tag_counts"`);
    await queryRunner.query(`DROP TABLE "product_device_counts"`);
  }
}
