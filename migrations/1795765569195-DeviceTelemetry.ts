import type { MigrationInterface, QueryRunner } from 'typeorm';

export class DeviceTelemetry1795765569195 implements MigrationInterface {
  name = 'DeviceTelemetry1795765569195';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TYPE "public"."device_health_status" AS ENUM('unknown', 'healthy', 'warning', 'unhealthy')`,
    );
    await queryRunner.query(
      `CREATE TABLE "device_health" ("device_id" bigint NOT NULL, "status" "public"."device_health_status" NOT NULL DEFAULT 'unknown', "status_reasons" jsonb, "alarm_count" integer NOT NULL DEFAULT '0', "report" jsonb, "reported_at" TIMESTAMP WITH TIME ZONE, "cpu_temp" double precision, "cpu_usage_percent" double precision, "mem_used_percent" double precision, "disk_used_percentage" double precision, "load_1min" double precision, "location" jsonb, "location_updated_at" TIMESTAMP WITH TIME ZONE, CONSTRAINT "PK_5a2d89e45bf569819a0a6506ee1" PRIMARY KEY ("device_id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "device_health_load_1min_idx" ON "device_health"  ("load_1min") WHERE load_1min IS NOT NULL`,
    );
    await queryRunner.query(
      `CREATE INDEX "device_health_disk_used_percentage_idx" ON "device_health"  ("disk_used_percentage") WHERE disk_used_percentage IS NOT NULL`,
    );
    await queryRunner.query(
      `CREATE INDEX "device_health_mem_used_percent_idx" ON "device_health"  ("mem_used_percent") WHERE mem_used_percent IS NOT NULL`,
    );
    await queryRunner.query(
      `CREATE INDEX "device_health_cpu_usage_percent_idx" ON "device_health"  ("cpu_usage_percent") WHERE cpu_usage_percent IS NOT NULL`,
    );
    await queryRunner.query(
      `CREATE INDEX "device_health_cpu_temp_idx" ON "device_health"  ("cpu_temp") WHERE cpu_temp IS NOT NULL`,
    );
    await queryRunner.query(
      `CREATE INDEX "device_health_status_idx" ON "device_health"  ("status", "device_id") `,
    );
    await queryRunner.query(
      `CREATE INDEX "device_health_alarmed_idx" ON "device_health"  ("device_id") WHERE alarm_count > 0`,
    );
    await queryRunner.query(
      `CREATE TABLE "network_identities" ("id" bigint GENERATED ALWAYS AS IDENTITY NOT NULL, "org_id" bigint NOT NULL, "device_id" bigint NOT NULL, "service" character varying(32) NOT NULL, "instance" character varying(255) NOT NULL, "identifier" character varying(255) NOT NULL, "details" jsonb NOT NULL DEFAULT '{}', "last_reported_at" TIMESTAMP WITH TIME ZONE NOT NULL, "inserted_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "network_identities_device_service_instance_key" UNIQUE ("device_id", "service", "instance"), CONSTRAINT "network_identities_service_identifier_key" UNIQUE ("service", "identifier"), CONSTRAINT "PK_7aa8bf3f7e9d949bf5eeaee86e7" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "network_identities_org_id_idx" ON "network_identities"  ("org_id") `,
    );
    await queryRunner.query(
      `ALTER TABLE "products" ADD "extensions" jsonb NOT NULL DEFAULT '{"geo": false, "health": false, "logging": false, "local_shell": false, "network_identity": true}'`,
    );
    await queryRunner.query(`ALTER TABLE "devices" ADD "extensions" jsonb NOT NULL DEFAULT '{}'`);
    await queryRunner.query(
      `ALTER TABLE "device_health" ADD CONSTRAINT "FK_5a2d89e45bf569819a0a6506ee1" FOREIGN KEY ("device_id") REFERENCES "devices"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "network_identities" ADD CONSTRAINT "FK_d743cb9d5e1dd365b2d2a949efa" FOREIGN KEY ("org_id") REFERENCES "orgs"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "network_identities" ADD CONSTRAINT "FK_dd94f99bd463cb292699b9346c8" FOREIGN KEY ("device_id") REFERENCES "devices"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "network_identities" DROP CONSTRAINT "FK_dd94f99bd463cb292699b9346c8"`,
    );
    await queryRunner.query(
      `ALTER TABLE "network_identities" DROP CONSTRAINT "FK_d743cb9d5e1dd365b2d2a949efa"`,
    );
    await queryRunner.query(`ALTER TABLE "device_health" DROP CONSTRAINT "FK_5a2d89e45bf569819a0a6506ee1"`);
    await queryRunner.query(`ALTER TABLE "devices" DROP COLUMN "extensions"`);
    await queryRunner.query(`ALTER TABLE "products" DROP COLUMN "extensions"`);
    await queryRunner.query(`DROP INDEX "public"."network_identities_org_id_idx"`);
    await queryRunner.query(`DROP TABLE "network_identities"`);
    await queryRunner.query(`DROP INDEX "public"."device_health_alarmed_idx"`);
    await queryRunner.query(`DROP INDEX "public"."device_health_status_idx"`);
    await queryRunner.query(`DROP INDEX "public"."device_health_cpu_temp_idx"`);
    await queryRunner.query(`DROP INDEX "public"."device_health_cpu_usage_percent_idx"`);
    await queryRunner.query(`DROP INDEX "public"."device_health_mem_used_percent_idx"`);
    await queryRunner.query(`DROP INDEX "public"."device_health_disk_used_percentage_idx"`);
    await queryRunner.query(`DROP INDEX "public"."device_health_load_1min_idx"`);
    await queryRunner.query(`DROP TABLE "device_health"`);
    await queryRunner.query(`DROP TYPE "public"."device_health_status"`);
  }
}
