import type { MigrationInterface, QueryRunner } from 'typeorm';

export class Archives1795938194590 implements MigrationInterface {
  name = 'Archives1795938194590';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "archives" ("id" bigint GENERATED ALWAYS AS IDENTITY NOT NULL, "product_id" bigint NOT NULL, "uuid" uuid NOT NULL, "version" character varying(255) NOT NULL, "version_sort_key" character varying(1024) COLLATE "C" NOT NULL, "meta_product" character varying(255) NOT NULL, "platform" character varying(255) NOT NULL, "architecture" character varying(255) NOT NULL, "author" character varying(255), "description" text, "misc" text, "vcs_identifier" character varying(255), "size" bigint NOT NULL, "sha256" character(64) NOT NULL, "storage_key" character varying(255) NOT NULL, "signed_with" character varying(255) NOT NULL, "uploaded_by_id" bigint, "inserted_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "archives_product_id_uuid_key" UNIQUE ("product_id", "uuid"), CONSTRAINT "PK_c3ec7997b37170870ed028fe0e3" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "archives_product_id_version_sort_idx" ON "archives"  ("product_id", "version_sort_key", "inserted_at") `,
    );
    await queryRunner.query(
      `CREATE TABLE "deployment_group_archives" ("deployment_group_id" bigint NOT NULL, "archive_id" bigint NOT NULL, "attached_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_60c3255f87b29d9d3cfaf82eeca" PRIMARY KEY ("deployment_group_id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "deployment_group_archives_archive_id_idx" ON "deployment_group_archives"  ("archive_id") `,
    );
    await queryRunner.query(
      `ALTER TABLE "archives" ADD CONSTRAINT "FK_e2f26f1087cacfc2c4f8d152ece" FOREIGN KEY ("product_id") REFERENCES "products"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "archives" ADD CONSTRAINT "FK_847c7b7226895d14cd9901a37fa" FOREIGN KEY ("uploaded_by_id") REFERENCES "users"("id") ON DELETE SET NULL ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "deployment_group_archives" ADD CONSTRAINT "FK_60c3255f87b29d9d3cfaf82eeca" FOREIGN KEY ("deployment_group_id") REFERENCES "deployment_groups"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "deployment_group_archives" ADD CONSTRAINT "FK_f6d476cae14f429889f4cecda44" FOREIGN KEY ("archive_id") REFERENCES "archives"("id") ON DELETE NO ACTION ON UPDATE NO ACTION`,
    );
    // The files of deleted archives (one at a time, or a product's with it through the foreign key's cascade) go
    // to the firmware file remover's queue in the deleting transaction: a statement-level trigger with a
    // transition table, one insert per statement. The delete route removes its file at once after the commit.
    await queryRunner.query(`
      CREATE FUNCTION archives_schedule_file_removal() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO storage_deletions (storage_key, next_attempt_at)
        SELECT storage_key, now() + interval '60 seconds' FROM old_archives;
        RETURN NULL;
      END $$`);
    await queryRunner.query(`
      CREATE TRIGGER archives_schedule_file_removal AFTER DELETE ON archives
        REFERENCING OLD TABLE AS old_archives FOR EACH STATEMENT
        EXECUTE FUNCTION archives_schedule_file_removal()`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER archives_schedule_file_removal ON archives`);
    await queryRunner.query(`DROP FUNCTION archives_schedule_file_removal()`);
    await queryRunner.query(
      `ALTER TABLE "deployment_group_archives" DROP CONSTRAINT "FK_f6d476cae14f429889f4cecda44"`,
    );
    await queryRunner.query(
      `ALTER TABLE "deployment_group_archives" DROP CONSTRAINT "FK_60c3255f87b29d9d3cfaf82eeca"`,
    );
    await queryRunner.query(`ALTER TABLE "archives" DROP CONSTRAINT "FK_847c7b7226895d14cd9901a37fa"`);
    await queryRunner.query(`ALTER TABLE "archives" DROP CONSTRAINT "FK_e2f26f1087cacfc2c4f8d152ece"`);
    await queryRunner.query(`DROP INDEX "public"."deployment_group_archives_archive_id_idx"`);
    await queryRunner.query(`DROP TABLE "deployment_group_archives"`);
    await queryRunner.query(`DROP INDEX "public"."archives_product_id_version_sort_idx"`);
    await queryRunner.query(`DROP TABLE "archives"`);
  }
}
