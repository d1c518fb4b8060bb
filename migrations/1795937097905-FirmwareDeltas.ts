import type { MigrationInterface, QueryRunner } from 'typeorm';

export class FirmwareDeltas1795937097905 implements MigrationInterface {
  name = 'FirmwareDeltas1795937097905';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TYPE "public"."firmware_delta_state" AS ENUM('pending', 'building', 'ready', 'failed')`,
    );
    await queryRunner.query(
      `CREATE TABLE "firmware_deltas" ("id" bigint GENERATED ALWAYS AS IDENTITY NOT NULL, "source_id" bigint NOT NULL, "target_id" bigint NOT NULL, "state" "public"."firmware_delta_state" NOT NULL DEFAULT 'pending', "attempts" integer NOT NULL DEFAULT '0', "error" character varying(1000), "next_attempt_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "lease_until" TIMESTAMP WITH TIME ZONE, "lease_token" uuid, "size" bigint, "source_size" bigint, "target_size" bigint, "sha256" character(64), "chunk_sha256" text array, "fwup_version" character varying(64), "build_ms" integer, "storage_key" character varying(255), "inserted_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "firmware_deltas_source_id_target_id_key" UNIQUE ("source_id", "target_id"), CONSTRAINT "PK_9611df5ea0c343d0c5cac3fa252" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "firmware_deltas_building_idx" ON "firmware_deltas"  ("lease_until") WHERE state = 'building'`,
    );
    await queryRunner.query(
      `CREATE INDEX "firmware_deltas_pending_idx" ON "firmware_deltas"  ("next_attempt_at") WHERE state = 'pending'`,
    );
    await queryRunner.query(
      `CREATE INDEX "firmware_deltas_target_id_idx" ON "firmware_deltas"  ("target_id") `,
    );
    await queryRunner.query(`ALTER TABLE "firmwares" ADD "delta_fwup_version" character varying(64)`);
    await queryRunner.query(
      `ALTER TABLE "pending_updates" ADD "delta_allowed" boolean NOT NULL DEFAULT false`,
    );
    await queryRunner.query(
      `ALTER TABLE "firmware_deltas" ADD CONSTRAINT "FK_87b3fa8279ae2e67291e0aa1fa0" FOREIGN KEY ("source_id") REFERENCES "firmwares"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "firmware_deltas" ADD CONSTRAINT "FK_b58a55ba18f30ae1a09fd193c30" FOREIGN KEY ("target_id") REFERENCES "firmwares"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "firmware_deltas" DROP CONSTRAINT "FK_b58a55ba18f30ae1a09fd193c30"`);
    await queryRunner.query(`ALTER TABLE "firmware_deltas" DROP CONSTRAINT "FK_87b3fa8279ae2e67291e0aa1fa0"`);
    await queryRunner.query(`ALTER TABLE "pending_updates" DROP COLUMN "delta_allowed"`);
    await queryRunner.query(`ALTER TABLE "firmwares" DROP COLUMN "delta_fwup_version"`);
    await queryRunner.query(`DROP INDEX "public"."firmware_deltas_target_id_idx"`);
    await queryRunner.query(`DROP INDEX "public"."firmware_deltas_pending_idx"`);
    await queryRunner.query(`DROP INDEX "public"."firmware_deltas_building_idx"`);
    await queryRunner.query(`DROP TABLE "firmware_deltas"`);
    await queryRunner.query(`DROP TYPE "public"."firmware_delta_state"`);
  }
}
