import type { MigrationInterface, QueryRunner } from 'typeorm';

export class EventStreams1795923198058 implements MigrationInterface {
  name = 'EventStreams1795923198058';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "event_streams" ("id" bigint GENERATED ALWAYS AS IDENTITY NOT NULL, "user_id" bigint NOT NULL, "instance_id" uuid NOT NULL, "product_id" bigint NOT NULL, "opened_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_58a9c777323c51e32bfad87b30d" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "event_streams_instance_id_idx" ON "event_streams"  ("instance_id") `,
    );
    await queryRunner.query(`CREATE INDEX "event_streams_user_id_idx" ON "event_streams"  ("user_id") `);
    await queryRunner.query(
      `ALTER TABLE "event_streams" ADD CONSTRAINT "FK_127ac04eb8f8358d21eb573a0a4" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "event_streams" ADD CONSTRAINT "FK_1f045f267670d4743e4e9b009c9" FOREIGN KEY ("instance_id") REFERENCES "gateway_instances"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "event_streams" ADD CONSTRAINT "FK_b043dc9386a973cb8074367f610" FOREIGN KEY ("product_id") REFERENCES "products"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "event_streams" DROP CONSTRAINT "FK_b043dc9386a973cb8074367f610"`);
    await queryRunner.query(`ALTER TABLE "event_streams" DROP CONSTRAINT "FK_1f045f267670d4743e4e9b009c9"`);
    await queryRunner.query(`ALTER TABLE "event_streams" DROP CONSTRAINT "FK_127ac04eb8f8358d21eb573a0a4"`);
    await queryRunner.query(`DROP INDEX "public"."event_streams_user_id_idx"`);
    await queryRunner.query(`DROP INDEX "public"."event_streams_instance_id_idx"`);
    await queryRunner.query(`DROP TABLE "event_streams"`);
  }
}
