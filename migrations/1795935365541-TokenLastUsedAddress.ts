import type { MigrationInterface, QueryRunner } from 'typeorm';

export class TokenLastUsedAddress1795935365541 implements MigrationInterface {
  name = 'TokenLastUsedAddress1795935365541';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "access_tokens" ADD "last_used_address" character varying(64)`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "access_tokens" DROP COLUMN "last_used_address"`);
  }
}
