import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The connection and firmware part of the `devices` update trigger, as migration FleetOverview wrote it. */
const CONNECTION_AND_FIRMWARE_DELTAS = `
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
          DO UPDATE SET total = product_firmware_counts.total + EXCLUDED.total;`;

/** Upserts `SELECT product_id, delta ...` (grouped, non-zero, in key order) into this backend's shard. */
const upsertAlarms = (deltas: string) => `
        INSERT INTO product_alarm_counts (product_id, shard, total)
        SELECT product_id, (pg_backend_pid() % 16)::smallint, delta FROM (${deltas}) d
         WHERE delta <> 0 ORDER BY product_id
        ON CONFLICT (product_id, shard) DO UPDATE SET total = product_alarm_counts.total + EXCLUDED.total;`;

/**
 * The fleet overview's count of devices with health alarms, kept as a counter (it was a count through the
 * partial index of alarmed devices, ~170 ms at a million devices with 1 % alarmed): `product_alarm_counts`,
 * sharded as the other overview counters, kept exact by
 * - statement-level triggers on `device_health` (transition tables): a report that raises or clears a device's
 *   alarms (`alarm_count > 0` changed) counts for the product the device is in, read from `devices`;
 * - the statement-level update trigger of `devices` (FleetOverview's, replaced here with one more statement): a
 *   device that changes product takes its alarm with it (old and new rows joined by id; no device row is read
 *   unless one changed product, so presence writes pay a join of their own rows only);
 * - a row-level BEFORE DELETE trigger on `devices`: a deleted device's health row goes by cascade after the device
 *   row, when its product can no longer be read (the `device_health` delete trigger finds no device and counts
 *   nothing), so the device's own deletion takes its alarm off first. Deletions of devices are one at a time.
 * Bulk statements (device-bulk.query.ts) fire the statement-level triggers as any statement does.
 */
