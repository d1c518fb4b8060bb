import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { DeploymentGroup } from '../deployments/deployment-group.entity';
import { Archive } from './archive.entity';

/**
 * The archive attached to a deployment group (at most one per group), in a table of its own so that the
 * deployment group record keeps its fields. Deleting the group detaches it; an attached archive cannot be deleted
 * (the foreign key refuses: 409).
 */
@Entity('deployment_group_archives')
@Index('deployment_group_archives_archive_id_idx', ['archiveId'])
export class DeploymentGroupArchive {
  @PrimaryColumn({ name: 'deployment_group_id', type: 'bigint' })
  deploymentGroupId: string;

  @ManyToOne(() => DeploymentGroup, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'deployment_group_id' })
  deploymentGroup?: DeploymentGroup;

  @Column({ name: 'archive_id', type: 'bigint' })
  archiveId: string;

  @ManyToOne(() => Archive, { onDelete: 'NO ACTION' })
  @JoinColumn({ name: 'archive_id' })
  archive?: Archive;

  @Column({ name: 'attached_at', type: 'timestamptz', default: () => 'now()' })
  attachedAt: Date;
}
