import type { MigrationInterface, QueryRunner } from 'typeorm';

export class TwoFactor1795933857844 implements MigrationInterface {
  name = 'TwoFactor1795933857844';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "user_two_factor" ("user_id" bigint NOT NULL, "secret" character varying(64) NOT NULL, "confirmed_at" TIMESTAMP WITH TIME ZONE, "last_used_step" bigint, "backup_code_hashes" text array NOT NULL DEFAULT '{}', "inserted_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_0e865d85e0ad6329b40523afe55" PRIMARY KEY ("user_id"))`,
    );
    await queryRunner.query(
      `ALTER TABLE "user_two_factor" ADD CONSTRAINT "FK_0e865d85e0ad6329b40523afe55" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "user_two_factor" DROP CONSTRAINT "FK_0e865d85e0ad6329b40523afe55"`);
    await queryRunner.query(`DROP TABLE "user_two_factor"`);
  }
}