export class HealthAlarmCounts1795933747122 implements MigrationInterface {
  name = 'HealthAlarmCounts1795933747122';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "product_alarm_counts" ("product_id" bigint NOT NULL, "shard" smallint NOT NULL, "total" bigint NOT NULL DEFAULT '0', CONSTRAINT "PK_547d2206b3d9e92977896334727" PRIMARY KEY ("product_id", "shard"))`,
    );
    await queryRunner.query(
      `ALTER TABLE "product_alarm_counts" ADD CONSTRAINT "FK_1d3fec15b22687a9e244ec7d3e6" FOREIGN KEY ("product_id") REFERENCES "products"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    // Each function first checks, on its transition tables alone, that a row concerns the counter: a health
    // batch where no alarm was raised or cleared, or an UPDATE of devices that moved none (presence writes), reads
    // no other table.
    await queryRunner.query(`
      CREATE FUNCTION device_health_alarm_counts_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF EXISTS (SELECT 1 FROM new_health WHERE alarm_count > 0) THEN${upsertAlarms(`
          SELECT d.product_id, count(*) AS delta
            FROM new_health n JOIN devices d ON d.id = n.device_id
           WHERE n.alarm_count > 0 GROUP BY 1`)}
        END IF;
        RETURN NULL;
      END $$`);
    await queryRunner.query(`
      CREATE FUNCTION device_health_alarm_counts_after_update() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF EXISTS (SELECT 1 FROM old_health o JOIN new_health n ON n.device_id = o.device_id
                    WHERE (o.alarm_count > 0) <> (n.alarm_count > 0)) THEN${upsertAlarms(`
          SELECT d.product_id, sum((n.alarm_count > 0)::int - (o.alarm_count > 0)::int) AS delta
            FROM old_health o JOIN new_health n ON n.device_id = o.device_id
            JOIN devices d ON d.id = n.device_id
           WHERE (o.alarm_count > 0) <> (n.alarm_count > 0) GROUP BY 1`)}
        END IF;
        RETURN NULL;
      END $$`);
    await queryRunner.query(`
      CREATE FUNCTION device_health_alarm_counts_after_delete() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF EXISTS (SELECT 1 FROM old_health WHERE alarm_count > 0) THEN${upsertAlarms(`
          SELECT d.product_id, -count(*) AS delta
            FROM old_health o JOIN devices d ON d.id = o.device_id
           WHERE o.alarm_count > 0 GROUP BY 1`)}
        END IF;
        RETURN NULL;
      END $$`);
    await queryRunner.query(`CREATE TRIGGER device_health_alarm_counts_insert AFTER INSERT ON device_health
      REFERENCING NEW TABLE AS new_health FOR EACH STATEMENT EXECUTE FUNCTION device_health_alarm_counts_after_insert()`);
    await queryRunner.query(`CREATE TRIGGER device_health_alarm_counts_update AFTER UPDATE ON device_health
      REFERENCING OLD TABLE AS old_health NEW TABLE AS new_health
      FOR EACH STATEMENT EXECUTE FUNCTION device_health_alarm_counts_after_update()`);
    await queryRunner.query(`CREATE TRIGGER device_health_alarm_counts_delete AFTER DELETE ON device_health
      REFERENCING OLD TABLE AS old_health FOR EACH STATEMENT EXECUTE FUNCTION device_health_alarm_counts_after_delete()`);
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION devices_fleet_counts_after_update() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN${CONNECTION_AND_FIRMWARE_DELTAS}
        IF EXISTS (SELECT 1 FROM old_devices o JOIN new_devices n ON n.id = o.id
                    WHERE n.product_id <> o.product_id) THEN${upsertAlarms(`
          SELECT v.product_id, sum(v.delta) AS delta
            FROM old_devices o JOIN new_devices n ON n.id = o.id,
                 LATERAL (VALUES (o.product_id, -1), (n.product_id, 1)) v(product_id, delta)
           WHERE n.product_id <> o.product_id
             AND EXISTS (SELECT 1 FROM device_health h WHERE h.device_id = n.id AND h.alarm_count > 0)
           GROUP BY 1`)}
        END IF;
        RETURN NULL;
      END $$`);
    await queryRunner.query(`
      CREATE FUNCTION devices_alarm_counts_before_delete() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF EXISTS (SELECT 1 FROM device_health WHERE device_id = OLD.id AND alarm_count > 0) THEN
          INSERT INTO product_alarm_counts (product_id, shard, total)
          VALUES (OLD.product_id, (pg_backend_pid() % 16)::smallint, -1)
          ON CONFLICT (product_id, shard) DO UPDATE SET total = product_alarm_counts.total + EXCLUDED.total;
        END IF;
        RETURN OLD;
      END $$`);
    await queryRunner.query(`CREATE TRIGGER devices_alarm_counts_delete BEFORE DELETE ON devices
      FOR EACH ROW EXECUTE FUNCTION devices_alarm_counts_before_delete()`);
    await queryRunner.query(`INSERT INTO product_alarm_counts (product_id, shard, total)
      SELECT d.product_id, 0, count(*) FROM device_health h JOIN devices d ON d.id = h.device_id
       WHERE h.alarm_count > 0 GROUP BY 1`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER devices_alarm_counts_delete ON devices`);
    await queryRunner.query(`DROP FUNCTION devices_alarm_counts_before_delete()`);
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION devices_fleet_counts_after_update() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN${CONNECTION_AND_FIRMWARE_DELTAS}
        RETURN NULL;
      END $$`);
    await queryRunner.query(`DROP TRIGGER device_health_alarm_counts_delete ON device_health`);
    await queryRunner.query(`DROP TRIGGER device_health_alarm_counts_update ON device_health`);
    await queryRunner.query(`DROP TRIGGER device_health_alarm_counts_insert ON device_health`);
    await queryRunner.query(`DROP FUNCTION device_health_alarm_counts_after_delete()`);
    await queryRunner.query(`DROP FUNCTION device_health_alarm_counts_after_update()`);
    await queryRunner.query(`DROP FUNCTION device_health_alarm_counts_after_insert()`);
    await queryRunner.query(
      `ALTER TABLE "product_alarm_counts" DROP CONSTRAINT "FK_1d3fec15b22687a9e244ec7d3e6"`,
    );
    await queryRunner.query(`DROP TABLE "product_alarm_counts"`);
  }
}
