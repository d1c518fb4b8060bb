import type { MigrationInterface, QueryRunner } from 'typeorm';

export class Webhooks1795937034619 implements MigrationInterface {
  name = 'Webhooks1795937034619';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "webhooks" ("id" bigint GENERATED ALWAYS AS IDENTITY NOT NULL, "org_id" bigint NOT NULL, "url" character varying(2048) NOT NULL, "event_types" text array NOT NULL, "product" character varying(255), "enabled" boolean NOT NULL DEFAULT true, "disabled_reason" text, "disabled_at" TIMESTAMP WITH TIME ZONE, "secret_encrypted" bytea NOT NULL, "previous_secret_encrypted" bytea, "previous_secret_expires_at" TIMESTAMP WITH TIME ZONE, "consecutive_failures" integer NOT NULL DEFAULT '0', "failing_since" TIMESTAMP WITH TIME ZONE, "inserted_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_9e8795cfc899ab7bdaa831e8527" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`CREATE INDEX "webhooks_org_id_idx" ON "webhooks"  ("org_id", "id") `);
    await queryRunner.query(
      `CREATE TABLE "webhook_events" ("id" bigint GENERATED ALWAYS AS IDENTITY NOT NULL, "event_id" character varying(40) NOT NULL, "org_id" bigint NOT NULL, "type" character varying(64) NOT NULL, "product" character varying(255), "subject" character varying(320) NOT NULL, "data" jsonb NOT NULL DEFAULT '{}', "occurred_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "UQ_eca7d9af1d5bb2184a201ed250d" UNIQUE ("event_id"), CONSTRAINT "PK_4cba37e6a0acb5e1fc49c34ebfd" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "webhook_events_org_id_idx" ON "webhook_events"  ("org_id", "occurred_at") `,
    );
    await queryRunner.query(
      `CREATE INDEX "webhook_events_occurred_at_idx" ON "webhook_events"  ("occurred_at") `,
    );
    await queryRunner.query(
      `CREATE TYPE "public"."webhook_delivery_state" AS ENUM('pending', 'delivered', 'failed')`,
    );
    await queryRunner.query(
      `CREATE TABLE "webhook_deliveries" ("id" bigint GENERATED ALWAYS AS IDENTITY NOT NULL, "event_seq" bigint NOT NULL, "webhook_id" bigint NOT NULL, "subject" character varying(320) NOT NULL, "state" "public"."webhook_delivery_state" NOT NULL DEFAULT 'pending', "attempts" integer NOT NULL DEFAULT '0', "next_attempt_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "give_up_at" TIMESTAMP WITH TIME ZONE NOT NULL, "lease_until" TIMESTAMP WITH TIME ZONE, "lease_token" uuid, "completed_at" TIMESTAMP WITH TIME ZONE, CONSTRAINT "PK_535dd409947fb6d8fc6dfc0112a" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "webhook_deliveries_event_seq_idx" ON "webhook_deliveries"  ("event_seq") `,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "webhook_deliveries_webhook_event_key" ON "webhook_deliveries"  ("webhook_id", "event_seq") `,
    );
    await queryRunner.query(
      `CREATE INDEX "webhook_deliveries_subject_idx" ON "webhook_deliveries"  ("webhook_id", "subject", "event_seq") WHERE state = 'pending'`,
    );
    await queryRunner.query(
      `CREATE INDEX "webhook_deliveries_due_idx" ON "webhook_deliveries"  ("next_attempt_at", "id") WHERE state = 'pending'`,
    );
    await queryRunner.query(
      `CREATE TABLE "webhook_delivery_attempts" ("id" bigint GENERATED ALWAYS AS IDENTITY NOT NULL, "delivery_id" bigint NOT NULL, "webhook_id" bigint NOT NULL, "attempt" integer NOT NULL, "response_status" integer, "succeeded" boolean NOT NULL, "error" character varying(500), "latency_ms" integer NOT NULL, "response_excerpt" text, "attempted_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_59ef9124585b56c18b98548a0c6" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "webhook_delivery_attempts_delivery_idx" ON "webhook_delivery_attempts"  ("delivery_id") `,
    );
    await queryRunner.query(
      `CREATE INDEX "webhook_delivery_attempts_webhook_idx" ON "webhook_delivery_attempts"  ("webhook_id", "attempted_at", "id") `,
    );
    await queryRunner.query(
      `ALTER TABLE "webhooks" ADD CONSTRAINT "FK_d15993f8952230f47d88d4d0653" FOREIGN KEY ("org_id") REFERENCES "orgs"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_events" ADD CONSTRAINT "FK_5460511ac77c815617f9e8dd05c" FOREIGN KEY ("org_id") REFERENCES "orgs"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "FK_84df3996ab8a80457b5efc0ebb6" FOREIGN KEY ("event_seq") REFERENCES "webhook_events"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "FK_a0286aeb96db651efd1ae2966f2" FOREIGN KEY ("webhook_id") REFERENCES "webhooks"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_delivery_attempts" ADD CONSTRAINT "FK_647916c401c0c275df5f00c148f" FOREIGN KEY ("delivery_id") REFERENCES "webhook_deliveries"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_delivery_attempts" ADD CONSTRAINT "FK_725c47333f472fdc303e23fc827" FOREIGN KEY ("webhook_id") REFERENCES "webhooks"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "webhook_delivery_attempts" DROP CONSTRAINT "FK_725c47333f472fdc303e23fc827"`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_delivery_attempts" DROP CONSTRAINT "FK_647916c401c0c275df5f00c148f"`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_deliveries" DROP CONSTRAINT "FK_a0286aeb96db651efd1ae2966f2"`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_deliveries" DROP CONSTRAINT "FK_84df3996ab8a80457b5efc0ebb6"`,
    );
    await queryRunner.query(`ALTER TABLE "webhook_events" DROP CONSTRAINT "FK_5460511ac77c815617f9e8dd05c"`);
    await queryRunner.query(`ALTER TABLE "webhooks" DROP CONSTRAINT "FK_d15993f8952230f47d88d4d0653"`);
    await queryRunner.query(`DROP INDEX "public"."webhook_delivery_attempts_webhook_idx"`);
    await queryRunner.query(`DROP INDEX "public"."webhook_delivery_attempts_delivery_idx"`);
    await queryRunner.query(`DROP TABLE "webhook_delivery_attempts"`);
    await queryRunner.query(`DROP INDEX "public"."webhook_deliveries_due_idx"`);
    await queryRunner.query(`DROP INDEX "public"."webhook_deliveries_subject_idx"`);
    await queryRunner.query(`DROP INDEX "public"."webhook_deliveries_webhook_event_key"`);
    await queryRunner.query(`DROP INDEX "public"."webhook_deliveries_event_seq_idx"`);
    await queryRunner.query(`DROP TABLE "webhook_deliveries"`);
    await queryRunner.query(`DROP TYPE "public"."webhook_delivery_state"`);
    await queryRunner.query(`DROP INDEX "public"."webhook_events_occurred_at_idx"`);
    await queryRunner.query(`DROP INDEX "public"."webhook_events_org_id_idx"`);
    await queryRunner.query(`DROP TABLE "webhook_events"`);
    await queryRunner.query(`DROP INDEX "public"."webhooks_org_id_idx"`);
    await queryRunner.query(`DROP TABLE "webhooks"`);
  }
}
