import type { MigrationInterface, QueryRunner } from 'typeorm';

export class StorageDeletions1795644094391 implements MigrationInterface {
  name = 'StorageDeletions1795644094391';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "storage_deletions" ("id" bigint GENERATED ALWAYS AS IDENTITY NOT NULL, "storage_key" character varying(255) NOT NULL, "attempts" integer NOT NULL DEFAULT '0', "next_attempt_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "inserted_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_0f4ad92143fb36dadad7c5b8717" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "storage_deletions_next_attempt_at_idx" ON "storage_deletions"  ("next_attempt_at") `,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."storage_deletions_next_attempt_at_idx"`);
    await queryRunner.query(`DROP TABLE "storage_deletions"`);
  }
}
