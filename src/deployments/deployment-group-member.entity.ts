import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * A device's deployment group: at most one row per device. A narrow table of its own rather than a column of
 * `devices`, because a group change moves up to every device of a product at once, and a row here costs two
 * small index entries where an update of the wide `devices` row costs a new version of it and an entry in each
 * of its dozen indexes. No foreign keys: each checks and locks its parent row per inserted row, which at a
 * million members costs more than the insert; statement-level triggers on `devices` and `deployment_groups`
 * delete the members of deleted rows instead, and every reader joins both parents (decisions.md).
 */
@Entity('deployment_group_members')
@Index('deployment_group_members_group_id_idx', ['deploymentGroupId', 'deviceId'])
export class DeploymentGroupMember {
  @PrimaryColumn({ name: 'device_id', type: 'bigint' })
  deviceId: string;

  @Column({ name: 'deployment_group_id', type: 'bigint' })
  deploymentGroupId: string;
}
