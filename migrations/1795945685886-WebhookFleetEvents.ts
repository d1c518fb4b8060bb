import type { MigrationInterface, QueryRunner } from 'typeorm';

export class WebhookFleetEvents1795945685886 implements MigrationInterface {
  name = 'WebhookFleetEvents1795945685886';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "device_certificates" ADD "expiry_notified_at" TIMESTAMP WITH TIME ZONE`,
    );
    await queryRunner.query(
      `ALTER TABLE "ca_certificates" ADD "expiry_notified_at" TIMESTAMP WITH TIME ZONE`,
    );
    await queryRunner.query(`ALTER TABLE "webhooks" ADD "rate_limit_per_second" integer`);
    await queryRunner.query(
      `CREATE INDEX "device_certificates_expiry_pending_idx" ON "device_certificates" ("not_after") WHERE expiry_notified_at IS NULL`,
    );
    await queryRunner.query(
      `CREATE INDEX "ca_certificates_expiry_pending_idx" ON "ca_certificates" ("not_after") WHERE expiry_notified_at IS NULL`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."ca_certificates_expiry_pending_idx"`);
    await queryRunner.query(`DROP INDEX "public"."device_certificates_expiry_pending_idx"`);
    await queryRunner.query(`ALTER TABLE "webhooks" DROP COLUMN "rate_limit_per_second"`);
    await queryRunner.query(`ALTER TABLE "ca_certificates" DROP COLUMN "expiry_notified_at"`);
    await queryRunner.query(`ALTER TABLE "device_certificates" DROP COLUMN "expiry_notified_at"`);
  }
}
