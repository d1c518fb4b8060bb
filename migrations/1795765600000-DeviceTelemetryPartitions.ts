import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Device log lines and the history of health metrics: tables partitioned by day, so that retention drops whole
 * partitions instead of deleting rows (docs/decisions.md, "Device telemetry"). TypeORM entities cannot express
 * partitioning, so these tables have no entity (TelemetryRepository reads and writes them in SQL) and the
 * migration check, which compares entities with the schema, does not see them. This migration creates the
 * partitioned parents only; TelemetryPartitions creates each day's partitions ahead of time and drops old ones.
 * No foreign key to `devices`: checking one on every inserted line would cost a lookup per line at ingest; the
 * lines of a deleted device are never shown (device ids are never reused) and age out with their partitions.
 */
export class DeviceTelemetryPartitions1795765600000 implements MigrationInterface {
  name = 'DeviceTelemetryPartitions1795765600000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE SEQUENCE "device_log_lines_id_seq" AS bigint`);
    await queryRunner.query(
      `CREATE TABLE "device_log_lines" (` +
        `"id" bigint NOT NULL DEFAULT nextval('device_log_lines_id_seq'), ` +
        `"device_id" bigint NOT NULL, ` +
        `"logged_at" TIMESTAMP WITH TIME ZONE NOT NULL, ` +
        `"level" character varying(16) NOT NULL, ` +
        `"message" text NOT NULL, ` +
        `"meta" jsonb NOT NULL DEFAULT '{}'` +
        `) PARTITION BY RANGE ("logged_at")`,
    );
    await queryRunner.query(`ALTER SEQUENCE "device_log_lines_id_seq" OWNED BY "device_log_lines"."id"`);
    await queryRunner.query(
      `CREATE INDEX "device_log_lines_device_id_logged_at_idx" ON "device_log_lines" ("device_id", "logged_at" DESC, "id" DESC)`,
    );
    await queryRunner.query(
      `CREATE TABLE "device_health_metrics" (` +
        `"device_id" bigint NOT NULL, ` +
        `"reported_at" TIMESTAMP WITH TIME ZONE NOT NULL, ` +
        `"key" character varying(255) NOT NULL, ` +
        `"value" double precision NOT NULL` +
        `) PARTITION BY RANGE ("reported_at")`,
    );
    await queryRunner.query(
      `CREATE INDEX "device_health_metrics_device_id_reported_at_idx" ON "device_health_metrics" ("device_id", "reported_at" DESC)`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "device_health_metrics"`);
    await queryRunner.query(`DROP TABLE "device_log_lines"`);
  }
}
