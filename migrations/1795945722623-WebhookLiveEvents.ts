import type { MigrationInterface, QueryRunner } from 'typeorm';

export class WebhookLiveEvents1795945722623 implements MigrationInterface {
  name = 'WebhookLiveEvents1795945722623';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "webhook_device_connections" ("device_id" bigint NOT NULL, "status" character varying(16) NOT NULL, "changed_at" TIMESTAMP WITH TIME ZONE NOT NULL, "pending" boolean NOT NULL DEFAULT true, "sent_status" character varying(16), CONSTRAINT "PK_ae34e0ec5ad0fa0ef3b1593fe93" PRIMARY KEY ("device_id"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "webhook_device_connections_disconnected_due_idx" ON "webhook_device_connections"  ("changed_at") WHERE pending AND status = 'disconnected'`,
    );
    await queryRunner.query(
      `CREATE INDEX "webhook_device_connections_connected_due_idx" ON "webhook_device_connections"  ("changed_at") WHERE pending AND status = 'connected'`,
    );
    await queryRunner.query(
      `CREATE TABLE "webhook_settings" ("id" smallint NOT NULL, "retry_window_ms" bigint NOT NULL, CONSTRAINT "PK_4a7b8b4920b26a2714e933dcc20" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(`ALTER TABLE "deployment_releases" ADD "finished_at" TIMESTAMP WITH TIME ZONE`);
    await queryRunner.query(
      `ALTER TABLE "pending_updates" ADD "progress_milestone" smallint NOT NULL DEFAULT '0'`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_device_connections" ADD CONSTRAINT "FK_ae34e0ec5ad0fa0ef3b1593fe93" FOREIGN KEY ("device_id") REFERENCES "devices"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );
    // The webhook events of changes made by many statements on the device path (presence, update delivery and
    // progress, completion): written by statement-level triggers with transition tables, in the statement's
    // transaction, set-based (one INSERT ... SELECT per statement), and only when an enabled webhook wants them.
    // `webhook_outbox_write` is WebhookOutboxRepository.emitMany in SQL; the retry window comes from
    // webhook_settings (each instance writes its FLEETHUB_WEBHOOK_RETRY_HOURS there at start).
    await queryRunner.query(`
      CREATE FUNCTION webhook_outbox_write(events jsonb) RETURNS void LANGUAGE plpgsql AS $$
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

    // device.connected / device.disconnected: a change of a device between connected and not is recorded for
    // WebhookConnectionEvents to judge (debounced), for organizations with a webhook that wants them.
    await queryRunner.query(`
      CREATE FUNCTION devices_webhook_connections_after_update() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NOT EXISTS (SELECT 1 FROM webhooks WHERE enabled
                          AND event_types && ARRAY['*', 'device.*', 'device.connected', 'device.disconnected']) THEN
          RETURN NULL;
        END IF;
        INSERT INTO webhook_device_connections (device_id, status, changed_at)
        SELECT n.id, CASE WHEN n.connection_status = 'connected' THEN 'connected' ELSE 'disconnected' END, now()
          FROM new_devices n JOIN old_devices o ON o.id = n.id
         WHERE (n.connection_status = 'connected') <> (o.connection_status = 'connected')
           AND EXISTS (SELECT 1 FROM webhooks w WHERE w.org_id = n.org_id AND w.enabled
                          AND w.event_types && ARRAY['*', 'device.*', 'device.connected', 'device.disconnected'])
         ORDER BY n.id
        ON CONFLICT (device_id) DO UPDATE
          SET status = EXCLUDED.status, changed_at = EXCLUDED.changed_at, pending = true;
        RETURN NULL;
      END $$`);
    await queryRunner.query(`CREATE TRIGGER devices_webhook_connections AFTER UPDATE ON devices
      REFERENCING OLD TABLE AS old_devices NEW TABLE AS new_devices
      FOR EACH STATEMENT EXECUTE FUNCTION devices_webhook_connections_after_update()`);

    // update.progress once per milestone and delivery: the highest milestone reached is kept on the row (back
    // to 0 when the update is sent: delivered_at goes from null to a time).
    await queryRunner.query(`
      CREATE FUNCTION pending_updates_progress_milestone() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF OLD.delivered_at IS NULL AND NEW.delivered_at IS NOT NULL THEN
          NEW.progress_milestone := 0;
        ELSIF NEW.delivered_at IS NOT NULL AND NEW.progress IS NOT NULL THEN
          NEW.progress_milestone := greatest(OLD.progress_milestone, least(75, (NEW.progress / 25) * 25));
        END IF;
        RETURN NEW;
      END $$`);
    await queryRunner.query(`CREATE TRIGGER pending_updates_progress_milestone
      BEFORE UPDATE OF progress, delivered_at ON pending_updates
      FOR EACH ROW EXECUTE FUNCTION pending_updates_progress_milestone()`);

    // update.started (the update was sent: delivered_at from null to a time) and update.progress (a milestone
    // passed), with what a receiver needs: the device, the firmware, the group and release (null: manual).
    await queryRunner.query(`
      CREATE FUNCTION pending_updates_webhooks_after_update() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE events jsonb;
      BEGIN
        IF NOT EXISTS (SELECT 1 FROM webhooks WHERE enabled
                          AND event_types && ARRAY['*', 'update.*', 'update.started', 'update.progress']) THEN
          RETURN NULL;
        END IF;
        SELECT jsonb_agg(jsonb_build_object(
                 'org_id', d.org_id,
                 'type', CASE WHEN m.percent = 0 THEN 'update.started' ELSE 'update.progress' END,
                 'product', p.name,
                 'subject', 'device:' || d.identifier,
                 'data', jsonb_build_object(
                   'identifier', d.identifier, 'product', p.name, 'firmware_uuid', f.uuid::text,
                   'firmware_version', f.version, 'deployment_group', g.name, 'release', r.number,
                   'via', CASE WHEN n.deployment_group_id IS NULL THEN 'manual' ELSE 'deployment_group' END,
                   'actor', jsonb_build_object('type', 'system'))
                   || CASE WHEN m.percent > 0 THEN jsonb_build_object('percent', m.percent) ELSE '{}'::jsonb END)
                 ORDER BY n.device_id, m.percent)
          INTO events
          FROM new_updates n
          JOIN old_updates o ON o.device_id = n.device_id
          CROSS JOIN LATERAL (
            SELECT 0 AS percent WHERE o.delivered_at IS NULL AND n.delivered_at IS NOT NULL
            UNION ALL
            SELECT s FROM unnest(ARRAY[25, 50, 75]) AS s
             WHERE s > o.progress_milestone AND s <= n.progress_milestone
          ) m
          JOIN devices d ON d.id = n.device_id
          JOIN products p ON p.id = d.product_id
          JOIN firmwares f ON f.id = n.firmware_id
          LEFT JOIN deployment_groups g ON g.id = n.deployment_group_id
          LEFT JOIN deployment_releases r ON r.id = n.deployment_release_id;
        IF events IS NOT NULL THEN PERFORM webhook_outbox_write(events); END IF;
        RETURN NULL;
      END $$`);
    await queryRunner.query(`CREATE TRIGGER pending_updates_webhooks_update AFTER UPDATE ON pending_updates
      REFERENCING OLD TABLE AS old_updates NEW TABLE AS new_updates
      FOR EACH STATEMENT EXECUTE FUNCTION pending_updates_webhooks_after_update()`);

    // update.completed: a sent update leaves pending_updates while its device runs its firmware (the device came
    // back with it). Failures, expiries, withdrawals and moves delete rows too: their device runs another one.
    await queryRunner.query(`
      CREATE FUNCTION pending_updates_webhooks_after_delete() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE events jsonb;
      BEGIN
        IF NOT EXISTS (SELECT 1 FROM webhooks WHERE enabled
                          AND event_types && ARRAY['*', 'update.*', 'update.completed']) THEN
          RETURN NULL;
        END IF;
        SELECT jsonb_agg(jsonb_build_object(
                 'org_id', d.org_id,
                 'type', 'update.completed',
                 'product', p.name,
                 'subject', 'device:' || d.identifier,
                 'data', jsonb_build_object(
                   'identifier', d.identifier, 'product', p.name, 'firmware_uuid', f.uuid::text,
                   'firmware_version', f.version, 'deployment_group', g.name, 'release', r.number,
                   'via', CASE WHEN o.deployment_group_id IS NULL THEN 'manual' ELSE 'deployment_group' END,
                   'actor', jsonb_build_object('type', 'system')))
                 ORDER BY o.device_id)
          INTO events
          FROM old_updates o
          JOIN devices d ON d.id = o.device_id
          JOIN products p ON p.id = d.product_id
          JOIN firmwares f ON f.id = o.firmware_id
          LEFT JOIN deployment_groups g ON g.id = o.deployment_group_id
          LEFT JOIN deployment_releases r ON r.id = o.deployment_release_id
         WHERE o.delivered_at IS NOT NULL AND d.firmware_metadata->>'uuid' = f.uuid::text;
        IF events IS NOT NULL THEN PERFORM webhook_outbox_write(events); END IF;
        RETURN NULL;
      END $$`);
    await queryRunner.query(`CREATE TRIGGER pending_updates_webhooks_delete AFTER DELETE ON pending_updates
      REFERENCING OLD TABLE AS old_updates
      FOR EACH STATEMENT EXECUTE FUNCTION pending_updates_webhooks_after_delete()`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER pending_updates_webhooks_delete ON pending_updates`);
    await queryRunner.query(`DROP TRIGGER pending_updates_webhooks_update ON pending_updates`);
    await queryRunner.query(`DROP TRIGGER pending_updates_progress_milestone ON pending_updates`);
    await queryRunner.query(`DROP TRIGGER devices_webhook_connections ON devices`);
    await queryRunner.query(`DROP FUNCTION pending_updates_webhooks_after_delete()`);
    await queryRunner.query(`DROP FUNCTION pending_updates_webhooks_after_update()`);
    await queryRunner.query(`DROP FUNCTION pending_updates_progress_milestone()`);
    await queryRunner.query(`DROP FUNCTION devices_webhook_connections_after_update()`);
    await queryRunner.query(`DROP FUNCTION webhook_outbox_write(jsonb)`);
    await queryRunner.query(
      `ALTER TABLE "webhook_device_connections" DROP CONSTRAINT "FK_ae34e0ec5ad0fa0ef3b1593fe93"`,
    );
    await queryRunner.query(`ALTER TABLE "pending_updates" DROP COLUMN "progress_milestone"`);
    await queryRunner.query(`ALTER TABLE "deployment_releases" DROP COLUMN "finished_at"`);
    await queryRunner.query(`DROP TABLE "webhook_settings"`);
    await queryRunner.query(`DROP INDEX "public"."webhook_device_connections_connected_due_idx"`);
    await queryRunner.query(`DROP INDEX "public"."webhook_device_connections_disconnected_due_idx"`);
    await queryRunner.query(`DROP TABLE "webhook_device_connections"`);
  }
}
