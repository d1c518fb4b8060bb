import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The outbox's write linear in the events of a statement; claims per webhook; HOT claims; the delivery log without
 * a foreign key to the webhook (its delivery has one).
 */
export class WebhookThroughput1795961190459 implements MigrationInterface {
  name = 'WebhookThroughput1795961190459';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "webhook_delivery_attempts" DROP CONSTRAINT "FK_725c47333f472fdc303e23fc827"`,
    );
    await queryRunner.query(`DROP INDEX "public"."webhook_deliveries_due_idx"`);
    await queryRunner.query(
      `CREATE INDEX "webhook_deliveries_webhook_due_idx" ON "webhook_deliveries"  ("webhook_id", "next_attempt_at", "id") WHERE state = 'pending'`,
    );
    // Room on each page for a claim's new row version (a HOT update: the claim changes no indexed column).
    await queryRunner.query(`ALTER TABLE "webhook_deliveries" SET (fillfactor = 70)`);
    // The deliveries come from a join of the events written with `webhooks` (a table with statistics), not of two
    // CTEs on the event id: the planner estimated one row for each and chose a nested loop, quadratic in the
    // statement's events (2,000 events to 11 webhooks: 44 million comparisons, 11 s; a rollout's tick of 1,000
    // devices could take seconds, and a late tick made the next larger).
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION webhook_outbox_write(events jsonb) RETURNS void LANGUAGE plpgsql AS $$
      DECLARE written integer;
      BEGIN
        WITH ev AS (
          SELECT 'evt_' || replace(gen_random_uuid()::text, '-', '') AS event_id,
                 (x.e->>'org_id')::bigint AS org_id, x.e->>'type' AS type, x.e->>'product' AS product,
                 left(x.e->>'subject', 320) AS subject, x.e->'data' AS data, x.n
            FROM jsonb_array_elements(events) WITH ORDINALITY AS x(e, n)
        ), e AS (
          INSERT INTO webhook_events (event_id, org_id, type, product, subject, data)
          SELECT ev.event_id, ev.org_id, ev.type, ev.product, ev.subject, ev.data FROM ev
           WHERE EXISTS (SELECT 1 FROM webhooks w
                          WHERE w.org_id = ev.org_id AND w.enabled
                            AND (w.product IS NULL OR w.product = ev.product)
                            AND w.event_types && ARRAY['*', split_part(ev.type, '.', 1) || '.*', ev.type]::text[])
           ORDER BY ev.n
          RETURNING id, org_id, type, product, subject
        ), d AS (
          INSERT INTO webhook_deliveries (event_seq, webhook_id, subject, give_up_at)
          SELECT e.id, w.id, e.subject,
                 now() + coalesce((SELECT s.retry_window_ms FROM webhook_settings s WHERE s.id = 1), 86400000)
                         * interval '1 millisecond'
            FROM e JOIN webhooks w ON w.org_id = e.org_id AND w.enabled
                                  AND (w.product IS NULL OR w.product = e.product)
                                  AND w.event_types && ARRAY['*', split_part(e.type, '.', 1) || '.*', e.type]::text[]
        )
        SELECT count(*) INTO written FROM e;
        IF written > 0 THEN PERFORM pg_notify('webhooks', ''); END IF;
      END $$`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE OR REPLACE FUNCTION webhook_outbox_write(events jsonb) RETURNS void LANGUAGE plpgsql AS $$
      DECLARE written integer;
      BEGIN
        WITH ev AS (
          SELECT 'evt_' || replace(gen_random_uuid()::text, '-', '') AS event_id,
                 (x.e->>'org_id')::bigint AS org_id, x.e->>'type' AS type, x.e->>'product' AS product,
                 left(x.e->>'subject', 320) AS subject, x.e->'data' AS data, x.n
            FROM jsonb_array_elements(events) WITH ORDINALITY AS x(e, n)
        ), targets AS (
          SELECT ev.event_id, w.id AS webhook_id
            FROM ev JOIN webhooks w ON w.org_id = ev.org_id AND w.enabled
                                   AND (w.product IS NULL OR w.product = ev.product)
                                   AND w.event_types && ARRAY['*', split_part(ev.type, '.', 1) || '.*', ev.type]::text[]
        ), e AS (
          INSERT INTO webhook_events (event_id, org_id, type, product, subject, data)
          SELECT ev.event_id, ev.org_id, ev.type, ev.product, ev.subject, ev.data FROM ev
           WHERE EXISTS (SELECT 1 FROM targets t WHERE t.event_id = ev.event_id)
           ORDER BY ev.n
          RETURNING id, event_id, subject
        ), d AS (
          INSERT INTO webhook_deliveries (event_seq, webhook_id, subject, give_up_at)
          SELECT e.id, t.webhook_id, e.subject,
                 now() + coalesce((SELECT s.retry_window_ms FROM webhook_settings s WHERE s.id = 1), 86400000)
                         * interval '1 millisecond'
            FROM e JOIN targets t ON t.event_id = e.event_id
        )
        SELECT count(*) INTO written FROM e;
        IF written > 0 THEN PERFORM pg_notify('webhooks', ''); END IF;
      END $$`);
    await queryRunner.query(`ALTER TABLE "webhook_deliveries" RESET (fillfactor)`);
    await queryRunner.query(`DROP INDEX "public"."webhook_deliveries_webhook_due_idx"`);
    await queryRunner.query(
      `CREATE INDEX "webhook_deliveries_due_idx" ON "webhook_deliveries"  ("next_attempt_at", "id") WHERE state = 'pending'`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_delivery_attempts" ADD CONSTRAINT "FK_725c47333f472fdc303e23fc827" FOREIGN KEY ("webhook_id") REFERENCES "webhooks"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
  }
}
