import type { MigrationInterface, QueryRunner } from 'typeorm';

export class GatewayAuditRateLimits1795324593147 implements MigrationInterface {
  name = 'GatewayAuditRateLimits1795324593147';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "audit_logs" ("id" bigint GENERATED ALWAYS AS IDENTITY NOT NULL, "org_id" bigint NOT NULL, "actor_user_id" bigint, "actor_type" character varying(16) NOT NULL, "actor_name" character varying(320), "action" character varying(64) NOT NULL, "target_type" character varying(32) NOT NULL, "target_id" character varying(255) NOT NULL, "details" jsonb NOT NULL DEFAULT '{}', "request_id" character varying(128), "inserted_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_1bb179d048bbc581caa3b013439" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "audit_logs_org_id_target_idx" ON "audit_logs"  ("org_id", "target_type", "target_id", "inserted_at") `,
    );
    await queryRunner.query(
      `CREATE INDEX "audit_logs_org_id_actor_idx" ON "audit_logs"  ("org_id", "actor_user_id", "inserted_at") `,
    );
    await queryRunner.query(
      `CREATE INDEX "audit_logs_org_id_inserted_at_idx" ON "audit_logs"  ("org_id", "inserted_at", "id") `,
    );
    await queryRunner.query(
      `CREATE UNLOGGED TABLE "rate_limit_buckets" ("key" character varying(255) NOT NULL, "hits" integer NOT NULL DEFAULT '0', "expires_at" TIMESTAMP WITH TIME ZONE NOT NULL, CONSTRAINT "PK_9eb2f8a2ae370667b4ca83dd313" PRIMARY KEY ("key"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "rate_limit_buckets_expires_at_idx" ON "rate_limit_buckets"  ("expires_at") `,
    );
    await queryRunner.query(
      `CREATE TABLE "gateway_instances" ("id" uuid NOT NULL, "hostname" character varying(255) NOT NULL, "lease_until" TIMESTAMP WITH TIME ZONE NOT NULL, "started_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_bbb4b9bd00d749b74cb7229b4ea" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE TABLE "product_shared_secrets" ("id" bigint GENERATED ALWAYS AS IDENTITY NOT NULL, "product_id" bigint NOT NULL, "key" character varying(64) NOT NULL, "secret_encrypted" bytea NOT NULL, "deactivated_at" TIMESTAMP WITH TIME ZONE, "inserted_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "UQ_3a33d0acce59ea34004cc6e3d08" UNIQUE ("key"), CONSTRAINT "PK_0ec0463357caddbc05621beddbe" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "product_shared_secrets_product_id_idx" ON "product_shared_secrets"  ("product_id") `,
    );
    await queryRunner.query(
      `CREATE TABLE "device_shared_secrets" ("id" bigint GENERATED ALWAYS AS IDENTITY NOT NULL, "device_id" bigint NOT NULL, "key" character varying(64) NOT NULL, "secret_encrypted" bytea NOT NULL, "deactivated_at" TIMESTAMP WITH TIME ZONE, "inserted_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "UQ_f22dec1add9796d82311cae8c82" UNIQUE ("key"), CONSTRAINT "PK_ed821716cd2a9f5084c4332d3d8" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "device_shared_secrets_device_id_idx" ON "device_shared_secrets"  ("device_id") `,
    );
    await queryRunner.query(
      `CREATE TABLE "device_console_output" ("device_id" bigint NOT NULL, "output" text NOT NULL DEFAULT '', "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_bcca1e481c0817c8c7052580bfe" PRIMARY KEY ("device_id"))`,
    );
    await queryRunner.query(`ALTER TABLE "devices" ADD "connected_instance_id" uuid`);
    await queryRunner.query(`ALTER TABLE "pending_updates" ADD "status" character varying(64)`);
    await queryRunner.query(`ALTER TABLE "pending_updates" ADD "progress" smallint`);
    await queryRunner.query(`ALTER TABLE "pending_updates" ADD "status_updated_at" TIMESTAMP WITH TIME ZONE`);
    await queryRunner.query(
      `CREATE INDEX "devices_connected_instance_id_idx" ON "devices"  ("connected_instance_id") `,
    );
    await queryRunner.query(
      `ALTER TABLE "audit_logs" ADD CONSTRAINT "FK_8f3655b4b607ce3e7a3fb906784" FOREIGN KEY ("org_id") REFERENCES "orgs"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "audit_logs" ADD CONSTRAINT "FK_f160d97a931844109de9d04228f" FOREIGN KEY ("actor_user_id") REFERENCES "users"("id") ON DELETE SET NULL ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "devices" ADD CONSTRAINT "FK_f9bf26fe61ddd0f9779c5fa1bf4" FOREIGN KEY ("connected_instance_id") REFERENCES "gateway_instances"("id") ON DELETE SET NULL ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "product_shared_secrets" ADD CONSTRAINT "FK_5caf1788848d997b80c44281f0d" FOREIGN KEY ("product_id") REFERENCES "products"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "device_shared_secrets" ADD CONSTRAINT "FK_7f1791c9686a26dbb50d4ac8b2a" FOREIGN KEY ("device_id") REFERENCES "devices"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "device_console_output" ADD CONSTRAINT "FK_bcca1e481c0817c8c7052580bfe" FOREIGN KEY ("device_id") REFERENCES "devices"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "device_console_output" DROP CONSTRAINT "FK_bcca1e481c0817c8c7052580bfe"`,
    );
    await queryRunner.query(
      `ALTER TABLE "device_shared_secrets" DROP CONSTRAINT "FK_7f1791c9686a26dbb50d4ac8b2a"`,
    );
    await queryRunner.query(
      `ALTER TABLE "product_shared_secrets" DROP CONSTRAINT "FK_5caf1788848d997b80c44281f0d"`,
    );
    await queryRunner.query(`ALTER TABLE "devices" DROP CONSTRAINT "FK_f9bf26fe61ddd0f9779c5fa1bf4"`);
    await queryRunner.query(`ALTER TABLE "audit_logs" DROP CONSTRAINT "FK_f160d97a931844109de9d04228f"`);
    await queryRunner.query(`ALTER TABLE "audit_logs" DROP CONSTRAINT "FK_8f3655b4b607ce3e7a3fb906784"`);
    await queryRunner.query(`DROP INDEX "public"."devices_connected_instance_id_idx"`);
    await queryRunner.query(`ALTER TABLE "pending_updates" DROP COLUMN "status_updated_at"`);
    await queryRunner.query(`ALTER TABLE "pending_updates" DROP COLUMN "progress"`);
    await queryRunner.query(`ALTER TABLE "pending_updates" DROP COLUMN "status"`);
    await queryRunner.query(`ALTER TABLE "devices" DROP COLUMN "connected_instance_id"`);
    await queryRunner.query(`DROP TABLE "device_console_output"`);
    await queryRunner.query(`DROP INDEX "public"."device_shared_secrets_device_id_idx"`);
    await queryRunner.query(`DROP TABLE "device_shared_secrets"`);
    await queryRunner.query(`DROP INDEX "public"."product_shared_secrets_product_id_idx"`);
    await queryRunner.query(`DROP TABLE "product_shared_secrets"`);
    await queryRunner.query(`DROP TABLE "gateway_instances"`);
    await queryRunner.query(`DROP INDEX "public"."rate_limit_buckets_expires_at_idx"`);
    await queryRunner.query(`DROP TABLE "rate_limit_buckets"`);
    await queryRunner.query(`DROP INDEX "public"."audit_logs_org_id_inserted_at_idx"`);
    await queryRunner.query(`DROP INDEX "public"."audit_logs_org_id_actor_idx"`);
    await queryRunner.query(`DROP INDEX "public"."audit_logs_org_id_target_idx"`);
    await queryRunner.query(`DROP TABLE "audit_logs"`);
  }
}
