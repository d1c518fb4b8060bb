import { Column, Entity, Index, JoinColumn, ManyToOne, PrimaryColumn } from 'typeorm';
import { InsertedAtColumn, UpdatedAtColumn } from '../database/columns';
import { User } from '../users/user.entity';
import { Org } from './org.entity';
import { ROLES, type Role } from '../common/auth/roles';

@Entity('org_memberships')
@Index('org_memberships_user_id_idx', ['userId'])
export class Membership {
  @PrimaryColumn({ name: 'org_id', type: 'bigint' })
  orgId: string;

  @PrimaryColumn({ name: 'user_id', type: 'bigint' })
  userId: string;

  @Column({ type: 'enum', enum: ROLES, enumName: 'org_role' })
  role: Role;

  @ManyToOne(() => Org, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'org_id' })
  org?: Org;

  @ManyToOne(() => User, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'user_id' })
  user?: User;

  @InsertedAtColumn()
  insertedAt: Date;

  @UpdatedAtColumn()
  updatedAt: Date;
}
