import type { MigrationInterface, QueryRunner } from 'typeorm';

export class NervesHubParity1795767991740 implements MigrationInterface {
  name = 'NervesHubParity1795767991740';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TYPE "public"."device_import_status" AS ENUM('running', 'done', 'interrupted')`,
    );
    await queryRunner.query(
      `CREATE TABLE "device_imports" ("id" bigint GENERATED ALWAYS AS IDENTITY NOT NULL, "product_id" bigint NOT NULL, "format" character varying(64) NOT NULL, "tags" text array NOT NULL DEFAULT '{}', "status" "public"."device_import_status" NOT NULL DEFAULT 'running', "total" integer NOT NULL, "processed" integer NOT NULL DEFAULT '0', "created" integer NOT NULL DEFAULT '0', "unchanged" integer NOT NULL DEFAULT '0', "failed" integer NOT NULL DEFAULT '0', "errors" jsonb NOT NULL DEFAULT '[]', "requested_by_id" bigint, "inserted_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_3ec46af8a4abc4654c6b5e57555" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "device_imports_product_id_idx" ON "device_imports"  ("product_id", "inserted_at") `,
    );
    await queryRunner.query(
      `CREATE TABLE "org_invitations" ("id" bigint GENERATED ALWAYS AS IDENTITY NOT NULL, "org_id" bigint NOT NULL, "email" character varying(320) NOT NULL, "role" "public"."org_role" NOT NULL, "invited_by_id" bigint, "nonce" bytea NOT NULL, "token_hash" bytea NOT NULL, "expires_at" TIMESTAMP WITH TIME ZONE NOT NULL, "accepted_at" TIMESTAMP WITH TIME ZONE, "inserted_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "UQ_51b15c6db01c198b25054e62066" UNIQUE ("token_hash"), CONSTRAINT "PK_816479c04d050bf432016a5007d" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "org_invitations_pending_email_idx" ON "org_invitations"  ("org_id", "email") WHERE accepted_at IS NULL`,
    );
    await queryRunner.query(
      `CREATE TYPE "public"."cli_session_status" AS ENUM('waiting', 'approved', 'claimed', 'closed')`,
    );
    await queryRunner.query(
      `CREATE TABLE "cli_sessions" ("id" bigint GENERATED ALWAYS AS IDENTITY NOT NULL, "token_hash" bytea NOT NULL, "confirmation_code" character varying(6) NOT NULL, "note" character varying(255), "status" "public"."cli_session_status" NOT NULL DEFAULT 'waiting', "attempts" smallint NOT NULL DEFAULT '0', "user_id" bigint, "expires_at" TIMESTAMP WITH TIME ZONE NOT NULL, "inserted_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "UQ_3598b5bb01dd30109097b633318" UNIQUE ("token_hash"), CONSTRAINT "PK_76fd404e4efea399bbcf14c36e2" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "cli_sessions_expires_at_idx" ON "cli_sessions"  ("expires_at") `);
    await queryRunner.query(`CREATE TYPE "public"."token_rendering" AS ENUM('fleethub', 'nerveshub')`);
    await queryRunner.query(
      `ALTER TABLE "access_tokens" ADD "rendering" "public"."token_rendering" NOT NULL DEFAULT 'fleethub'`,
    );
    await queryRunner.query(
      `ALTER TABLE "device_imports" ADD CONSTRAINT "FK_d38d350613a5d8a10b9cc493cdf" FOREIGN KEY ("product_id") REFERENCES "products"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "device_imports" ADD CONSTRAINT "FK_401625dd844a3adae0d31c8a109" FOREIGN KEY ("requested_by_id") REFERENCES "users"("id") ON DELETE SET NULL ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "org_invitations" ADD CONSTRAINT "FK_f8b8fa9c8398fe6f397d0e78cbe" FOREIGN KEY ("org_id") REFERENCES "orgs"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "org_invitations" ADD CONSTRAINT "FK_b194eb0a202e35ba55a25fa079a" FOREIGN KEY ("invited_by_id") REFERENCES "users"("id") ON DELETE SET NULL ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "cli_sessions" ADD CONSTRAINT "FK_3afff4d5b82e27847b3f017d9aa" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "cli_sessions" DROP CONSTRAINT "FK_3afff4d5b82e27847b3f017d9aa"`);
    await queryRunner.query(`ALTER TABLE "org_invitations" DROP CONSTRAINT "FK_b194eb0a202e35ba55a25fa079a"`);
    await queryRunner.query(`ALTER TABLE "org_invitations" DROP CONSTRAINT "FK_f8b8fa9c8398fe6f397d0e78cbe"`);
    await queryRunner.query(`ALTER TABLE "device_imports" DROP CONSTRAINT "FK_401625dd844a3adae0d31c8a109"`);
    await queryRunner.query(`ALTER TABLE "device_imports" DROP CONSTRAINT "FK_d38d350613a5d8a10b9cc493cdf"`);
    await queryRunner.query(`ALTER TABLE "access_tokens" DROP COLUMN "rendering"`);
    await queryRunner.query(`DROP TYPE "public"."token_rendering"`);
    await queryRunner.query(`DROP INDEX "public"."cli_sessions_expires_at_idx"`);
    await queryRunner.query(`DROP TABLE "cli_sessions"`);
    await queryRunner.query(`DROP TYPE "public"."cli_session_status"`);
    await queryRunner.query(`DROP INDEX "public"."org_invitations_pending_email_idx"`);
    await queryRunner.query(`DROP TABLE "org_invitations"`);
    await queryRunner.query(`DROP INDEX "public"."device_imports_product_id_idx"`);
    await queryRunner.query(`DROP TABLE "device_imports"`);
    await queryRunner.query(`DROP TYPE "public"."device_import_status"`);
  }
}
