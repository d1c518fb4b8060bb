import type { MigrationInterface, QueryRunner } from 'typeorm';

export class IrohEndpointCounts1795331669444 implements MigrationInterface {
  name = 'IrohEndpointCounts1795331669444';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "org_iroh_endpoint_counts" ("org_id" bigint NOT NULL, "service" character varying(32) NOT NULL, "owner_type" character varying(8) NOT NULL, "shard" smallint NOT NULL, "total" bigint NOT NULL DEFAULT '0', CONSTRAINT "PK_45da2dbafd6181147b70a7bd7d3" PRIMARY KEY ("org_id", "owner_type", "service", "shard"))`,
    );
    await queryRunner.query(
      `ALTER TABLE "org_iroh_endpoint_counts" ADD CONSTRAINT "FK_e951049b4375ac8c9830bce984b" FOREIGN KEY ("org_id") REFERENCES "orgs"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
    );

    // Kept exact by statement-level triggers with transition tables (one aggregate per statement). An update
    // counts as -1 for its old key and +1 for its new one, so only changes of organization, service or holder
    // touch a counter. Every change is added to the shard of the writing backend (pid modulo 16): concurrent
    // transactions of one organization mostly write different rows instead of queueing on one until commit.
    // Rows are written in key order to avoid deadlocks.
    await queryRunner.query(`
      CREATE FUNCTION iroh_owner_type(device_id bigint, user_id bigint) RETURNS varchar LANGUAGE sql IMMUTABLE AS $$
        SELECT CASE WHEN device_id IS NOT NULL THEN 'device' WHEN user_id IS NOT NULL THEN 'user' ELSE 'none' END
      $$`);
    await queryRunner.query(`
      CREATE FUNCTION iroh_counts_add(changes jsonb) RETURNS void LANGUAGE sql AS $$
        INSERT INTO org_iroh_endpoint_counts (org_id, service, owner_type, shard, total)
        SELECT (c->>'org_id')::bigint, c->>'service', c->>'owner_type', (pg_backend_pid() % 16)::smallint,
               sum((c->>'delta')::bigint)
          FROM jsonb_array_elements(changes) c
         GROUP BY 1, 2, 3 HAVING sum((c->>'delta')::bigint) <> 0 ORDER BY 1, 2, 3
        ON CONFLICT (org_id, owner_type, service, shard)
        DO UPDATE SET total = org_iroh_endpoint_counts.total + EXCLUDED.total;
      $$`);
    // Each trigger groups its rows first, so a bulk statement passes one change per key.
    await queryRunner.query(`
      CREATE FUNCTION iroh_counts_after_insert() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM iroh_counts_add((SELECT jsonb_agg(jsonb_build_object(
                  'org_id', org_id, 'service', service, 'owner_type', owner_type, 'delta', n))
          FROM (SELECT org_id, service, iroh_owner_type(device_id, user_id) AS owner_type, count(*) AS n
                  FROM new_rows GROUP BY 1, 2, 3) grouped));
        RETURN NULL;
      END $$`);
    await queryRunner.query(`
      CREATE FUNCTION iroh_counts_after_delete() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM iroh_counts_add((SELECT jsonb_agg(jsonb_build_object(
                  'org_id', org_id, 'service', service, 'owner_type', owner_type, 'delta', -n))
          FROM (SELECT org_id, service, iroh_owner_type(device_id, user_id) AS owner_type, count(*) AS n
                  FROM old_rows GROUP BY 1, 2, 3) grouped));
        RETURN NULL;
      END $$`);
    await queryRunner.query(`
      CREATE FUNCTION iroh_counts_after_update() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM iroh_counts_add((SELECT jsonb_agg(jsonb_build_object(
                  'org_id', org_id, 'service', service, 'owner_type', owner_type, 'delta', n))
          FROM (SELECT org_id, service, owner_type, sum(delta) AS n FROM (
                  SELECT org_id, service, iroh_owner_type(device_id, user_id) AS owner_type, -1 AS delta FROM old_rows
                  UNION ALL
                  SELECT org_id, service, iroh_owner_type(device_id, user_id), 1 FROM new_rows) changes
                 GROUP BY 1, 2, 3 HAVING sum(delta) <> 0) grouped));
        RETURN NULL;
      END $$`);
    await queryRunner.query(`CREATE TRIGGER iroh_counts_insert AFTER INSERT ON iroh_endpoints
      REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION iroh_counts_after_insert()`);
    await queryRunner.query(`CREATE TRIGGER iroh_counts_delete AFTER DELETE ON iroh_endpoints
      REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION iroh_counts_after_delete()`);
    await queryRunner.query(`CREATE TRIGGER iroh_counts_update AFTER UPDATE ON iroh_endpoints
      REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
      FOR EACH STATEMENT EXECUTE FUNCTION iroh_counts_after_update()`);
    await queryRunner.query(`INSERT INTO org_iroh_endpoint_counts (org_id, service, owner_type, shard, total)
      SELECT org_id, service, iroh_owner_type(device_id, user_id), 0, count(*) FROM iroh_endpoints GROUP BY 1, 2, 3`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER iroh_counts_update ON iroh_endpoints`);
    await queryRunner.query(`DROP TRIGGER iroh_counts_delete ON iroh_endpoints`);
    await queryRunner.query(`DROP TRIGGER iroh_counts_insert ON iroh_endpoints`);
    await queryRunner.query(`DROP FUNCTION iroh_counts_after_update()`);
    await queryRunner.query(`DROP FUNCTION iroh_counts_after_delete()`);
    await queryRunner.query(`DROP FUNCTION iroh_counts_after_insert()`);
    await queryRunner.query(`DROP FUNCTION iroh_counts_add(jsonb)`);
    await queryRunner.query(`DROP FUNCTION iroh_owner_type(bigint, bigint)`);
    await queryRunner.query(
      `ALTER TABLE "org_iroh_endpoint_counts" DROP CONSTRAINT "FK_e951049b4375ac8c9830bce984b"`,
    );
    await queryRunner.query(`DROP TABLE "org_iroh_endpoint_counts"`);
  }
}
