import type { MigrationInterface, QueryRunner } from 'typeorm';
import { semverSortKey } from '../src/firmware/fwup/semver-sort-key';

export class DeploymentGroups1795636317875 implements MigrationInterface {
  name = 'DeploymentGroups1795636317875';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE TYPE "public"."deployment_tag_operator" AS ENUM('and', 'or')`);
    await queryRunner.query(`CREATE TYPE "public"."deployment_queue_management" AS ENUM('FIFO', 'LIFO')`);
    await queryRunner.query(
      `CREATE TABLE "deployment_groups" ("id" bigint GENERATED ALWAYS AS IDENTITY NOT NULL, "org_id" bigint NOT NULL, "product_id" bigint NOT NULL, "name" character varying(255) NOT NULL, "is_active" boolean NOT NULL DEFAULT false, "platform" character varying(255) NOT NULL, "architecture" character varying(255) NOT NULL, "conditions_version" character varying(1024) NOT NULL DEFAULT '', "conditions_tags" text array NOT NULL DEFAULT '{}', "conditions_tag_operator" "public"."deployment_tag_operator" NOT NULL DEFAULT 'and', "notes" character varying(1000), "delta_updatable" boolean NOT NULL DEFAULT true, "concurrent_updates" integer NOT NULL DEFAULT '10', "inflight_update_expiration_minutes" integer NOT NULL DEFAULT '60', "device_failure_threshold" integer NOT NULL DEFAULT '3', "device_failure_rate_seconds" integer NOT NULL DEFAULT '180', "device_failure_rate_amount" integer NOT NULL DEFAULT '5', "failure_threshold" integer NOT NULL DEFAULT '50', "penalty_timeout_minutes" integer NOT NULL DEFAULT '1440', "queue_management" "public"."deployment_queue_management" NOT NULL DEFAULT 'FIFO', "lock_device_membership" boolean NOT NULL DEFAULT false, "current_release_id" bigint, "paused_reason" character varying(1000), "paused_at" TIMESTAMP WITH TIME ZONE, "inserted_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_4c97aff7c1ce821bf35edc5a4a8" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "deployment_groups_org_id_idx" ON "deployment_groups"  ("org_id") `,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "deployment_groups_product_id_name_idx" ON "deployment_groups"  ("product_id", "name") `,
    );
    await queryRunner.query(
      `CREATE TABLE "deployment_releases" ("id" bigint GENERATED ALWAYS AS IDENTITY NOT NULL, "deployment_group_id" bigint NOT NULL, "number" integer NOT NULL, "firmware_id" bigint NOT NULL, "created_by_id" bigint, "failed_count" integer NOT NULL DEFAULT '0', "inserted_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_39a342b5663c3c54646865f06e7" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "deployment_releases_firmware_id_idx" ON "deployment_releases"  ("firmware_id") `,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "deployment_releases_group_id_number_idx" ON "deployment_releases"  ("deployment_group_id", "number") `,
    );
    await queryRunner.query(
      `ALTER TABLE "devices" ADD "firmware_version_key" character varying(1024) COLLATE "C"`,
    );
    await queryRunner.query(`ALTER TABLE "devices" ADD "deployment_group_id" bigint`);
    await queryRunner.query(
      `ALTER TABLE "devices" ADD "update_attempts" TIMESTAMP WITH TIME ZONE array NOT NULL DEFAULT '{}'`,
    );
    await queryRunner.query(`ALTER TABLE "devices" ADD "connected_at" TIMESTAMP WITH TIME ZONE`);
    await queryRunner.query(`ALTER TABLE "pending_updates" ADD "deployment_group_id" bigint`);
    await queryRunner.query(`ALTER TABLE "pending_updates" ADD "deployment_release_id" bigint`);
    await queryRunner.query(`ALTER TABLE "pending_updates" ADD "expires_at" TIMESTAMP WITH TIME ZONE`);
    await queryRunner.query(
      `CREATE INDEX "devices_deployment_group_id_idx" ON "devices"  ("deployment_group_id") `,
    );
    await queryRunner.query(
      `CREATE INDEX "pending_updates_deployment_group_id_idx" ON "pending_updates"  ("deployment_group_id") `,
    );
    await queryRunner.query(
      `ALTER TABLE "deployment_groups" ADD CONSTRAINT "FK_e14decef75d3803de4a376eae06" FOREIGN KEY ("org_id") REFERENCES "orgs"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "deployment_groups" ADD CONSTRAINT "FK_818ed10618ace4cf56752bd2921" FOREIGN KEY ("product_id") REFERENCES "products"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "deployment_groups" ADD CONSTRAINT "FK_62c49056cb1b682f366d5d669c8" FOREIGN KEY ("current_release_id") REFERENCES "deployment_releases"("id") ON DELETE SET NULL ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "deployment_releases" ADD CONSTRAINT "FK_ecf429a64652457be36e6cb4116" FOREIGN KEY ("deployment_group_id") REFERENCES "deployment_groups"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "deployment_releases" ADD CONSTRAINT "FK_bffc97f202dbc9a0f36b434e834" FOREIGN KEY ("firmware_id") REFERENCES "firmwares"("id") ON DELETE RESTRICT ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "deployment_releases" ADD CONSTRAINT "FK_b2c11765d6fa4b336e56c975813" FOREIGN KEY ("created_by_id") REFERENCES "users"("id") ON DELETE SET NULL ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "devices" ADD CONSTRAINT "FK_3e6467c6d951dc0ef3325e37f1e" FOREIGN KEY ("deployment_group_id") REFERENCES "deployment_groups"("id") ON DELETE SET NULL ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "pending_updates" ADD CONSTRAINT "FK_89da4948bb3b641b7806091c4ad" FOREIGN KEY ("deployment_group_id") REFERENCES "deployment_groups"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "pending_updates" ADD CONSTRAINT "FK_37ef3e8d37a28d700c5e8b17c72" FOREIGN KEY ("deployment_release_id") REFERENCES "deployment_releases"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    // The version keys of the devices already reported, one statement for every distinct version.
    const versions = (await queryRunner.query(
      `SELECT DISTINCT firmware_version FROM devices WHERE firmware_version IS NOT NULL`,
    )) as { firmware_version: string }[];
    const keyed = versions
      .map(({ firmware_version }) => ({ version: firmware_version, key: semverSortKey(firmware_version) }))
      .filter((row): row is { version: string; key: string } => row.key !== null);
    if (keyed.length > 0) {
      await queryRunner.query(
        `UPDATE devices d SET firmware_version_key = v.key
           FROM unnest($1::text[], $2::text[]) AS v(version, key) WHERE d.firmware_version = v.version`,
        [keyed.map((row) => row.version), keyed.map((row) => row.key)],
      );
    }
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "pending_updates" DROP CONSTRAINT "FK_37ef3e8d37a28d700c5e8b17c72"`);
    await queryRunner.query(`ALTER TABLE "pending_updates" DROP CONSTRAINT "FK_89da4948bb3b641b7806091c4ad"`);
    await queryRunner.query(`ALTER TABLE "devices" DROP CONSTRAINT "FK_3e6467c6d951dc0ef3325e37f1e"`);
    await queryRunner.query(
      `ALTER TABLE "deployment_releases" DROP CONSTRAINT "FK_b2c11765d6fa4b336e56c975813"`,
    );
    await queryRunner.query(
      `ALTER TABLE "deployment_releases" DROP CONSTRAINT "FK_bffc97f202dbc9a0f36b434e834"`,
    );
    await queryRunner.query(
      `ALTER TABLE "deployment_releases" DROP CONSTRAINT "FK_ecf429a64652457be36e6cb4116"`,
    );
    await queryRunner.query(
      `ALTER TABLE "deployment_groups" DROP CONSTRAINT "FK_62c49056cb1b682f366d5d669c8"`,
    );
    await queryRunner.query(
      `ALTER TABLE "deployment_groups" DROP CONSTRAINT "FK_818ed10618ace4cf56752bd2921"`,
    );
    await queryRunner.query(
      `ALTER TABLE "deployment_groups" DROP CONSTRAINT "FK_e14decef75d3803de4a376eae06"`,
    );
    await queryRunner.query(`DROP INDEX "public"."pending_updates_deployment_group_id_idx"`);
    await queryRunner.query(`DROP INDEX "public"."devices_deployment_group_id_idx"`);
    await queryRunner.query(`ALTER TABLE "pending_updates" DROP COLUMN "expires_at"`);
    await queryRunner.query(`ALTER TABLE "pending_updates" DROP COLUMN "deployment_release_id"`);
    await queryRunner.query(`ALTER TABLE "pending_updates" DROP COLUMN "deployment_group_id"`);
    await queryRunner.query(`ALTER TABLE "devices" DROP COLUMN "connected_at"`);
    await queryRunner.query(`ALTER TABLE "devices" DROP COLUMN "update_attempts"`);
    await queryRunner.query(`ALTER TABLE "devices" DROP COLUMN "deployment_group_id"`);
    await queryRunner.query(`ALTER TABLE "devices" DROP COLUMN "firmware_version_key"`);
    await queryRunner.query(`DROP INDEX "public"."deployment_releases_group_id_number_idx"`);
    await queryRunner.query(`DROP INDEX "public"."deployment_releases_firmware_id_idx"`);
    await queryRunner.query(`DROP TABLE "deployment_releases"`);
    await queryRunner.query(`DROP INDEX "public"."deployment_groups_product_id_name_idx"`);
    await queryRunner.query(`DROP INDEX "public"."deployment_groups_org_id_idx"`);
    await queryRunner.query(`DROP TABLE "deployment_groups"`);
    await queryRunner.query(`DROP TYPE "public"."deployment_queue_management"`);
    await queryRunner.query(`DROP TYPE "public"."deployment_tag_operator"`);
  }
}
