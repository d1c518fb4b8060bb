import type { MigrationInterface, QueryRunner } from 'typeorm';

export class SingleSignOn1795936223648 implements MigrationInterface {
  name = 'SingleSignOn1795936223648';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "oidc_sign_ins" ("state_hash" bytea NOT NULL, "nonce" character varying(128) NOT NULL, "code_verifier" character varying(128) NOT NULL, "inserted_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_61b772dec497eefa388eefcd419" PRIMARY KEY ("state_hash"))`,
    );
    await queryRunner.query(
      `CREATE TABLE "user_identities" ("id" bigint GENERATED ALWAYS AS IDENTITY NOT NULL, "user_id" bigint NOT NULL, "issuer" character varying(255) NOT NULL, "subject" character varying(255) NOT NULL, "email" character varying(320) NOT NULL, "inserted_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_e23bff04e9c3e7b785e442b262c" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "user_identities_user_id_idx" ON "user_identities"  ("user_id") `);
    await queryRunner.query(
      `CREATE UNIQUE INDEX "user_identities_issuer_subject_key" ON "user_identities"  ("issuer", "subject") `,
    );
    await queryRunner.query(
      `ALTER TABLE "browser_sessions" ADD "sign_in_method" character varying(16) NOT NULL DEFAULT 'password'`,
    );
    await queryRunner.query(
      `ALTER TABLE "user_identities" ADD CONSTRAINT "FK_bf5fe01eb8cad7114b4c371cdc7" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "user_identities" DROP CONSTRAINT "FK_bf5fe01eb8cad7114b4c371cdc7"`);
    await queryRunner.query(`ALTER TABLE "browser_sessions" DROP COLUMN "sign_in_method"`);
    await queryRunner.query(`DROP INDEX "public"."user_identities_issuer_subject_key"`);
    await queryRunner.query(`DROP INDEX "public"."user_identities_user_id_idx"`);
    await queryRunner.query(`DROP TABLE "user_identities"`);
    await queryRunner.query(`DROP TABLE "oidc_sign_ins"`);
  }
}
