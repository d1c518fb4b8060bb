import type { MigrationInterface, QueryRunner } from 'typeorm';

export class DeviceCertificateAuthority1795765616794 implements MigrationInterface {
  name = 'DeviceCertificateAuthority1795765616794';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "device_certificates" ADD "ca_certificate_id" bigint`);
    await queryRunner.query(
      `CREATE INDEX "device_certificates_ca_certificate_id_idx" ON "device_certificates"  ("ca_certificate_id") `,
    );
    await queryRunner.query(
      `ALTER TABLE "device_certificates" ADD CONSTRAINT "FK_6eda79aeadbe613bf4cb95f4b58" FOREIGN KEY ("ca_certificate_id") REFERENCES "ca_certificates"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "device_certificates" DROP CONSTRAINT "FK_6eda79aeadbe613bf4cb95f4b58"`,
    );
    await queryRunner.query(`DROP INDEX "public"."device_certificates_ca_certificate_id_idx"`);
    await queryRunner.query(`ALTER TABLE "device_certificates" DROP COLUMN "ca_certificate_id"`);
  }
}
