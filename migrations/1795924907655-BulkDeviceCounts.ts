import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The row trigger that keeps the device counters skips the rows of a statement that keeps them itself: a bulk
 * change of devices (src/devices/device-bulk.query.ts) sets `fleethub.device_counts` to `statement` for its own
 * statement and writes the counters' deltas once, grouped. The row trigger upserts the same counter rows once per
 * device, and a transaction that updates one row many times makes a longer version chain at each update: 200,614
 * tag changes in one statement had not finished after 10 minutes (1,000,000-device product, PostgreSQL 18).
 */
export class BulkDeviceCounts1795924907655 implements MigrationInterface {
  name = 'BulkDeviceCounts1795924907655';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER devices_counts_update ON devices`);
    await queryRunner.query(`CREATE TRIGGER devices_counts_update AFTER UPDATE OF tags, product_id ON devices
      FOR EACH ROW WHEN ((OLD.tags IS DISTINCT FROM NEW.tags OR OLD.product_id IS DISTINCT FROM NEW.product_id)
                         AND current_setting('fleethub.device_counts', true) IS DISTINCT FROM 'statement')
      EXECUTE FUNCTION devices_counts_after_update()`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER devices_counts_update ON devices`);
    await queryRunner.query(`CREATE TRIGGER devices_counts_update AFTER UPDATE OF tags, product_id ON devices
      FOR EACH ROW WHEN (OLD.tags IS DISTINCT FROM NEW.tags OR OLD.product_id IS DISTINCT FROM NEW.product_id)
      EXECUTE FUNCTION devices_counts_after_update()`);
  }
}
