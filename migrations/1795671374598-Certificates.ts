import type { MigrationInterface, QueryRunner } from 'typeorm';

export class Certificates1795671374598 implements MigrationInterface {
  name = 'Certificates1795671374598';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "ca_certificates" ("id" bigint GENERATED ALWAYS AS IDENTITY NOT NULL, "org_id" bigint NOT NULL, "serial" character varying(64) NOT NULL, "aki" bytea, "ski" bytea NOT NULL, "not_before" TIMESTAMP WITH TIME ZONE NOT NULL, "not_after" TIMESTAMP WITH TIME ZONE NOT NULL, "description" character varying(255), "der" bytea NOT NULL, "jitp_product_id" bigint, "jitp_tags" text array NOT NULL DEFAULT '{}', "jitp_description" character varying(255), "last_used" TIMESTAMP WITH TIME ZONE, "inserted_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "ca_certificates_org_id_serial_key" UNIQUE ("org_id", "serial"), CONSTRAINT "PK_768fd6f3bd71c10d9160ec0b40d" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "ca_certificates_jitp_product_id_idx" ON "ca_certificates"  ("jitp_product_id") `,
    );
    await queryRunner.query(`CREATE INDEX "ca_certificates_aki_idx" ON "ca_certificates"  ("aki") `);
    await queryRunner.query(`CREATE INDEX "ca_certificates_ski_idx" ON "ca_certificates"  ("ski") `);
    await queryRunner.query(
      `CREATE TABLE "device_certificates" ("id" bigint GENERATED ALWAYS AS IDENTITY NOT NULL, "device_id" bigint NOT NULL, "serial" character varying(64) NOT NULL, "aki" bytea, "ski" bytea, "not_before" TIMESTAMP WITH TIME ZONE NOT NULL, "not_after" TIMESTAMP WITH TIME ZONE NOT NULL, "der" bytea NOT NULL, "fingerprint" character varying(64) NOT NULL, "public_key_fingerprint" character varying(64) NOT NULL, "last_used" TIMESTAMP WITH TIME ZONE, "inserted_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "device_certificates_fingerprint_key" UNIQUE ("fingerprint"), CONSTRAINT "device_certificates_device_id_serial_key" UNIQUE ("device_id", "serial"), CONSTRAINT "PK_d45961aa6f530d790294a69ff7d" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "device_certificates_aki_idx" ON "device_certificates"  ("aki") `);
    await queryRunner.query(
      `CREATE INDEX "device_certificates_public_key_fingerprint_idx" ON "device_certificates"  ("public_key_fingerprint") `,
    );
    await queryRunner.query(
      `ALTER TABLE "ca_certificates" ADD CONSTRAINT "FK_823912573f2698306f7dfb6ee1c" FOREIGN KEY ("org_id") REFERENCES "orgs"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "ca_certificates" ADD CONSTRAINT "FK_33407c7f67dfcb1a89ca5255c7e" FOREIGN KEY ("jitp_product_id") REFERENCES "products"("id") ON DELETE SET NULL ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "device_certificates" ADD CONSTRAINT "FK_289f82e85198cc4758db4e0a0af" FOREIGN KEY ("device_id") REFERENCES "devices"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "device_certificates" DROP CONSTRAINT "FK_289f82e85198cc4758db4e0a0af"`,
    );
    await queryRunner.query(`ALTER TABLE "ca_certificates" DROP CONSTRAINT "FK_33407c7f67dfcb1a89ca5255c7e"`);
    await queryRunner.query(`ALTER TABLE "ca_certificates" DROP CONSTRAINT "FK_823912573f2698306f7dfb6ee1c"`);
    await queryRunner.query(`DROP INDEX "public"."device_certificates_public_key_fingerprint_idx"`);
    await queryRunner.query(`DROP INDEX "public"."device_certificates_aki_idx"`);
    await queryRunner.query(`DROP TABLE "device_certificates"`);
    await queryRunner.query(`DROP INDEX "public"."ca_certificates_ski_idx"`);
    await queryRunner.query(`DROP INDEX "public"."ca_certificates_aki_idx"`);
    await queryRunner.query(`DROP INDEX "public"."ca_certificates_jitp_product_id_idx"`);
    await queryRunner.query(`DROP TABLE "ca_certificates"`);
  }
}
