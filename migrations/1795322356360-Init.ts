import type { MigrationInterface, QueryRunner } from 'typeorm';

export class Init1795322356360 implements MigrationInterface {
  name = 'Init1795322356360';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "users" ("id" bigint GENERATED ALWAYS AS IDENTITY NOT NULL, "email" character varying(320) NOT NULL, "username" character varying(64) NOT NULL, "name" character varying(255) NOT NULL, "password_hash" text, "inserted_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "UQ_97672ac88f789774dd47f7c8be3" UNIQUE ("email"), CONSTRAINT "UQ_fe0bb3f6520ee0469504521e710" UNIQUE ("username"), CONSTRAINT "PK_a3ffb1c0c8416b9fc6f907b7433" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE TYPE "public"."token_scope" AS ENUM('all', 'read')`);
    await queryRunner.query(
      `CREATE TABLE "access_tokens" ("id" bigint GENERATED ALWAYS AS IDENTITY NOT NULL, "user_id" bigint NOT NULL, "token_hash" bytea NOT NULL, "note" character varying(255), "scope" "public"."token_scope" NOT NULL DEFAULT 'all', "expires_at" TIMESTAMP WITH TIME ZONE, "revoked_at" TIMESTAMP WITH TIME ZONE, "last_used_at" TIMESTAMP WITH TIME ZONE, "inserted_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "UQ_9bbf8c3c1a897742f78d50e729b" UNIQUE ("token_hash"), CONSTRAINT "PK_65140f59763ff994a0252488166" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "access_tokens_user_id_idx" ON "access_tokens"  ("user_id") `);
    await queryRunner.query(
      `CREATE TABLE "orgs" ("id" bigint GENERATED ALWAYS AS IDENTITY NOT NULL, "name" character varying(64) NOT NULL, "inserted_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "UQ_e9066f92474bd063a2d45b5b7e3" UNIQUE ("name"), CONSTRAINT "PK_9eed8bfad4c9e0dc8648e090efe" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE TABLE "products" ("id" bigint GENERATED ALWAYS AS IDENTITY NOT NULL, "org_id" bigint NOT NULL, "name" character varying(255) NOT NULL, "allow_unsigned_atomvm_firmware" boolean NOT NULL DEFAULT false, "allow_unsigned_esp_idf_firmware" boolean NOT NULL DEFAULT false, "allowed_update_tools" text array NOT NULL DEFAULT '{fwup}', "require_unique_firmware_version" boolean NOT NULL DEFAULT true, "inserted_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "products_org_id_name_key" UNIQUE ("org_id", "name"), CONSTRAINT "PK_0806c755e0aca124e67c0cf6d7d" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE TYPE "public"."device_connection_status" AS ENUM('connected', 'disconnected', 'not_seen')`,
    );
    await queryRunner.query(
      `CREATE TABLE "devices" ("id" bigint GENERATED ALWAYS AS IDENTITY NOT NULL, "org_id" bigint NOT NULL, "product_id" bigint NOT NULL, "identifier" character varying(255) NOT NULL, "description" text, "tags" text array NOT NULL DEFAULT '{}', "updates_enabled" boolean NOT NULL DEFAULT true, "updates_blocked_until" TIMESTAMP WITH TIME ZONE, "connection_status" "public"."device_connection_status" NOT NULL DEFAULT 'not_seen', "last_communication" TIMESTAMP WITH TIME ZONE, "firmware_metadata" jsonb, "firmware_version" character varying(255), "firmware_platform" character varying(255), "inserted_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "UQ_01157b829735c0b390f3bbab1c0" UNIQUE ("identifier"), CONSTRAINT "PK_b1514758245c12daf43486dd1f0" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "devices_org_id_idx" ON "devices"  ("org_id") `);
    await queryRunner.query(
      `CREATE INDEX "devices_product_id_identifier_idx" ON "devices"  ("product_id", "identifier") `,
    );
    await queryRunner.query(
      `CREATE TABLE "firmwares" ("id" bigint GENERATED ALWAYS AS IDENTITY NOT NULL, "product_id" bigint NOT NULL, "uuid" uuid NOT NULL, "version" character varying(255) NOT NULL, "version_sort_key" character varying(1024) COLLATE "C" NOT NULL, "meta_product" character varying(255) NOT NULL, "platform" character varying(255) NOT NULL, "architecture" character varying(255) NOT NULL, "author" character varying(255), "description" text, "misc" text, "vcs_identifier" character varying(255), "fwup_version" character varying(64), "tool" character varying(16) NOT NULL, "size" bigint NOT NULL, "sha256" character(64) NOT NULL, "chunk_sha256" text array NOT NULL, "storage_key" character varying(255) NOT NULL, "signed_with" character varying(255), "uploaded_by_id" bigint, "inserted_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "firmwares_product_id_uuid_key" UNIQUE ("product_id", "uuid"), CONSTRAINT "PK_c18df882af1ac7cc3b29993c6a4" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "firmwares_product_id_version_idx" ON "firmwares"  ("product_id", "version") `,
    );
    await queryRunner.query(
      `CREATE INDEX "firmwares_product_id_version_sort_idx" ON "firmwares"  ("product_id", "version_sort_key", "inserted_at") `,
    );
    await queryRunner.query(
      `CREATE TABLE "pending_updates" ("device_id" bigint NOT NULL, "firmware_id" bigint NOT NULL, "requested_by_id" bigint, "delivered_at" TIMESTAMP WITH TIME ZONE, "inserted_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_bbc32c53dbb6a785a03f1aa7b3f" PRIMARY KEY ("device_id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "pending_updates_firmware_id_idx" ON "pending_updates"  ("firmware_id") `,
    );
    await queryRunner.query(
      `CREATE TABLE "signing_keys" ("id" bigint GENERATED ALWAYS AS IDENTITY NOT NULL, "org_id" bigint NOT NULL, "name" character varying(255) NOT NULL, "key" character varying(44) NOT NULL, "inserted_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "signing_keys_org_id_name_key" UNIQUE ("org_id", "name"), CONSTRAINT "PK_ab7d78cf6e61dc3904133b4cd55" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE TYPE "public"."iroh_endpoint_source" AS ENUM('operator', 'device_reported')`,
    );
    await queryRunner.query(
      `CREATE TABLE "iroh_endpoints" ("id" bigint GENERATED ALWAYS AS IDENTITY NOT NULL, "org_id" bigint NOT NULL, "identifier" character varying(64) COLLATE "C" NOT NULL, "service" character varying(32) NOT NULL DEFAULT 'iroh', "instance" character varying(64) NOT NULL DEFAULT 'default', "details" jsonb NOT NULL DEFAULT '{}', "source" "public"."iroh_endpoint_source" NOT NULL, "device_id" bigint, "user_id" bigint, "last_reported_at" TIMESTAMP WITH TIME ZONE, "inserted_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "UQ_b224fe0a9e10f38cc01cfee31fd" UNIQUE ("identifier"), CONSTRAINT "PK_b732436f660cb7e24c7e47f18f6" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "iroh_endpoints_device_instance_key" ON "iroh_endpoints"  ("device_id", "service", "instance") WHERE device_id IS NOT NULL`,
    );
    await queryRunner.query(`CREATE INDEX "iroh_endpoints_user_id_idx" ON "iroh_endpoints"  ("user_id") `);
    await queryRunner.query(
      `CREATE INDEX "iroh_endpoints_device_id_idx" ON "iroh_endpoints"  ("device_id") `,
    );
    await queryRunner.query(
      `CREATE INDEX "iroh_endpoints_org_id_inserted_at_idx" ON "iroh_endpoints"  ("org_id", "inserted_at", "identifier") `,
    );
    await queryRunner.query(`CREATE TYPE "public"."org_role" AS ENUM('view', 'manage', 'admin')`);
    await queryRunner.query(
      `CREATE TABLE "org_memberships" ("org_id" bigint NOT NULL, "user_id" bigint NOT NULL, "role" "public"."org_role" NOT NULL, "inserted_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_b0c274750845a0f78fdadac9c52" PRIMARY KEY ("org_id", "user_id"))`,
    );
    await queryRunner.query(`CREATE INDEX "org_memberships_user_id_idx" ON "org_memberships"  ("user_id") `);
    await queryRunner.query(
      `CREATE TABLE "support_scripts" ("id" bigint GENERATED ALWAYS AS IDENTITY NOT NULL, "product_id" bigint NOT NULL, "name" character varying(255) NOT NULL, "tags" text NOT NULL DEFAULT '', "text" text NOT NULL, "created_by_id" bigint, "inserted_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_cef5bb1288696496a1aebdbf5ec" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "support_scripts_product_id_id_idx" ON "support_scripts"  ("product_id", "id") `,
    );
    await queryRunner.query(
      `ALTER TABLE "access_tokens" ADD CONSTRAINT "FK_09ee750a035b06e0c7f0704687e" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "products" ADD CONSTRAINT "FK_e709b3421913dcef3ab9b4794e2" FOREIGN KEY ("org_id") REFERENCES "orgs"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "devices" ADD CONSTRAINT "FK_dc94889a211143f9035968f46e9" FOREIGN KEY ("org_id") REFERENCES "orgs"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "devices" ADD CONSTRAINT "FK_6a0a1d36b8d72f5523c0527b8ce" FOREIGN KEY ("product_id") REFERENCES "products"("id") ON DELETE RESTRICT ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "firmwares" ADD CONSTRAINT "FK_d1af19805c1f3638660026e3a18" FOREIGN KEY ("product_id") REFERENCES "products"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "firmwares" ADD CONSTRAINT "FK_87f609879d7c7e2339671855247" FOREIGN KEY ("uploaded_by_id") REFERENCES "users"("id") ON DELETE SET NULL ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "pending_updates" ADD CONSTRAINT "FK_bbc32c53dbb6a785a03f1aa7b3f" FOREIGN KEY ("device_id") REFERENCES "devices"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "pending_updates" ADD CONSTRAINT "FK_59da91b0017916881c7303e3b9b" FOREIGN KEY ("firmware_id") REFERENCES "firmwares"("id") ON DELETE RESTRICT ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "pending_updates" ADD CONSTRAINT "FK_1ebf1db0ee040369002c74e5d40" FOREIGN KEY ("requested_by_id") REFERENCES "users"("id") ON DELETE SET NULL ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "signing_keys" ADD CONSTRAINT "FK_864537f5b45ab347702786dbba2" FOREIGN KEY ("org_id") REFERENCES "orgs"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "iroh_endpoints" ADD CONSTRAINT "FK_faad1e6e32b209eb9d0e12a21ac" FOREIGN KEY ("org_id") REFERENCES "orgs"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "iroh_endpoints" ADD CONSTRAINT "FK_6bfe565cd218040cd758cfdf6cd" FOREIGN KEY ("device_id") REFERENCES "devices"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "iroh_endpoints" ADD CONSTRAINT "FK_42b095aa9ebf25b206de9adbc3d" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE SET NULL ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "org_memberships" ADD CONSTRAINT "FK_4acae15c89bb4a0383a8d5447d7" FOREIGN KEY ("org_id") REFERENCES "orgs"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "org_memberships" ADD CONSTRAINT "FK_21620e5f0bf90d145fec09bee9c" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "support_scripts" ADD CONSTRAINT "FK_01cc9bbedd0686f1d0e80b3290f" FOREIGN KEY ("product_id") REFERENCES "products"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "support_scripts" ADD CONSTRAINT "FK_262e40223dfcec2c11ec44cc052" FOREIGN KEY ("created_by_id") REFERENCES "users"("id") ON DELETE SET NULL ON UPDATE NO ACTION`,
    );

    // Indexes TypeORM cannot describe (sort direction per column, GIN, trigram); see docs/queries.md.
    await queryRunner.query(`CREATE EXTENSION IF NOT EXISTS pg_trgm`);
    await queryRunner.query(
      `CREATE INDEX "devices_product_id_inserted_at_idx" ON "devices" ("product_id", "inserted_at", "identifier")`,
    );
    await queryRunner.query(
      `CREATE INDEX "devices_product_id_last_communication_idx" ON "devices" ("product_id", "last_communication" ASC NULLS FIRST, "identifier")`,
    );
    await queryRunner.query(
      `CREATE INDEX "devices_product_id_firmware_version_idx" ON "devices" ("product_id", "firmware_version" ASC NULLS FIRST, "identifier")`,
    );
    await queryRunner.query(
      `CREATE INDEX "devices_product_id_connection_status_idx" ON "devices" ("product_id", "connection_status", "identifier")`,
    );
    await queryRunner.query(`CREATE INDEX "devices_tags_gin_idx" ON "devices" USING gin ("tags")`);
    await queryRunner.query(
      `CREATE INDEX "devices_identifier_trgm_idx" ON "devices" USING gin ("identifier" gin_trgm_ops)`,
    );
    await queryRunner.query(`CREATE INDEX "users_name_trgm_idx" ON "users" USING gin ("name" gin_trgm_ops)`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."users_name_trgm_idx"`);
    await queryRunner.query(`DROP INDEX "public"."devices_identifier_trgm_idx"`);
    await queryRunner.query(`DROP INDEX "public"."devices_tags_gin_idx"`);
    await queryRunner.query(`DROP INDEX "public"."devices_product_id_connection_status_idx"`);
    await queryRunner.query(`DROP INDEX "public"."devices_product_id_firmware_version_idx"`);
    await queryRunner.query(`DROP INDEX "public"."devices_product_id_last_communication_idx"`);
    await queryRunner.query(`DROP INDEX "public"."devices_product_id_inserted_at_idx"`);
    await queryRunner.query(`ALTER TABLE "support_scripts" DROP CONSTRAINT "FK_262e40223dfcec2c11ec44cc052"`);
    await queryRunner.query(`ALTER TABLE "support_scripts" DROP CONSTRAINT "FK_01cc9bbedd0686f1d0e80b3290f"`);
    await queryRunner.query(`ALTER TABLE "org_memberships" DROP CONSTRAINT "FK_21620e5f0bf90d145fec09bee9c"`);
    await queryRunner.query(`ALTER TABLE "org_memberships" DROP CONSTRAINT "FK_4acae15c89bb4a0383a8d5447d7"`);
    await queryRunner.query(`ALTER TABLE "iroh_endpoints" DROP CONSTRAINT "FK_42b095aa9ebf25b206de9adbc3d"`);
    await queryRunner.query(`ALTER TABLE "iroh_endpoints" DROP CONSTRAINT "FK_6bfe565cd218040cd758cfdf6cd"`);
    await queryRunner.query(`ALTER TABLE "iroh_endpoints" DROP CONSTRAINT "FK_faad1e6e32b209eb9d0e12a21ac"`);
    await queryRunner.query(`ALTER TABLE "signing_keys" DROP CONSTRAINT "FK_864537f5b45ab347702786dbba2"`);
    await queryRunner.query(`ALTER TABLE "pending_updates" DROP CONSTRAINT "FK_1ebf1db0ee040369002c74e5d40"`);
    await queryRunner.query(`ALTER TABLE "pending_updates" DROP CONSTRAINT "FK_59da91b0017916881c7303e3b9b"`);
    await queryRunner.query(`ALTER TABLE "pending_updates" DROP CONSTRAINT "FK_bbc32c53dbb6a785a03f1aa7b3f"`);
    await queryRunner.query(`ALTER TABLE "firmwares" DROP CONSTRAINT "FK_87f609879d7c7e2339671855247"`);
    await queryRunner.query(`ALTER TABLE "firmwares" DROP CONSTRAINT "FK_d1af19805c1f3638660026e3a18"`);
    await queryRunner.query(`ALTER TABLE "devices" DROP CONSTRAINT "FK_6a0a1d36b8d72f5523c0527b8ce"`);
    await queryRunner.query(`ALTER TABLE "devices" DROP CONSTRAINT "FK_dc94889a211143f9035968f46e9"`);
    await queryRunner.query(`ALTER TABLE "products" DROP CONSTRAINT "FK_e709b3421913dcef3ab9b4794e2"`);
    await queryRunner.query(`ALTER TABLE "access_tokens" DROP CONSTRAINT "FK_09ee750a035b06e0c7f0704687e"`);
    await queryRunner.query(`DROP INDEX "public"."support_scripts_product_id_id_idx"`);
    await queryRunner.query(`DROP TABLE "support_scripts"`);
    await queryRunner.query(`DROP INDEX "public"."org_memberships_user_id_idx"`);
    await queryRunner.query(`DROP TABLE "org_memberships"`);
    await queryRunner.query(`DROP TYPE "public"."org_role"`);
    await queryRunner.query(`DROP INDEX "public"."iroh_endpoints_org_id_inserted_at_idx"`);
    await queryRunner.query(`DROP INDEX "public"."iroh_endpoints_device_id_idx"`);
    await queryRunner.query(`DROP INDEX "public"."iroh_endpoints_user_id_idx"`);
    await queryRunner.query(`DROP INDEX "public"."iroh_endpoints_device_instance_key"`);
    await queryRunner.query(`DROP TABLE "iroh_endpoints"`);
    await queryRunner.query(`DROP TYPE "public"."iroh_endpoint_source"`);
    await queryRunner.query(`DROP TABLE "signing_keys"`);
    await queryRunner.query(`DROP INDEX "public"."pending_updates_firmware_id_idx"`);
    await queryRunner.query(`DROP TABLE "pending_updates"`);
    await queryRunner.query(`DROP INDEX "public"."firmwares_product_id_version_sort_idx"`);
    await queryRunner.query(`DROP INDEX "public"."firmwares_product_id_version_idx"`);
    await queryRunner.query(`DROP TABLE "firmwares"`);
    await queryRunner.query(`DROP INDEX "public"."devices_product_id_identifier_idx"`);
    await queryRunner.query(`DROP INDEX "public"."devices_org_id_idx"`);
    await queryRunner.query(`DROP TABLE "devices"`);
    await queryRunner.query(`DROP TYPE "public"."device_connection_status"`);
    await queryRunner.query(`DROP TABLE "products"`);
    await queryRunner.query(`DROP TABLE "orgs"`);
    await queryRunner.query(`DROP INDEX "public"."access_tokens_user_id_idx"`);
    await queryRunner.query(`DROP TABLE "access_tokens"`);
    await queryRunner.query(`DROP TYPE "public"."token_scope"`);
    await queryRunner.query(`DROP TABLE "users"`);
  }
}
