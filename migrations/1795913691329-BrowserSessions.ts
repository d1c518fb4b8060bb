import type { MigrationInterface, QueryRunner } from 'typeorm';

export class BrowserSessions1795913691329 implements MigrationInterface {
  name = 'BrowserSessions1795913691329';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "browser_sessions" ("id" bigint GENERATED ALWAYS AS IDENTITY NOT NULL, "user_id" bigint NOT NULL, "token_hash" bytea NOT NULL, "last_seen_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "user_agent" character varying(255), "source_address" character varying(64), "inserted_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "UQ_d33775a72f4cafb275ea23f26b1" UNIQUE ("token_hash"), CONSTRAINT "PK_62bb0057d5bf51b68d790563ba3" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "browser_sessions_user_id_idx" ON "browser_sessions"  ("user_id") `,
    );
    await queryRunner.query(
      `ALTER TABLE "browser_sessions" ADD CONSTRAINT "FK_af244312d727c5b958dcce323a8" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "browser_sessions" DROP CONSTRAINT "FK_af244312d727c5b958dcce323a8"`,
    );
    await queryRunner.query(`DROP INDEX "public"."browser_sessions_user_id_idx"`);
    await queryRunner.query(`DROP TABLE "browser_sessions"`);
  }
}
