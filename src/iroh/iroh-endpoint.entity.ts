import { Column, Entity, Index, JoinColumn, ManyToOne } from 'typeorm';
import { BigIdColumn, InsertedAtColumn, UpdatedAtColumn } from '../database/columns';
import { Device } from '../devices/device.entity';
import { Org } from '../orgs/org.entity';
import { User } from '../users/user.entity';

export const IROH_SOURCES = ['operator', 'device_reported'] as const;
export type IrohSource = (typeof IROH_SOURCES)[number];

@Entity('iroh_endpoints')
@Index('iroh_endpoints_org_id_inserted_at_idx', ['orgId', 'insertedAt', 'identifier'])
@Index('iroh_endpoints_device_id_idx', ['deviceId'])
@Index('iroh_endpoints_user_id_idx', ['userId'])
@Index('iroh_endpoints_device_instance_key', ['deviceId', 'service', 'instance'], {
  unique: true,
  where: 'device_id IS NOT NULL',
})
export class IrohEndpoint {
  @BigIdColumn()
  id: string;

  @Column({ name: 'org_id', type: 'bigint' })
  orgId: string;

  @ManyToOne(() => Org, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'org_id' })
  org?: Org;

  /** 64 lower-case hex characters; unique across the server. "C" collation serves prefix LIKE. */
  @Column({ type: 'varchar', length: 64, collation: 'C', unique: true })
  identifier: string;

  @Column({ type: 'varchar', length: 32, default: 'iroh' })
  service: string;

  @Column({ type: 'varchar', length: 64, default: 'default' })
  instance: string;

  @Column({ type: 'jsonb', default: () => "'{}'" })
  details: Record<string, unknown>;

  @Column({ type: 'enum', enum: IROH_SOURCES, enumName: 'iroh_endpoint_source' })
  source: IrohSource;

  @Column({ name: 'device_id', type: 'bigint', nullable: true })
  deviceId: string | null;

  @ManyToOne(() => Device, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'device_id' })
  device?: Device | null;

  @Column({ name: 'user_id', type: 'bigint', nullable: true })
  userId: string | null;

  @ManyToOne(() => User, { onDelete: 'SET NULL' })
  @JoinColumn({ name: 'user_id' })
  user?: User | null;

  @Column({ name: 'last_reported_at', type: 'timestamptz', nullable: true })
  lastReportedAt: Date | null;

  @InsertedAtColumn()
  insertedAt: Date;

  @UpdatedAtColumn()
  updatedAt: Date;
}
