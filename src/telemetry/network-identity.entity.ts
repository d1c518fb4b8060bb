import { Column, Entity, Index, JoinColumn, ManyToOne, Unique } from 'typeorm';
import { BigIdColumn, InsertedAtColumn, UpdatedAtColumn } from '../database/columns';
import { Device } from '../devices/device.entity';
import { Org } from '../orgs/org.entity';

/** Services recorded here; iroh identities live in `iroh_endpoints` (operators register those too). */
export const OTHER_IDENTITY_SERVICES = ['netbird', 'tailscale', 'wireguard'] as const;
export type OtherIdentityService = (typeof OTHER_IDENTITY_SERVICES)[number];

/**
 * A key a device reported holding on a network fleethub does not run (NervesHub's `network_identities`), for the
 * services other than iroh. Only devices write these (there is no operator API for them), so every row has a
 * device; `(service, identifier)` is unique across the server, one row per device, service and instance.
 */
@Entity('network_identities')
@Unique('network_identities_service_identifier_key', ['service', 'identifier'])
@Unique('network_identities_device_service_instance_key', ['deviceId', 'service', 'instance'])
@Index('network_identities_org_id_idx', ['orgId'])
export class NetworkIdentity {
  @BigIdColumn()
  id: string;

  @Column({ name: 'org_id', type: 'bigint' })
  orgId: string;

  @ManyToOne(() => Org, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'org_id' })
  org?: Org;

  @Column({ name: 'device_id', type: 'bigint' })
  deviceId: string;

  @ManyToOne(() => Device, { onDelete: 'CASCADE' })
  @JoinColumn({ name: 'device_id' })
  device?: Device;

  @Column({ type: 'varchar', length: 32 })
  service: OtherIdentityService;

  @Column({ type: 'varchar', length: 255 })
  instance: string;

  @Column({ type: 'varchar', length: 255 })
  identifier: string;

  @Column({ type: 'jsonb', default: () => "'{}'" })
  details: Record<string, unknown>;

  @Column({ name: 'last_reported_at', type: 'timestamptz' })
  lastReportedAt: Date;

  @InsertedAtColumn()
  insertedAt: Date;

  @UpdatedAtColumn()
  updatedAt: Date;
}
