import type { MigrationInterface, QueryRunner } from 'typeorm';

export class OrgPolicies1795934868820 implements MigrationInterface {
  name = 'OrgPolicies1795934868820';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "org_policies" ("org_id" bigint NOT NULL, "require_two_factor" boolean NOT NULL DEFAULT false, "max_token_lifetime_days" integer, "allowed_token_scopes" text array NOT NULL DEFAULT '{all,read}', "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_07c9ec0989dac43ea067ae3c18a" PRIMARY KEY ("org_id"))`,
    );
    await queryRunner.query(
      `ALTER TABLE "org_policies" ADD CONSTRAINT "FK_07c9ec0989dac43ea067ae3c18a" FOREIGN KEY ("org_id") REFERENCES "orgs"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "org_policies" DROP CONSTRAINT "FK_07c9ec0989dac43ea067ae3c18a"`);
    await queryRunner.query(`DROP TABLE "org_policies"`);
  }
}
