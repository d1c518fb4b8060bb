import { Column, CreateDateColumn, Entity, Index, JoinColumn, ManyToOne } from 'typeorm';
import { BigIdColumn } from '../database/columns';
import { Org } from '../orgs/org.entity';
import { User } from '../users/user.entity';

/** One change: who did what to which target, when, under which request id. Written in the change's transaction. */
@Entity('audit_logs')
@Index('audit_logs_org_id_inserted_at_idx', ['orgId', 'insertedAt', 'id'])
@Index('audit_logs_org_id_actor_idx', ['orgId', 'actorUserId', 'insertedAt'])
@Index('audit_logs_org_id_target_idx', ['orgId', 'targetType', 'targetId', 'insertedAt'])
export class AuditLog {
  @BigIdColumn()
  id: string;

  @Column({ name: 'org_id', type: 'bigint' })
  orgId: string;

  @ManyToOne(() => Org, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'org_id' })
  org?: Org;

  @Column({ name: 'actor_user_id', type: 'bigint', nullable: true })
  actorUserId: string | null;

  @ManyToOne(() => User, { onDelete: 'SET NULL' })
  @JoinColumn({ name: 'actor_user_id' })
  actorUser?: User | null;

  /** `user`, `device` or `system`. */
  @Column({ name: 'actor_type', type: 'varchar', length: 16 })
  actorType: string;

  /** Readable name of the actor at the time (email, device identifier), kept when the actor is deleted. */
  @Column({ name: 'actor_name', type: 'varchar', length: 320, nullable: true })
  actorName: string | null;

  /** e.g. `product.create`, `device.upgrade`. */
  @Column({ type: 'varchar', length: 64 })
  action: string;

  @Column({ name: 'target_type', type: 'varchar', length: 32 })
  targetType: string;

  @Column({ name: 'target_id', type: 'varchar', length: 255 })
  targetId: string;

  @Column({ type: 'jsonb', default: () => "'{}'" })
  details: Record<string, unknown>;

  @Column({ name: 'request_id', type: 'varchar', length: 128, nullable: true })
  requestId: string | null;

  @CreateDateColumn({ name: 'inserted_at', type: 'timestamptz', default: () => 'now()' })
  insertedAt: Date;
}
