import type { MigrationInterface, QueryRunner } from 'typeorm';

export class ShardedDeviceCounters1795336784756 implements MigrationInterface {
  name = 'ShardedDeviceCounters1795336784756';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "product_device_counts" ADD "shard" smallint NOT NULL DEFAULT '0'`);
    await queryRunner.query(
      `ALTER TABLE "product_device_counts" DROP CONSTRAINT "PK_e1ac9dc502f94cc410dd5f464a0"`,
    );
    await queryRunner.query(
      `ALTER TABLE "product_device_counts" ADD CONSTRAINT "PK_fab79e1c284bd91106f3e25a56d" PRIMARY KEY ("product_id", "shard")`,
    );
    await queryRunner.query(`ALTER TABLE "product_tag_counts" ADD "shard" smallint NOT NULL DEFAULT '0'`);
    await queryRunner.query(
      `ALTER TABLE "product_tag_counts" DROP CONSTRAINT "PK_c0134713fb911524dd124dbbaf2"`,
    );
    await queryRunner.query(
      `ALTER TABLE "product_tag_counts" ADD CONSTRAINT "PK_7701ea7b121e5d4e52abd9d2b36" PRIMARY KEY ("product_id", "tag", "shard")`,
    );

    // The triggers of DeviceCounters, writing each change to the shard of the writing backend (pid modulo 16):
    // upserts everywhere, since a shard's row may not exist yet and its total may go negative.
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION devices_counts_apply(changes jsonb) RETURNS void LANGUAGE sql AS $$
        INSERT INTO product_device_counts (product_id, shard, total)
        SELECT (c->>'product_id')::bigint, (pg_backend_pid() % 16)::smallint, sum((c->>'delta')::bigint)
          FROM jsonb_array_elements(changes) c
         GROUP BY 1 HAVING sum((c->>'delta')::bigint) <> 0 ORDER BY 1
        ON CONFLICT (product_id, shard) DO UPDATE SET total = product_device_counts.total + EXCLUDED.total;
        INSERT INTO product_tag_counts (product_id, tag, shard, total)
        SELECT (c->>'product_id')::bigint, t.tag, (pg_backend_pid() % 16)::smallint, sum((c->>'delta')::bigint)
          FROM jsonb_array_elements(changes) c,
               LATERAL (SELECT DISTINCT jsonb_array_elements_text(c->'tags') AS tag) t
         GROUP BY 1, 2 HAVING sum((c->>'delta')::bigint) <> 0 ORDER BY 1, 2
        ON CONFLICT (product_id, tag, shard) DO UPDATE SET total = product_tag_counts.total + EXCLUDED.total;
      $$`);
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION devices_counts_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO product_device_counts (product_id, shard, total)
        SELECT product_id, (pg_backend_pid() % 16)::smallint, count(*) FROM new_devices GROUP BY 1 ORDER BY 1
        ON CONFLICT (product_id, shard) DO UPDATE SET total = product_device_counts.total + EXCLUDED.total;
        INSERT INTO product_tag_counts (product_id, tag, shard, total)
        SELECT d.product_id, t.tag, (pg_backend_pid() % 16)::smallint, count(*)
          FROM new_devices d, LATERAL (SELECT DISTINCT unnest(d.tags) AS tag) t
         GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (product_id, tag, shard) DO UPDATE SET total = product_tag_counts.total + EXCLUDED.total;
        RETURN NULL;
      END $$`);
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION devices_counts_after_delete() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO product_device_counts (product_id, shard, total)
        SELECT product_id, (pg_backend_pid() % 16)::smallint, -count(*) FROM old_devices GROUP BY 1 ORDER BY 1
        ON CONFLICT (product_id, shard) DO UPDATE SET total = product_device_counts.total + EXCLUDED.total;
        INSERT INTO product_tag_counts (product_id, tag, shard, total)
        SELECT d.product_id, t.tag, (pg_backend_pid() % 16)::smallint, -count(*)
          FROM old_devices d, LATERAL (SELECT DISTINCT unnest(d.tags) AS tag) t
         GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (product_id, tag, shard) DO UPDATE SET total = product_tag_counts.total + EXCLUDED.total;
        RETURN NULL;
      END $$`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    // Back to one row per key: each total summed into shard 0.
    await queryRunner.query(`CREATE TEMP TABLE merged_device_counts ON COMMIT DROP AS
      SELECT product_id, sum(total) AS total FROM product_device_counts GROUP BY 1`);
    await queryRunner.query(`DELETE FROM product_device_counts`);
    await queryRunner.query(`INSERT INTO product_device_counts (product_id, shard, total)
      SELECT product_id, 0, total FROM merged_device_counts`);
    await queryRunner.query(`CREATE TEMP TABLE merged_tag_counts ON COMMIT DROP AS
      SELECT product_id, tag, sum(total) AS total FROM product_tag_counts GROUP BY 1, 2`);
    await queryRunner.query(`DELETE FROM product_tag_counts`);
    await queryRunner.query(`INSERT INTO product_tag_counts (product_id, tag, shard, total)
      SELECT product_id, tag, 0, total FROM merged_tag_counts`);
    await queryRunner.query(
      `ALTER TABLE "product_tag_counts" DROP CONSTRAINT "PK_7701ea7b121e5d4e52abd9d2b36"`,
    );
    await queryRunner.query(
      `ALTER TABLE "product_tag_counts" ADD CONSTRAINT "PK_c0134713fb911524dd124dbbaf2" PRIMARY KEY ("product_id", "tag")`,
    );
    await queryRunner.query(`ALTER TABLE "product_tag_counts" DROP COLUMN "shard"`);
    await queryRunner.query(
      `ALTER TABLE "product_device_counts" DROP CONSTRAINT "PK_fab79e1c284bd91106f3e25a56d"`,
    );
    await queryRunner.query(
      `ALTER TABLE "product_device_counts" ADD CONSTRAINT "PK_e1ac9dc502f94cc410dd5f464a0" PRIMARY KEY ("product_id")`,
    );
    await queryRunner.query(`ALTER TABLE "product_device_counts" DROP COLUMN "shard"`);
    // The triggers of DeviceCounters again, now that each key has one row.
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION devices_counts_apply(changes jsonb) RETURNS void LANGUAGE sql AS $$
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
      CREATE OR REPLACE FUNCTION devices_counts_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
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
      CREATE OR REPLACE FUNCTION devices_counts_after_delete() RETURNS trigger LANGUAGE plpgsql AS $$
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
      CREATE OR REPLACE FUNCTION devices_counts_after_update() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM devices_counts_apply(jsonb_build_array(
          jsonb_build_object('product_id', OLD.product_id, 'delta', -1, 'tags', to_jsonb(OLD.tags)),
          jsonb_build_object('product_id', NEW.product_id, 'delta', 1, 'tags', to_jsonb(NEW.tags))));
        RETURN NULL;
      END $$`);
  }
}
