import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Deployment group membership moves out of `devices` into a narrow table of its own: a group change over a
 * million devices rewrote a million wide rows and their twelve index entries each (28 s); here it writes two
 * small index entries per member. No foreign keys (each one checks and locks its parent row per member);
 * statement-level triggers delete the members of deleted devices and groups instead. The device-side trigger
 * first takes the shared side of the product's membership lock, which recomputations hold exclusively, so that a
 * recomputation cannot add a member for a device deleted meanwhile. The orchestrator's candidates are now found
 * by product: its connected devices in connection order; a group's devices in the penalty box by product too.
 */
export class DeploymentGroupMembers1795643393176 implements MigrationInterface {
  name = 'DeploymentGroupMembers1795643393176';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "deployment_group_members" ("device_id" bigint NOT NULL, "deployment_group_id" bigint NOT NULL, CONSTRAINT "PK_4cc3742b378b3073c7f90165a9f" PRIMARY KEY ("device_id"))`,
    );
    await queryRunner.query(
      `INSERT INTO "deployment_group_members" ("device_id", "deployment_group_id")
       SELECT id, deployment_group_id FROM devices WHERE deployment_group_id IS NOT NULL`,
    );
    await queryRunner.query(
      `CREATE INDEX "deployment_group_members_group_id_idx" ON "deployment_group_members"  ("deployment_group_id", "device_id") `,
    );
    await queryRunner.query(`ALTER TABLE "devices" DROP CONSTRAINT "FK_3e6467c6d951dc0ef3325e37f1e"`);
    await queryRunner.query(`DROP INDEX "public"."devices_deployment_group_id_idx"`);
    await queryRunner.query(`DROP INDEX "public"."devices_deployment_group_id_connected_at_idx"`);
    await queryRunner.query(`ALTER TABLE "devices" DROP COLUMN "deployment_group_id"`);
    await queryRunner.query(
      `CREATE INDEX "devices_product_id_connected_at_idx" ON "devices" ("product_id", "connected_at", "id") WHERE connected_at IS NOT NULL`,
    );
    await queryRunner.query(
      `CREATE INDEX "devices_product_id_updates_blocked_until_idx" ON "devices" ("product_id", "updates_blocked_until") WHERE updates_blocked_until IS NOT NULL`,
    );
    await queryRunner.query(`
      CREATE FUNCTION deployment_group_members_after_device_delete() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM pg_advisory_xact_lock_shared(${MEMBERSHIP_LOCK_CLASS}, hashtext(p.product_id::text))
           FROM (SELECT DISTINCT product_id FROM old_devices ORDER BY 1) p;
        DELETE FROM deployment_group_members m USING old_devices o WHERE m.device_id = o.id;
        RETURN NULL;
      END $$`);
    await queryRunner.query(`
      CREATE FUNCTION deployment_group_members_after_group_delete() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        DELETE FROM deployment_group_members m USING old_groups o WHERE m.deployment_group_id = o.id;
        RETURN NULL;
      END $$`);
    await queryRunner.query(`CREATE TRIGGER deployment_group_members_device_delete AFTER DELETE ON devices
      REFERENCING OLD TABLE AS old_devices FOR EACH STATEMENT
      EXECUTE FUNCTION deployment_group_members_after_device_delete()`);
    await queryRunner.query(`CREATE TRIGGER deployment_group_members_group_delete AFTER DELETE ON deployment_groups
      REFERENCING OLD TABLE AS old_groups FOR EACH STATEMENT
      EXECUTE FUNCTION deployment_group_members_after_group_delete()`);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER deployment_group_members_group_delete ON deployment_groups`);
    await queryRunner.query(`DROP TRIGGER deployment_group_members_device_delete ON devices`);
    await queryRunner.query(`DROP FUNCTION deployment_group_members_after_group_delete()`);
    await queryRunner.query(`DROP FUNCTION deployment_group_members_after_device_delete()`);
    await queryRunner.query(`DROP INDEX "public"."devices_product_id_updates_blocked_until_idx"`);
    await queryRunner.query(`DROP INDEX "public"."devices_product_id_connected_at_idx"`);
    await queryRunner.query(`ALTER TABLE "devices" ADD "deployment_group_id" bigint`);
    await queryRunner.query(
      `UPDATE devices d SET deployment_group_id = m.deployment_group_id
         FROM deployment_group_members m JOIN deployment_groups g ON g.id = m.deployment_group_id
        WHERE d.id = m.device_id`,
    );
    await queryRunner.query(`DROP INDEX "public"."deployment_group_members_group_id_idx"`);
    await queryRunner.query(`DROP TABLE "deployment_group_members"`);
    await queryRunner.query(
      `CREATE INDEX "devices_deployment_group_id_connected_at_idx" ON "devices" ("deployment_group_id", "connected_at", "id") WHERE connected_at IS NOT NULL`,
    );
    await queryRunner.query(
      `CREATE INDEX "devices_deployment_group_id_idx" ON "devices" USING btree ("deployment_group_id") `,
    );
    await queryRunner.query(
      `ALTER TABLE "devices" ADD CONSTRAINT "FK_3e6467c6d951dc0ef3325e37f1e" FOREIGN KEY ("deployment_group_id") REFERENCES "deployment_groups"("id") ON DELETE SET NULL ON UPDATE NO ACTION`,
    );
  }
}

/** The first key of the product's membership advisory lock (`MEMBERSHIP_LOCK_CLASS` in the deployments code). */
const MEMBERSHIP_LOCK_CLASS = 0x15d6;
